//! Remote sources through `/api/v1`: `GET /sources`, `GET /search`,
//! `GET /sources/{source}/search`, `POST /tracks/remote`, `POST /tracks/{id}/materialize`,
//! `/downloads`, streaming a placeholder, and every error they answer, against a mock
//! Subsonic server (the `subsonic` source). The work of the jobs is tested in
//! `musiclib-core/tests/it/remote.rs`, the real yt-dlp and a real second server in
//! `musiclib-bin/tests/remote.rs`.

use axum::http::StatusCode;
use musiclib_core::testing::{subsonic_server, Backend, TestLibrary};
use serde_json::{json, Value};

use crate::api::App;

async fn set_up(backend: Backend) -> (App, wiremock::MockServer, String) {
    let audio = musiclib_core::testing::wav_tone(3);
    let server = subsonic_server(
        &[
            ("s1", "Polar Drift", Some(audio.len() as u64)),
            ("s2", "Second Drift", None),
            ("s9", "Too Big", Some(50_000_000_000)),
        ],
        &audio,
    )
    .await;
    let url = server.uri();
    let library = TestLibrary::builder(backend)
        .config(move |config| {
            config.remote.subsonic = Some(musiclib_core::config::SubsonicSourceConfig {
                url,
                username: "friend".into(),
                password: "app-password".into(),
            });
            config.enrichment.coverart_enabled = false;
        })
        .build()
        .await;
    let app = App::new(library).await;
    let token = app.register("ann").await;
    (app, server, token)
}

fn source<'a>(sources: &'a Value, name: &str) -> &'a Value {
    sources
        .as_array()
        .unwrap()
        .iter()
        .find(|source| source["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {sources}"))
}

