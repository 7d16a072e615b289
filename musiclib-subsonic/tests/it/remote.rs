//! Placeholders of remote items on the Subsonic interface: song lists leave them out (apps
//! cache what they list, to play it), playlists keep them (entries are addressed by
//! position), and `stream` of one fetches its audio first, the request waiting for it.

use std::time::Duration;

use musiclib_core::testing::{subsonic_server, Backend};
use serde_json::Value;

use crate::both_backends;
use crate::harness::Fixture;

/// The ids of a list of songs (or albums), which must be there and hold something: every list
/// this test reads has entries besides the ones it looks for.
fn song_ids(list: &Value) -> Vec<String> {
    let ids: Vec<String> = list
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|song| song["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!ids.is_empty(), "an empty list");
    ids
}

both_backends!(
    placeholders_are_hidden_from_lists_and_fetched_on_stream,
    |backend: Backend| async move {
        let audio = musiclib_core::testing::wav_tone(2);
        let server = subsonic_server(&[("s1", "Polar Drift (remote)", None)], &audio).await;
        let url = server.uri();
        let app = Fixture::with_config(backend, move |config| {
            config.remote.subsonic = Some(musiclib_core::config::SubsonicSourceConfig {
                url,
                username: "friend".into(),
                password: "app-password".into(),
            });
            config.enrichment.coverart_enabled = false;
        })
        .await;
        let saved = app
            .library
            .remote()
            .save(&app.caller, "subsonic", "s1")
            .await
            .unwrap();
        let placeholder = saved.track.id.to_string();

        // Lists leave it out: search (as sync apps list everything), random songs, its album.
        let found = app.json("search3", "query=&songCount=500").await;
        let listed = song_ids(&found["searchResult3"]["song"]);
        assert!(!listed.is_empty());
        assert!(!listed.contains(&placeholder), "{found}");
        let random = app.json("getRandomSongs", "size=500").await;
        assert!(!song_ids(&random["randomSongs"]["song"]).contains(&placeholder));
        let album_id = saved.track.album_id.as_ref().unwrap().to_string();
        let album = app.json("getAlbum", &format!("id={album_id}")).await;
        assert!(
            !song_ids(&album["album"]["song"]).contains(&placeholder),
            "{album}"
        );
        app.xml("search3", "query=drift").await;

        // An album made only of saved hits is left out of the album lists; one with
        // something to play stays.
        let mut lone = musiclib_core::testing::subsonic_song("s9", "Far Signal", None);
        lone["album"] = "Only Remote".into();
        lone["artist"] = "Far Away".into();
        wiremock::Mock::given(wiremock::matchers::method("GET"))
            .and(wiremock::matchers::path("/rest/getSong"))
            .and(wiremock::matchers::query_param("id", "s9"))
            .respond_with(musiclib_core::testing::subsonic_ok(
                serde_json::json!({"song": lone}),
            ))
            .with_priority(1)
            .mount(&server)
            .await;
        let remote_only = app
            .library
            .remote()
            .save(&app.caller, "subsonic", "s9")
            .await
            .unwrap();
        let remote_album = remote_only.track.album_id.as_ref().unwrap().to_string();
        assert_ne!(remote_album, album_id);
        for kind in ["alphabeticalByName", "newest", "random"] {
            let list = app
                .json("getAlbumList2", &format!("type={kind}&size=500"))
                .await;
            let albums = song_ids(&list["albumList2"]["album"]);
            assert!(albums.contains(&album_id), "{kind}: {list}");
            assert!(!albums.contains(&remote_album), "{kind}: {list}");
        }

        // A playlist keeps it, and getSong answers it.
        let created = app
            .json(
                "createPlaylist",
                &format!(
                    "name=mixed&songId={}&songId={placeholder}",
                    app.track_ids[0]
                ),
            )
            .await;
        let entries = song_ids(&created["playlist"]["entry"]);
        assert_eq!(entries, vec![app.track_ids[0].clone(), placeholder.clone()]);
        let song = app.json("getSong", &format!("id={placeholder}")).await;
        assert_eq!(song["song"]["id"], placeholder.as_str());

        // Streaming it fetches it (a worker runs meanwhile) and sends the audio.
        let worker = {
            let library = app.library.library.clone();
            tokio::spawn(async move {
                loop {
                    musiclib_core::testing::drain_jobs(&library).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let (status, content_type, body) = app
            .get("stream", &format!("{}&id={placeholder}", app.auth()))
            .await;
        worker.abort();
        assert_eq!(
            status,
            axum::http::StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&body)
        );
        assert!(content_type.starts_with("audio/"), "{content_type}");
        assert_eq!(body, audio, "the source's exact bytes");
        // Now it is listed like any song.
        let found = app.json("search3", "query=&songCount=500").await;
        assert!(song_ids(&found["searchResult3"]["song"]).contains(&placeholder));
    }
);
