//! The Subsonic `scrobble` reaches the scrobbling services: `submission=false` is what is
//! playing now, a submission is a play forwarded once (ListenBrainz stood in for by wiremock
//! with its real request shape).

use musiclib_core::scrobbling::CredentialsChange;
use musiclib_core::testing::{drain_jobs, Backend};
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::both_backends;
use crate::harness::Fixture;

const TOKEN: &str = "0b4c1e5d-6a8c-4d9e-bb77-2f1e1c8f9a10";

async fn listens(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("the mock records requests")
        .iter()
        .filter(|request| request.url.path() == "/1/submit-listens")
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

both_backends!(
    scrobble_reaches_listenbrainz,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/1/submit-listens"))
            .and(header("authorization", format!("Token {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"status": "ok"})))
            .mount(&server)
            .await;
        let base = server.uri();
        let app = Fixture::with_config(backend, move |config| {
            config.scrobbling.listenbrainz_base_url = base;
        })
        .await;
        app.library
            .scrobbling()
            .set_credentials(
                &app.caller,
                &CredentialsChange {
                    lastfm_session_key: None,
                    listenbrainz_token: Some(Some(TOKEN.into())),
                },
            )
            .await
            .unwrap();
        let song = app.track_ids[0].clone();
        let track = app.json("getSong", &format!("id={song}")).await["song"].clone();

        // Now playing.
        app.json("scrobble", &format!("id={song}&submission=false"))
            .await;
        drain_jobs(&app.library).await;
        let sent = listens(&server).await;
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["listen_type"], "playing_now");
        assert_eq!(
            sent[0]["payload"][0]["track_metadata"]["track_name"],
            track["title"]
        );

        // A play (time in ms), scrobbled twice by a retrying client: forwarded once.
        for _ in 0..2 {
            app.json("scrobble", &format!("id={song}&time=1795168800000"))
                .await;
        }
        drain_jobs(&app.library).await;
        let sent = listens(&server).await;
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[1]["listen_type"], "single");
        assert_eq!(sent[1]["payload"][0]["listened_at"], 1795168800);
        assert_eq!(
            sent[1]["payload"][0]["track_metadata"]["artist_name"],
            track["artist"]
        );
    }
);
