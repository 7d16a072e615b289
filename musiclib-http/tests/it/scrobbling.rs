//! Scrobbling for real: plays recorded through `/history` and `/sync/push` (and now playing)
//! reach Last.fm and ListenBrainz, stood in for by wiremock answering with the services' real
//! shapes; each request is checked (Last.fm's signature, ListenBrainz's token header).

use std::collections::HashMap;
use std::time::Duration;

use axum::http::StatusCode;
use md5::{Digest, Md5};
use musiclib_core::auth::Caller;
use musiclib_core::testing::{drain_jobs, Backend, TestLibrary};
use serde_json::{json, Value};
use wiremock::matchers::{body_string_contains, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::api::App;

const API_KEY: &str = "0123456789abcdef0123456789abcdef";
const API_SECRET: &str = "fedcba9876543210fedcba9876543210";
const SESSION_KEY: &str = "d580d57f32848f5dcf574d1ce18d78b2";
const TOKEN: &str = "0b4c1e5d-6a8c-4d9e-bb77-2f1e1c8f9a10";

/// Answers `track.scrobble` as Last.fm does: one `scrobble` per play (an object for one, a
/// list for several), all accepted.
struct Accept;

impl Respond for Accept {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form = form(request);
        let count = (0..)
            .take_while(|index| form.contains_key(&format!("artist[{index}]")))
            .count();
        let item = |index: usize| {
            json!({
                "artist": {"corrected": "0", "#text": form[&format!("artist[{index}]")]},
                "track": {"corrected": "0", "#text": form[&format!("track[{index}]")]},
                "album": {"corrected": "0", "#text": form.get(&format!("album[{index}]")).cloned().unwrap_or_default()},
                "albumArtist": {"corrected": "0", "#text": ""},
                "timestamp": form[&format!("timestamp[{index}]")],
                "ignoredMessage": {"code": "0", "#text": ""},
            })
        };
        let scrobble = if count == 1 {
            item(0)
        } else {
            Value::Array((0..count).map(item).collect())
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "scrobbles": {"scrobble": scrobble, "@attr": {"accepted": count, "ignored": 0}}
        }))
    }
}

fn form(request: &Request) -> HashMap<String, String> {
    form_urlencoded::parse(&request.body).into_owned().collect()
}

/// Checks a Last.fm request's `api_sig` the way Last.fm does.
fn assert_signed(form: &HashMap<String, String>) {
    let mut names: Vec<&String> = form
        .keys()
        .filter(|name| *name != "api_sig" && *name != "format")
        .collect();
    names.sort();
    let mut text = String::new();
    for name in names {
        text.push_str(name);
        text.push_str(&form[name]);
    }
    text.push_str(API_SECRET);
    assert_eq!(
        form["api_sig"],
        hex::encode(Md5::digest(text.as_bytes())),
        "{form:?}"
    );
    assert_eq!(form["api_key"], API_KEY);
    assert_eq!(form["sk"], SESSION_KEY);
    assert_eq!(form["format"], "json");
}

async fn lastfm_requests(server: &MockServer, method: &str) -> Vec<HashMap<String, String>> {
    server
        .received_requests()
        .await
        .expect("the mock records requests")
        .iter()
        .filter(|request| request.url.path() == "/2.0/")
        .map(form)
        .filter(|form| form.get("method").map(String::as_str) == Some(method))
        .collect()
}

async fn listenbrainz_requests(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("the mock records requests")
        .iter()
        .filter(|request| request.url.path() == "/1/submit-listens")
        .map(|request| {
            assert_eq!(
                request.headers.get("authorization").unwrap(),
                &format!("Token {TOKEN}")
            );
            serde_json::from_slice(&request.body).unwrap()
        })
        .collect()
}