both_backends!(
    sources_search_placeholders_materialize,
    |backend: Backend| async move {
        let (app, _server, token) = set_up(backend).await;
        let token = Some(token.as_str());

        // The registry lists every source, remote ones with why they are off or whether
        // they answer.
        let (status, sources) = app.get("/api/v1/sources", token).await;
        assert_eq!(status, StatusCode::OK, "{sources}");
        assert_eq!(source(&sources, "upload")["enabled"], true);
        let ytdlp = source(&sources, "remote");
        assert_eq!(
            (ytdlp["enabled"].clone(), ytdlp["searchable"].clone()),
            (json!(false), json!(false))
        );
        assert!(ytdlp["detail"].as_str().unwrap().contains("REMOTE_ENABLED"));
        let subsonic = source(&sources, "subsonic");
        assert_eq!(subsonic["enabled"], true);
        assert_eq!(subsonic["available"], true, "{subsonic}");
        assert_eq!(subsonic["searchable"], true);

        // Search: every source at once, and one by name.
        let (status, all) = app.get("/api/v1/search?q=drift", token).await;
        assert_eq!(status, StatusCode::OK, "{all}");
        assert_eq!(
            all["sources"],
            json!([{"source": "subsonic", "ok": true, "error": null,
            "count": 3, "took_ms": all["sources"][0]["took_ms"]}])
        );
        let hit = &all["hits"][0];
        assert_eq!(hit["source_id"], "s1");
        assert_eq!(hit["in_library"], false);
        assert_eq!(hit["duration_ms"], 142_000);
        let (status, one) = app
            .get("/api/v1/sources/subsonic/search?q=drift&limit=1", token)
            .await;
        assert_eq!(status, StatusCode::OK, "{one}");
        assert_eq!(one["hits"].as_array().unwrap().len(), 1);

        // Save: 201 then 200, one track, a placeholder.
        let body = json!({"source": "subsonic", "source_id": "s1"});
        let (status, saved) = app
            .json("POST", "/api/v1/tracks/remote", token, body.clone())
            .await;
        assert_eq!(status, StatusCode::CREATED, "{saved}");
        assert_eq!(saved["availability"], "placeholder");
        assert_eq!(saved["storage_uri"], "");
        assert_eq!(saved["source"], "subsonic");
        assert_eq!(saved["source_id"], "s1");
        let id = saved["id"].as_str().unwrap().to_string();
        let (status, again) = app.json("POST", "/api/v1/tracks/remote", token, body).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(again["id"], id.as_str());
        let (_, all) = app.get("/api/v1/search?q=drift", token).await;
        assert_eq!(all["hits"][0]["in_library"], true);
        assert_eq!(all["hits"][0]["track_id"], id.as_str());
        assert_eq!(all["hits"][0]["availability"], "placeholder");

        // Streaming a placeholder: a clear 409 naming materialize.
        let (status, refused) = app.get(&format!("/api/v1/stream/{id}"), token).await;
        assert_eq!(status, StatusCode::CONFLICT, "{refused}");
        assert_eq!(refused["error"]["code"], "not_materialized");
        assert!(refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("materialize"));

        // Materialize: 202 with the job (the same one twice), then the track in place.
        let uri = format!("/api/v1/tracks/{id}/materialize");
        let (status, queued) = app.json("POST", &uri, token, json!(null)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
        assert_eq!(queued["track_id"], id.as_str());
        let (_, twice) = app.json("POST", &uri, token, json!(null)).await;
        assert_eq!(twice["job_id"], queued["job_id"]);
        musiclib_core::testing::drain_jobs(&app.library).await;
        let (_, job) = app
            .get(
                &format!("/api/v1/jobs/{}", queued["job_id"].as_str().unwrap()),
                token,
            )
            .await;
        assert_eq!(job["state"], "succeeded", "{job}");
        assert_eq!(job["kind"], "materialize_track");
        let (_, track) = app.get(&format!("/api/v1/tracks/{id}"), token).await;
        assert_eq!(track["availability"], "available", "{track}");
        assert_eq!(track["format"], "wav");
        let (status, ready) = app.json("POST", &uri, token, json!(null)).await;
        assert_eq!(status, StatusCode::OK, "{ready}");
        assert_eq!(ready["id"], id.as_str());
        let (status, _) = app.get(&format!("/api/v1/stream/{id}"), token).await;
        assert_eq!(status, StatusCode::OK);

        // Errors, each naming its reason.
        for (method, uri, body, expected) in [
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "nope", "source_id": "x"}),
                422,
            ),
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "remote", "source_id": "x"}),
                409,
            ),
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "subsonic", "source_id": "../../etc/passwd"}),
                422,
            ),
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "subsonic", "source_id": "a b; rm -rf /"}),
                422,
            ),
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "subsonic", "source_id": "missing"}),
                404,
            ),
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "subsonic"}),
                422,
            ),
            (
                "POST",
                "/api/v1/tracks/remote",
                json!({"source": "subsonic", "source_id": "s1", "extra": 1}),
                422,
            ),
            (
                "POST",
                "/api/v1/tracks/00000000-0000-7000-8000-000000000000/materialize",
                json!(null),
                404,
            ),
            (
                "POST",
                "/api/v1/tracks/not-an-id/materialize",
                json!(null),
                404,
            ),
        ] {
            let (status, answer) = app.json(method, uri, token, body.clone()).await;
            assert_eq!(status.as_u16(), expected, "{method} {uri} {body}: {answer}");
            assert!(answer["error"]["message"].is_string(), "{answer}");
        }
        for (uri, expected) in [
            ("/api/v1/search?q=", 422),
            ("/api/v1/search", 422),
            ("/api/v1/search?q=x&limit=0", 422),
            ("/api/v1/search?q=x&limit=51", 422),
            ("/api/v1/sources/nope/search?q=x", 404),
            ("/api/v1/sources/remote/search?q=x", 409),
            ("/api/v1/sources/local_folder/search?q=x", 409),
        ] {
            let (status, answer) = app.get(uri, token).await;
            assert_eq!(status.as_u16(), expected, "{uri}: {answer}");
            assert!(answer["error"]["message"].is_string(), "{answer}");
        }
        for (method, uri) in [
            ("GET", "/api/v1/search?q=x"),
            ("GET", "/api/v1/sources"),
            ("POST", "/api/v1/tracks/remote"),
            ("GET", "/api/v1/downloads"),
            ("POST", "/api/v1/downloads"),
        ] {
            let (status, _) = app
                .json(
                    method,
                    uri,
                    None,
                    json!({"source": "subsonic", "source_id": "s1"}),
                )
                .await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {uri}");
        }
    }
);

