//! What apps manage through the protocol (issue 37): internet radio stations and user
//! accounts, in both encodings, the XML validated against the official schema.

use musiclib_core::testing::Backend;

use crate::both_backends;
use crate::harness::Fixture;

both_backends!(
    internet_radio_stations_round_trip,
    |backend: Backend| async move {
        let app = Fixture::new(backend).await;
        let admin = app.admin_auth();
        let empty = app.xml("getInternetRadioStations", "").await;
        assert!(empty.contains("<internetRadioStations"), "{empty}");

        app.xml_as(
        &admin,
        "createInternetRadioStation",
        "name=Radio+Caf%C3%A9&streamUrl=https://radio.example/live.ogg&homepageUrl=https://radio.example/",
    )
    .await;
        app.xml_as(
            &admin,
            "createInternetRadioStation",
            "name=Another&streamUrl=http://another.example:8000/stream",
        )
        .await;
        // Listed for everyone, by name; the XML is the schema's `InternetRadioStation`.
        let xml = app.xml("getInternetRadioStations", "").await;
        assert!(xml.contains(r#"name="Radio Café""#), "{xml}");
        let listed = app.json("getInternetRadioStations", "").await;
        let stations = listed["internetRadioStations"]["internetRadioStation"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(stations.len(), 2, "{listed}");
        assert_eq!(stations[0]["name"], "Another");
        assert!(stations[0].get("homePageUrl").is_none(), "{listed}");
        assert_eq!(stations[1]["streamUrl"], "https://radio.example/live.ogg");
        assert_eq!(stations[1]["homePageUrl"], "https://radio.example/");
        let id = stations[1]["id"].as_str().unwrap().to_string();

        // An update names every field: an absent home page is removed.
        app.xml_as(
            &admin,
            "updateInternetRadioStation",
            &format!("id={id}&name=Renamed&streamUrl=https://radio.example/hq.mp3"),
        )
        .await;
        let listed = app.json("getInternetRadioStations", "").await;
        let renamed = &listed["internetRadioStations"]["internetRadioStation"][1];
        assert_eq!(
            (renamed["name"].as_str(), renamed["streamUrl"].as_str()),
            (Some("Renamed"), Some("https://radio.example/hq.mp3"))
        );
        assert!(renamed.get("homePageUrl").is_none(), "{listed}");

        // The spec's errors: 10 a missing parameter, 50 not an admin, 70 an unknown id; a bad
        // URL names its field.
        let missing = app
            .json_as(&admin, "createInternetRadioStation", "name=x")
            .await;
        assert_eq!(missing["error"]["code"], 10, "{missing}");
        let not_admin = app
            .json_as(
                &app.auth(),
                "createInternetRadioStation",
                "name=x&streamUrl=https://x.example/",
            )
            .await;
        assert_eq!(not_admin["error"]["code"], 50, "{not_admin}");
        let unknown = app
            .json_as(
                &admin,
                "deleteInternetRadioStation",
                "id=0190a000-0000-7000-8000-000000000000",
            )
            .await;
        assert_eq!(unknown["error"]["code"], 70, "{unknown}");
        let bad = app
            .json_as(
                &admin,
                "createInternetRadioStation",
                "name=x&streamUrl=file:///etc/passwd",
            )
            .await;
        assert_eq!(bad["error"]["code"], 0, "{bad}");
        assert!(
            bad["error"]["message"]
                .as_str()
                .unwrap()
                .contains("stream_url"),
            "{bad}"
        );

        app.xml_as(&admin, "deleteInternetRadioStation", &format!("id={id}"))
            .await;
        let listed = app.json("getInternetRadioStations", "").await;
        assert_eq!(
            listed["internetRadioStations"]["internetRadioStation"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
);

both_backends!(apps_manage_accounts, |backend: Backend| async move {
    let app = Fixture::new(backend).await;
    let admin = app.admin_auth();

    // createUser: the password given is the new account's app password (and login).
    app.xml_as(
        &admin,
        "createUser",
        "username=carol&password=carol-password&email=carol%40example.org&adminRole=false&streamRole=true&jukeboxRole=true",
    )
    .await;
    let carol = Fixture::token_auth("carol", "carol-password");
    let me = app.json_as(&carol, "getUser", "username=carol").await;
    assert_eq!(me["user"]["adminRole"], false, "{me}");
    assert_eq!(
        me["user"]["jukeboxRole"], false,
        "not stored: musiclib has no jukebox"
    );
    app.library
        .accounts()
        .login("carol", "carol-password", None)
        .await
        .expect("the login password is the one given too");

    // changePassword, one's own, hex-encoded: only the app password changes.
    let encoded = hex::encode("carol's new app password");
    app.xml_as(
        &carol,
        "changePassword",
        &format!("username=carol&password=enc:{encoded}"),
    )
    .await;
    let refused = app.json_as(&carol, "ping", "").await;
    assert_eq!(
        refused["error"]["code"], 40,
        "the old app password is gone: {refused}"
    );
    let carol = Fixture::token_auth("carol", "carol's new app password");
    app.xml_as(&carol, "ping", "").await;
    app.library
        .accounts()
        .login("carol", "carol-password", None)
        .await
        .expect("an app credential never changes the web login");
    // Another user's password: admins only.
    let other = app
        .json_as(
            &carol,
            "changePassword",
            "username=ann&password=hijacked-password",
        )
        .await;
    assert_eq!(other["error"]["code"], 50, "{other}");
    let short = app
        .json_as(&carol, "changePassword", "username=carol&password=short")
        .await;
    assert_eq!(short["error"]["code"], 0, "{short}");

    // updateUser (admins): the superuser flag and the app password.
    let not_admin = app
        .json_as(&carol, "updateUser", "username=carol&adminRole=true")
        .await;
    assert_eq!(not_admin["error"]["code"], 50, "{not_admin}");
    app.xml_as(
        &admin,
        "updateUser",
        "username=carol&adminRole=true&password=set-by-the-admin&maxBitRate=320",
    )
    .await;
    let carol = Fixture::token_auth("carol", "set-by-the-admin");
    let me = app.json_as(&carol, "getUser", "username=carol").await;
    assert_eq!(me["user"]["adminRole"], true, "{me}");
    // An admin's own unchanged flag, as apps send every flag, is no demotion.
    app.xml_as(&admin, "updateUser", "username=root&adminRole=true")
        .await;
    let unknown = app.json_as(&admin, "updateUser", "username=nobody").await;
    assert_eq!(unknown["error"]["code"], 70, "{unknown}");

    // deleteUser (admins, never their own).
    let own = app.json_as(&admin, "deleteUser", "username=root").await;
    assert_eq!(own["error"]["code"], 0, "{own}");
    let by_user = app
        .json_as(&app.auth(), "deleteUser", "username=carol")
        .await;
    assert_eq!(by_user["error"]["code"], 50, "{by_user}");
    app.xml_as(&admin, "deleteUser", "username=carol").await;
    let gone = app.json_as(&carol, "ping", "").await;
    assert_eq!(gone["error"]["code"], 40, "{gone}");
});

both_backends!(
    get_avatar_answers_a_picture,
    |backend: Backend| async move {
        let app = Fixture::new(backend).await;
        let (status, content_type, generated) = app
            .get("getAvatar", &format!("{}&username=ann", app.auth()))
            .await;
        assert_eq!(status, axum::http::StatusCode::OK);
        assert_eq!(content_type, "image/png");
        assert_eq!(&generated[..4], b"\x89PNG");
        let (_, _, again) = app
            .get("getAvatar", &format!("{}&username=ANN", app.admin_auth()))
            .await;
        assert_eq!(
            again, generated,
            "the same picture, to anyone, by any spelling of the name"
        );
        let unknown = app
            .json_as(&app.auth(), "getAvatar", "username=nobody")
            .await;
        assert_eq!(unknown["error"]["code"], 70, "{unknown}");
        let missing = app.json_as(&app.auth(), "getAvatar", "").await;
        assert_eq!(missing["error"]["code"], 10, "{missing}");
    }
);

// indexBasedQueue: a queue holding a song twice keeps which of the two plays.
both_backends!(
    a_queue_by_index_holds_a_song_twice,
    |backend: Backend| async move {
        let app = Fixture::new(backend).await;
        let extensions = app.json_as("", "getOpenSubsonicExtensions", "").await;
        assert!(
            extensions["openSubsonicExtensions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|extension| extension["name"] == "indexBasedQueue"),
            "{extensions}"
        );
        let [a, b] = [&app.track_ids[0], &app.track_ids[1]];
        let queue = format!("id={a}&id={b}&id={a}");
        app.xml(
            "savePlayQueueByIndex",
            &format!("{queue}&currentIndex=2&position=1234"),
        )
        .await;
        let saved = app.json("getPlayQueueByIndex", "").await;
        let saved = &saved["playQueueByIndex"];
        assert_eq!(saved["currentIndex"], 2, "{saved}");
        assert_eq!(saved["position"], 1234);
        assert_eq!(saved["username"], "ann");
        let entries: Vec<&str> = saved["entry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["id"].as_str().unwrap())
            .collect();
        assert_eq!(entries, [a.as_str(), b.as_str(), a.as_str()]);
        let xml = {
            let (_, _, body) = app.get("getPlayQueueByIndex", &app.auth()).await;
            String::from_utf8(body).unwrap()
        };
        assert!(
            xml.contains(r#"<playQueueByIndex currentIndex="2""#),
            "{xml}"
        );
        // The id-based form reads the same queue, its current song by id.
        let by_id = app.json("getPlayQueue", "").await;
        assert_eq!(by_id["playQueue"]["current"], a.as_str());
        assert_eq!(by_id["playQueue"]["entry"].as_array().unwrap().len(), 3);
        // Saved by id, the first place of the song is meant.
        app.xml("savePlayQueue", &format!("{queue}&current={a}"))
            .await;
        let saved = app.json("getPlayQueueByIndex", "").await;
        assert_eq!(saved["playQueueByIndex"]["currentIndex"], 0);

        // The index is checked; a queue needs one; no songs clears it.
        for (params, code) in [
            (format!("{queue}&currentIndex=3"), 0),
            (format!("{queue}&currentIndex=-1"), 0),
            (queue.clone(), 10),
        ] {
            let refused = app
                .json_as(&app.auth(), "savePlayQueueByIndex", &params)
                .await;
            assert_eq!(refused["error"]["code"], code, "{params}: {refused}");
        }
        app.xml("savePlayQueueByIndex", "").await;
        let cleared = app.json("getPlayQueueByIndex", "").await;
        assert!(cleared.get("playQueueByIndex").is_none(), "{cleared}");
    }
);

// `search` (1.0.0): songs matching every word given, paged, with the total.
both_backends!(the_old_search_finds_songs, |backend: Backend| async move {
    let app = Fixture::new(backend).await;
    let every = app.json("search", "any=&count=500").await;
    let total = every["searchResult"]["totalHits"].as_i64().unwrap();
    assert_eq!(total as usize, app.track_ids.len(), "{every}");
    let page = app.xml("search", "count=2&offset=1").await;
    assert!(page.contains(r#"<searchResult offset="1""#), "{page}");
    assert_eq!(page.matches("<match ").count(), 2, "{page}");
    let song = &every["searchResult"]["match"][0];
    let title = song["title"].as_str().unwrap();
    let artist = song["artist"].as_str().unwrap();
    let found = app
        .json(
            "search",
            &format!(
                "title={}&artist={}",
                form_urlencoded::byte_serialize(title.as_bytes()).collect::<String>(),
                form_urlencoded::byte_serialize(artist.as_bytes()).collect::<String>()
            ),
        )
        .await;
    let ids: Vec<&str> = found["searchResult"]["match"]
        .as_array()
        .unwrap()
        .iter()
        .map(|song| song["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&song["id"].as_str().unwrap()), "{found}");
    let none = app.json("search", "any=zzqqxxnothing").await;
    assert_eq!(none["searchResult"]["totalHits"], 0, "{none}");
    let later = app.json("search", "any=&newerThan=32503680000000").await;
    assert!(
        later["searchResult"]
            .get("match")
            .is_none_or(|m| m.as_array().unwrap().is_empty()),
        "{later}"
    );
});

// `hls.m3u8`: a playlist whose segments are fetched through the same method with the app's
// own credentials.
both_backends!(
    an_hls_playlist_plays_through_the_protocol,
    |backend: Backend| async move {
        let app = Fixture::new(backend).await;
        let id = &app.track_ids[0];
        let (status, content_type, body) = app
            .get("hls.m3u8", &format!("{}&id={id}&bitRate=128", app.auth()))
            .await;
        assert_eq!(status, axum::http::StatusCode::OK);
        assert_eq!(content_type, "application/vnd.apple.mpegurl");
        let playlist = String::from_utf8(body).unwrap();
        assert!(playlist.starts_with("#EXTM3U"), "{playlist}");
        let first = playlist
            .lines()
            .find(|line| !line.starts_with('#'))
            .expect("a segment");
        let query = first.strip_prefix("hls.m3u8?").expect("the same method");
        assert!(
            query.contains("segment=seg-00000.ts") && query.contains("u=ann"),
            "{first}"
        );
        let (status, content_type, segment) = app.get("hls.m3u8", query).await;
        assert_eq!(
            status,
            axum::http::StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&segment)
        );
        assert_eq!(content_type, "video/mp2t");
        assert_eq!(segment[0], 0x47, "an MPEG-TS packet");
        let unknown = app
            .json_as(
                &app.auth(),
                "hls.m3u8",
                "id=0190a000-0000-7000-8000-000000000000",
            )
            .await;
        assert_eq!(unknown["error"]["code"], 70, "{unknown}");
    }
);

// playbackReport: the reports move getNowPlaying's timeline, and a playback heard for half
// the track counts one play, unless the report says ignoreScrobble.
both_backends!(
    reported_playback_moves_now_playing_and_counts_once,
    |backend: Backend| async move {
        use musiclib_core::domain::Page;
        let app = Fixture::new(backend).await;
        let extensions = app.json_as("", "getOpenSubsonicExtensions", "").await;
        assert!(
            extensions.to_string().contains("playbackReport"),
            "{extensions}"
        );
        let id = &app.track_ids[0];
        let duration_ms = app.json("getSong", &format!("id={id}")).await["song"]["duration"]
            .as_i64()
            .unwrap()
            * 1000;
        let report = |state: &str, position: i64, extra: &str| {
            format!("mediaId={id}&mediaType=song&state={state}&positionMs={position}&playbackRate=16{extra}")
        };
        let plays = || async {
            app.library
                .social()
                .history(&app.caller, Page::default())
                .await
                .unwrap()
                .total
        };
        let entry = || async {
            let playing = app.json("getNowPlaying", "").await;
            playing["nowPlaying"]["entry"][0].clone()
        };

        app.xml("reportPlayback", &report("starting", 0, "")).await;
        let first = entry().await;
        assert_eq!(
            (first["state"].as_str(), first["positionMs"].as_i64()),
            (Some("starting"), Some(0)),
            "{first}"
        );
        assert_eq!(first["playbackRate"], 16.0);
        app.xml("reportPlayback", &report("playing", 0, "")).await;
        // The timeline moves on by itself while playing, at the rate.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let moving = entry().await;
        assert_eq!(moving["state"], "playing");
        assert!(
            moving["positionMs"].as_i64().unwrap() >= 16 * 300 - 500,
            "{moving}"
        );
        let xml = app.xml("getNowPlaying", "").await;
        assert!(xml.contains(r#"state="playing""#), "{xml}");

        // Half the track heard at 16×: a play, once, with ignoreScrobble first holding it back.
        let wait_ms = (duration_ms / 2) / 16 + 400;
        tokio::time::sleep(std::time::Duration::from_millis(wait_ms as u64)).await;
        let half = duration_ms / 2 + 1000;
        app.xml(
            "reportPlayback",
            &report("playing", half, "&ignoreScrobble=true"),
        )
        .await;
        assert_eq!(plays().await, 0, "ignoreScrobble counts no play");
        app.xml("reportPlayback", &report("paused", half + 10, ""))
            .await;
        assert_eq!(plays().await, 1, "half the track heard is a play");
        let paused = entry().await;
        assert_eq!(
            (paused["state"].as_str(), paused["positionMs"].as_i64()),
            (Some("paused"), Some(half + 10))
        );
        app.xml("reportPlayback", &report("playing", half + 20, ""))
            .await;
        assert_eq!(plays().await, 1, "one playback, one play");

        // A seek forward is not listening: a fresh playback jumping to the end counts nothing.
        app.xml("reportPlayback", &report("starting", 0, "")).await;
        app.xml("reportPlayback", &report("playing", 0, "")).await;
        app.xml("reportPlayback", &report("playing", duration_ms - 1000, ""))
            .await;
        assert_eq!(plays().await, 1, "a seek is not a play");
        app.xml("reportPlayback", &report("stopped", duration_ms - 1000, ""))
            .await;
        let stopped = app.json("getNowPlaying", "").await;
        assert!(
            stopped["nowPlaying"]
                .get("entry")
                .is_none_or(|e| e.as_array().unwrap().is_empty()),
            "{stopped}"
        );

        for (params, code) in [
        (format!("mediaId={id}&mediaType=song&state=flying&positionMs=0"), 0),
        (format!("mediaId={id}&mediaType=song&state=playing"), 10),
        (format!("mediaId={id}&mediaType=song&state=playing&positionMs=0&playbackRate=0"), 0),
        ("mediaId=0190a000-0000-7000-8000-000000000000&mediaType=song&state=playing&positionMs=0".to_string(), 70),
    ] {
        let refused = app.json_as(&app.auth(), "reportPlayback", &params).await;
        assert_eq!(refused["error"]["code"], code, "{params}: {refused}");
    }
    }
);