/// Mounts the services answering success.
async fn mount_success(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/2.0/"))
        .and(body_string_contains("method=track.scrobble"))
        .respond_with(Accept)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/2.0/"))
        .and(body_string_contains("method=track.updateNowPlaying"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"nowplaying": {
            "artist": {"corrected": "0", "#text": "Artist"}, "track": {"corrected": "0", "#text": "Track"},
            "album": {"corrected": "0", "#text": ""}, "albumArtist": {"corrected": "0", "#text": ""},
            "ignoredMessage": {"code": "0", "#text": ""}}})))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/1/submit-listens"))
        .and(header("authorization", format!("Token {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"status": "ok"})))
        .mount(server)
        .await;
}

/// A library pointed at `server` for both services, with `tracks` synthetic tracks (three
/// minutes each), a user with both credentials set, their token and id.
async fn set_up(
    backend: Backend,
    server: &MockServer,
    tracks: usize,
) -> (App, String, Caller, Vec<String>) {
    let base = server.uri();
    let library = TestLibrary::builder(backend)
        .config(move |config| {
            config.scrobbling.lastfm_api_key = Some(API_KEY.into());
            config.scrobbling.lastfm_api_secret = Some(API_SECRET.into());
            config.scrobbling.lastfm_base_url = format!("{base}/2.0/");
            config.scrobbling.listenbrainz_base_url = base;
            // Retries wait an hour: a test sees the failure, then makes the retry due itself
            // (`make_retries_due`).
            config.jobs.retry_base = Duration::from_secs(3600);
            config.jobs.retry_max = Duration::from_secs(3600);
        })
        .build()
        .await;
    let app = App::new(library).await;
    musiclib_core::testing::insert_synthetic_tracks(&app.library, tracks).await;
    let alice = app.register("alice").await;
    let (status, set) = app
        .json(
            "PUT",
            "/api/v1/settings/scrobbling",
            Some(&alice),
            json!({"lastfm": {"session_key": SESSION_KEY}, "listenbrainz": {"token": TOKEN}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(set["lastfm"]["available"], true);
    let user = app
        .library
        .accounts()
        .find_user_by_name("alice")
        .await
        .unwrap()
        .unwrap();
    let (_, page) = app
        .get(&format!("/api/v1/tracks?limit={tracks}"), Some(&alice))
        .await;
    let ids = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|track| track["id"].as_str().unwrap().to_string())
        .collect();
    (app, alice, Caller { user }, ids)
}

/// Makes every queued job due now: the retries' backoff has passed.
async fn make_retries_due(app: &App) {
    musiclib_core::testing::execute(
        &app.library,
        "UPDATE jobs SET run_at = 0 WHERE state = 'queued'",
        &[],
    )
    .await;
}

/// Posts a play to `/history`, which must be recorded as new (201).
async fn post_play(app: &App, token: &str, play: Value) {
    let (status, body) = app.json("POST", "/api/v1/history", Some(token), play).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// The client ids of `token`'s history, newest first.
async fn history(app: &App, token: &str) -> Vec<String> {
    let (status, page) = app.get("/api/v1/history?limit=200", Some(token)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {page}"))
        .iter()
        .map(|play| play["client_event_id"].as_str().unwrap().to_string())
        .collect()
}

fn play(id: &str, track: &str, minute: u32, seconds: f64) -> Value {
    json!({"client_event_id": id, "track_id": track,
           "played_at": format!("2026-11-20T10:{minute:02}:00Z"), "seconds_played": seconds})
}

both_backends!(plays_are_scrobbled_once, |backend: Backend| async move {
    let server = MockServer::start().await;
    mount_success(&server).await;
    let (app, alice, caller, ids) = set_up(backend, &server, 60).await;

    // One play through /history: one signed scrobble, one single listen.
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/history",
            Some(&alice),
            play("h1", &ids[0], 0, 120.0),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    drain_jobs(&app.library).await;
    let scrobbles = lastfm_requests(&server, "track.scrobble").await;
    assert_eq!(scrobbles.len(), 1);
    assert_signed(&scrobbles[0]);
    let (_, track) = app
        .get(&format!("/api/v1/tracks/{}", ids[0]), Some(&alice))
        .await;
    assert_eq!(scrobbles[0]["artist[0]"], track["artist"].as_str().unwrap());
    assert_eq!(scrobbles[0]["track[0]"], track["title"].as_str().unwrap());
    assert_eq!(scrobbles[0]["album[0]"], track["album"].as_str().unwrap());
    assert_eq!(scrobbles[0]["duration[0]"], "180");
    // 2026-11-20T10:00:00Z.
    assert_eq!(scrobbles[0]["timestamp[0]"], "1795168800");
    let listens = listenbrainz_requests(&server).await;
    assert_eq!(listens.len(), 1);
    assert_eq!(listens[0]["listen_type"], "single");
    let listen = &listens[0]["payload"][0];
    assert_eq!(listen["listened_at"], 1795168800);
    assert_eq!(listen["track_metadata"]["track_name"], track["title"]);
    assert_eq!(listen["track_metadata"]["artist_name"], track["artist"]);
    assert_eq!(listen["track_metadata"]["release_name"], track["album"]);
    assert_eq!(
        listen["track_metadata"]["additional_info"]["submission_client"],
        "musiclib"
    );
    assert_eq!(
        listen["track_metadata"]["additional_info"]["duration_ms"],
        180000
    );

    // The same play again, through /history and in a push, with 55 new plays and one too
    // short to count: Last.fm gets batches of 50 and 5, ListenBrainz one import of 55; the
    // repeated play is not sent again.
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/history",
            Some(&alice),
            play("h1", &ids[0], 0, 120.0),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut plays = vec![play("h1", &ids[0], 0, 120.0)];
    for index in 0..55 {
        plays.push(play(
            &format!("p{index}"),
            &ids[index + 1],
            1 + index as u32 % 50,
            95.0,
        ));
    }
    plays.push(play("short", &ids[58], 59, 20.0));
    let (status, pushed) = app
        .json(
            "POST",
            "/api/v1/sync/push",
            Some(&alice),
            json!({"plays": plays}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{pushed}");
    assert_eq!(pushed["accepted"], 56);
    drain_jobs(&app.library).await;
    let scrobbles = lastfm_requests(&server, "track.scrobble").await;
    let sizes: Vec<usize> = scrobbles
        .iter()
        .map(|form| form.keys().filter(|key| key.starts_with("artist[")).count())
        .collect();
    assert_eq!(sizes, vec![1, 50, 5]);
    scrobbles.iter().for_each(assert_signed);
    let listens = listenbrainz_requests(&server).await;
    assert_eq!(listens.len(), 2);
    assert_eq!(listens[1]["listen_type"], "import");
    assert_eq!(listens[1]["payload"].as_array().unwrap().len(), 55);
    let (_, status_now) = app.get("/api/v1/settings/scrobbling", Some(&alice)).await;
    assert_eq!(status_now["lastfm"]["state"], "ok", "{status_now}");
    assert_eq!(status_now["listenbrainz"]["state"], "ok", "{status_now}");
    assert!(
        status_now["lastfm"]["checked_at"].is_string(),
        "{status_now}"
    );

    // Now playing: Last.fm's updateNowPlaying and ListenBrainz's playing_now.
    app.library
        .social()
        .set_now_playing(
            &caller,
            "tests",
            &musiclib_core::TrackId::parse(&ids[2]).unwrap(),
        )
        .await
        .unwrap();
    drain_jobs(&app.library).await;
    let now = lastfm_requests(&server, "track.updateNowPlaying").await;
    assert_eq!(now.len(), 1);
    assert_signed(&now[0]);
    assert!(now[0].contains_key("track") && now[0].contains_key("artist"));
    let listens = listenbrainz_requests(&server).await;
    assert_eq!(listens.len(), 3);
    assert_eq!(listens[2]["listen_type"], "playing_now");
    assert!(listens[2]["payload"][0].get("listened_at").is_none());

    // Scrobbling switched off, or another user without credentials: nothing is sent.
    let (status, _) = app
        .json(
            "PATCH",
            "/api/v1/settings",
            Some(&alice),
            json!({"scrobbling": false}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    post_play(&app, &alice, play("off", &ids[3], 30, 120.0)).await;
    let bob = app.register("bob").await;
    post_play(&app, &bob, play("b1", &ids[3], 30, 120.0)).await;
    // Both recorded, only not sent.
    assert!(history(&app, &alice).await.contains(&"off".to_string()));
    assert_eq!(history(&app, &bob).await, ["b1"]);
    drain_jobs(&app.library).await;
    assert_eq!(lastfm_requests(&server, "track.scrobble").await.len(), 3);
    assert_eq!(listenbrainz_requests(&server).await.len(), 3);
});

both_backends!(
    failures_retry_and_a_revoked_session_stops,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        let (app, alice, _, ids) = set_up(backend, &server, 5).await;

        // Last.fm offline (error 11) and ListenBrainz answering 503 once, then both well:
        // the play is retried and sent once to each.
        Mock::given(method("POST"))
            .and(path("/2.0/"))
            .respond_with(ResponseTemplate::new(503).set_body_json(json!({
                "error": 11, "message": "Service Offline - This service is temporarily offline. Try again later"})))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/1/submit-listens"))
            .respond_with(
                ResponseTemplate::new(503).set_body_string("<html>Service unavailable</html>"),
            )
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        mount_success(&server).await;
        post_play(&app, &alice, play("h1", &ids[0], 0, 120.0)).await;
        drain_jobs(&app.library).await;
        let (_, failing) = app.get("/api/v1/settings/scrobbling", Some(&alice)).await;
        assert_eq!(failing["lastfm"]["state"], "failing", "{failing}");
        assert!(
            failing["lastfm"]["detail"]
                .as_str()
                .unwrap()
                .contains("error 11"),
            "{failing}"
        );
        assert_eq!(failing["listenbrainz"]["state"], "failing", "{failing}");
        // The retry waits for the jobs' backoff: nothing is sent before.
        drain_jobs(&app.library).await;
        assert_eq!(lastfm_requests(&server, "track.scrobble").await.len(), 1);
        assert_eq!(listenbrainz_requests(&server).await.len(), 1);
        // Once it is due, the retry goes.
        make_retries_due(&app).await;
        drain_jobs(&app.library).await;
        let scrobbles = lastfm_requests(&server, "track.scrobble").await;
        assert_eq!(scrobbles.len(), 2);
        assert_eq!(scrobbles[0]["timestamp[0]"], scrobbles[1]["timestamp[0]"]);
        assert_eq!(listenbrainz_requests(&server).await.len(), 2);
        let (_, ok) = app.get("/api/v1/settings/scrobbling", Some(&alice)).await;
        assert_eq!(ok["lastfm"]["state"], "ok", "{ok}");
        assert_eq!(ok["listenbrainz"]["state"], "ok", "{ok}");

        // The session revoked on Last.fm (error 9) and the token on ListenBrainz (401): both
        // marked revoked, so the user sees it; nothing more is sent.
        server.reset().await;
        Mock::given(method("POST"))
            .and(path("/2.0/"))
            .respond_with(ResponseTemplate::new(403).set_body_json(json!({
                "error": 9, "message": "Invalid session key - Please re-authenticate", "links": []})))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/1/submit-listens"))
            .respond_with(ResponseTemplate::new(401).set_body_json(json!({
                "code": 401, "error": "Invalid authorization token."})))
            .mount(&server)
            .await;
        post_play(&app, &alice, play("h2", &ids[1], 5, 120.0)).await;
        drain_jobs(&app.library).await;
        let (_, revoked) = app.get("/api/v1/settings/scrobbling", Some(&alice)).await;
        assert_eq!(revoked["lastfm"]["state"], "revoked", "{revoked}");
        assert_eq!(revoked["listenbrainz"]["state"], "revoked", "{revoked}");
        assert!(revoked["lastfm"]["detail"]
            .as_str()
            .unwrap()
            .contains("Invalid session key"));
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            2,
            "one attempt each, no retries"
        );
        post_play(&app, &alice, play("h3", &ids[2], 10, 120.0)).await;
        assert_eq!(history(&app, &alice).await, ["h3", "h2", "h1"]);
        drain_jobs(&app.library).await;
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
        // Not even a retry waiting: nothing is sent while revoked.
        make_retries_due(&app).await;
        drain_jobs(&app.library).await;
        assert_eq!(server.received_requests().await.unwrap().len(), 2);

        // A new session key: the play that waited is sent (plays made while revoked were
        // not queued).
        server.reset().await;
        mount_success(&server).await;
        let (status, set) = app
            .json(
                "PUT",
                "/api/v1/settings/scrobbling",
                Some(&alice),
                json!({"lastfm": {"session_key": SESSION_KEY}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(set["lastfm"]["state"], "unknown");
        assert_eq!(set["listenbrainz"]["state"], "revoked");
        drain_jobs(&app.library).await;
        let scrobbles = lastfm_requests(&server, "track.scrobble").await;
        assert_eq!(scrobbles.len(), 1);
        assert_eq!(scrobbles[0]["timestamp[0]"], "1795169100");
        assert!(listenbrainz_requests(&server).await.is_empty());
    }
);

/// Refuses (HTTP 400, as ListenBrainz does for an invalid listen) any submission holding the
/// track titled `bad`, and takes the rest.
struct RefuseTitle {
    bad: String,
}

impl Respond for RefuseTitle {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let refused = body["payload"]
            .as_array()
            .unwrap()
            .iter()
            .any(|listen| listen["track_metadata"]["track_name"] == self.bad.as_str());
        if refused {
            ResponseTemplate::new(400).set_body_json(
                json!({"code": 400, "error": "Value for key track_name is invalid."}),
            )
        } else {
            ResponseTemplate::new(200).set_body_json(json!({"status": "ok"}))
        }
    }
}

both_backends!(
    a_refused_play_does_not_hold_up_the_queue,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        mount_success(&server).await;
        let (app, alice, _, ids) = set_up(backend, &server, 3).await;
        let (_, bad) = app
            .get(&format!("/api/v1/tracks/{}", ids[1]), Some(&alice))
            .await;
        Mock::given(method("POST"))
            .and(path("/1/submit-listens"))
            .respond_with(RefuseTitle {
                bad: bad["title"].as_str().unwrap().to_string(),
            })
            .with_priority(1)
            .mount(&server)
            .await;
        let plays: Vec<Value> = (0..3)
            .map(|index| play(&format!("p{index}"), &ids[index], index as u32, 120.0))
            .collect();
        let (status, _) = app
            .json(
                "POST",
                "/api/v1/sync/push",
                Some(&alice),
                json!({"plays": plays}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        drain_jobs(&app.library).await;
        // The import of three is refused; then one at a time: two taken, the bad one dropped.
        let listens = listenbrainz_requests(&server).await;
        let kinds: Vec<(&str, usize)> = listens
            .iter()
            .map(|listen| {
                (
                    listen["listen_type"].as_str().unwrap(),
                    listen["payload"].as_array().unwrap().len(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            vec![("import", 3), ("single", 1), ("single", 1), ("single", 1)]
        );
        let (_, state) = app.get("/api/v1/settings/scrobbling", Some(&alice)).await;
        assert_eq!(state["listenbrainz"]["state"], "ok", "{state}");
        // Nothing is left queued: a new play goes alone.
        post_play(&app, &alice, play("later", &ids[0], 30, 120.0)).await;
        drain_jobs(&app.library).await;
        let listens = listenbrainz_requests(&server).await;
        assert_eq!(listens.len(), 5);
        assert_eq!(listens[4]["listen_type"], "single");
        // Last.fm took all three in one batch.
        let scrobbles = lastfm_requests(&server, "track.scrobble").await;
        assert_eq!(scrobbles.len(), 2);
    }
);