both_backends!(downloads, |backend: Backend| async move {
    let (app, _server, token) = set_up(backend).await;
    let other = app.register("bob").await;
    let token = Some(token.as_str());

    // A new download: 201 with the download and its placeholder track.
    let body = json!({"source": "subsonic", "source_id": "s2"});
    let (status, created) = app
        .json("POST", "/api/v1/downloads", token, body.clone())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let download = &created["download"];
    assert_eq!(download["state"], "queued");
    assert_eq!(download["track_id"], created["track"]["id"]);
    assert_eq!(created["track"]["availability"], "placeholder");
    assert_eq!(download["attempts"], 0);
    assert_eq!(download["already_in_library"], false);
    let id = download["id"].as_str().unwrap().to_string();
    // Asked again while queued: the same download, 200.
    let (status, again) = app.json("POST", "/api/v1/downloads", token, body).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["download"]["id"], id.as_str());

    // Read, list, and another user's view.
    let (status, one) = app.get(&format!("/api/v1/downloads/{id}"), token).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["source_id"], "s2");
    let (status, list) = app.get("/api/v1/downloads?limit=10", token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (list["total"].clone(), list["limit"].clone()),
        (json!(1), json!(10))
    );
    let (status, _) = app
        .get(&format!("/api/v1/downloads/{id}"), Some(&other))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, theirs) = app.get("/api/v1/downloads", Some(&other)).await;
    assert_eq!(theirs["total"], 0);

    // It runs: completed, 100 %, the track has its audio.
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (_, done) = app.get(&format!("/api/v1/downloads/{id}"), token).await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["percent"], 100.0);
    assert!(done["finished_at"].is_string());
    let (_, track) = app
        .get(
            &format!("/api/v1/tracks/{}", done["track_id"].as_str().unwrap()),
            token,
        )
        .await;
    assert_eq!(track["availability"], "available");
    // Cancelling a finished download is a conflict.
    let (status, answer) = app
        .json(
            "POST",
            &format!("/api/v1/downloads/{id}/cancel"),
            token,
            json!(null),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");

    // What the library has already: 200, completed at once, the existing track.
    let (status, had) = app
        .json(
            "POST",
            "/api/v1/downloads",
            token,
            json!({"source": "subsonic", "source_id": "s2"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{had}");
    assert_eq!(had["download"]["state"], "completed");
    assert_eq!(had["download"]["already_in_library"], true);
    assert_eq!(had["track"]["id"], track["id"]);

    // Cancel a queued one (by its owner; another user cannot see it).
    let (_, queued) = app
        .json(
            "POST",
            "/api/v1/downloads",
            token,
            json!({"source": "subsonic", "source_id": "s1"}),
        )
        .await;
    let queued_id = queued["download"]["id"].as_str().unwrap().to_string();
    let cancel = format!("/api/v1/downloads/{queued_id}/cancel");
    let (status, _) = app.json("POST", &cancel, Some(&other), json!(null)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, cancelled) = app.json("POST", &cancel, token, json!(null)).await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled");
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (_, still) = app
        .get(&format!("/api/v1/downloads/{queued_id}"), token)
        .await;
    assert_eq!(still["state"], "cancelled");

    // Errors.
    for (body, expected) in [
        (json!({"source": "subsonic", "source_id": "s9"}), 413),
        (json!({"source": "subsonic", "source_id": "missing"}), 404),
        (json!({"source": "nope", "source_id": "s1"}), 422),
        (json!({"source": "remote", "source_id": "s1"}), 409),
        (json!({"source": "subsonic", "source_id": "../s1"}), 422),
        (json!({"source_id": "s1"}), 422),
        (json!("text"), 422),
    ] {
        let (status, answer) = app
            .json("POST", "/api/v1/downloads", token, body.clone())
            .await;
        assert_eq!(status.as_u16(), expected, "{body}: {answer}");
        assert!(answer["error"]["message"].is_string(), "{answer}");
    }
    for (uri, expected) in [
        ("/api/v1/downloads/not-an-id", 404),
        (
            "/api/v1/downloads/00000000-0000-7000-8000-000000000000",
            404,
        ),
        ("/api/v1/downloads?limit=0", 422),
        ("/api/v1/downloads?limit=201", 422),
    ] {
        let (status, answer) = app.get(uri, token).await;
        assert_eq!(status.as_u16(), expected, "{uri}: {answer}");
    }
    // The too-large request stored nothing.
    let (_, tracks) = app.get("/api/v1/tracks?source=subsonic", token).await;
    assert_eq!(tracks["total"], 2, "{tracks}");
});
