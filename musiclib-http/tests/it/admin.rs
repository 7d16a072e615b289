//! `/admin/*`: the service report, the source registry, the effective settings with secrets
//! redacted, and the reindex job.

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::json;

use crate::api::App;

both_backends!(reports_and_settings, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let admin = app.admin_token().await;
    let user = app.register("listener").await;

    for path in [
        "/api/v1/admin/services",
        "/api/v1/admin/sources",
        "/api/v1/admin/settings",
    ] {
        let (status, _) = app.get(path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        let (status, body) = app.get(path, Some(&user)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
    }

    let (status, services) = app.get("/api/v1/admin/services", Some(&admin)).await;
    assert_eq!(status, StatusCode::OK, "{services}");
    let state = |name: &str| {
        services
            .as_array()
            .unwrap()
            .iter()
            .find(|service| service["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {services}"))
            .clone()
    };
    assert_eq!(state("database")["state"], "ok");
    let expected_backend = match backend {
        Backend::Embedded => "sqlite",
        Backend::ScaleOut => "postgres",
    };
    assert_eq!(state("database")["detail"], expected_backend);
    assert_eq!(state("storage")["state"], "ok");
    let queue = state("job_queue");
    assert_eq!(queue["state"], "ok");
    assert!(
        queue["detail"].as_str().unwrap().contains("queued"),
        "{queue}"
    );
    assert_eq!(state("lastfm")["state"], "disabled");
    assert_eq!(state("listenbrainz")["state"], "configured");
    let sound = state("sound_analysis");
    assert_eq!(sound["state"], "ok");
    assert!(
        sound["detail"].as_str().unwrap().contains("waiting"),
        "{sound}"
    );
    let loudness = state("loudness_analysis");
    assert_eq!(loudness["state"], "ok");
    assert!(
        loudness["detail"].as_str().unwrap().contains("measured"),
        "{loudness}"
    );
    for name in ["transcoder", "acoustid", "coverartarchive"] {
        let service = state(name);
        assert!(
            ["ok", "configured", "disabled", "unavailable"]
                .contains(&service["state"].as_str().unwrap()),
            "{service}"
        );
    }

    let (status, sources) = app.get("/api/v1/admin/sources", Some(&admin)).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = sources
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["upload", "local_folder", "remote", "subsonic"]);

    // Settings: every secret redacted, the real values nowhere in the answer.
    let (status, settings) = app.get("/api/v1/admin/settings", Some(&admin)).await;
    assert_eq!(status, StatusCode::OK);
    let setting = |name: &str| {
        settings
            .as_array()
            .unwrap()
            .iter()
            .find(|setting| setting["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {settings}"))
            .clone()
    };
    for secret in ["JWT_SECRET", "LEGACY_SECRET_KEY"] {
        assert_eq!(setting(secret)["value"], "<redacted>");
        assert_eq!(setting(secret)["secret"], true);
    }
    assert_eq!(setting("ALLOW_REGISTRATION")["value"], "true");
    let text = settings.to_string();
    let config = app.library.config();
    for secret in [&config.jwt_secret, &config.legacy_secret_key] {
        assert!(!text.contains(&String::from_utf8_lossy(secret).to_string()));
        assert!(!text.contains(&hex_of(secret)));
    }
    if let musiclib_core::config::StorageConfig::S3(s3) = &config.storage {
        if s3.secret_access_key.is_some() {
            assert_eq!(setting("S3_SECRET_ACCESS_KEY")["value"], "<redacted>");
        }
    }
    // Changing them is not supported.
    let (status, _) = app
        .json(
            "PATCH",
            "/api/v1/admin/settings",
            Some(&admin),
            json!({"ALLOW_REGISTRATION": false}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED);
});

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

async fn reindex_rereads_files(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let admin = app.admin_token().await;
    let user = app.register("listener").await;
    let mut ids = Vec::new();
    for file in [
        "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
        "library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3",
    ] {
        let bytes = std::fs::read(corpus.join(file)).unwrap();
        let (status, track) = app
            .upload(&admin, file.rsplit('/').next().unwrap(), &bytes)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{track}");
        ids.push(track["id"].as_str().unwrap().to_string());
    }
    // Enrichment first, so only the reindex runs below.
    musiclib_core::testing::drain_jobs(&app.library).await;
    // One track edited by hand; the other's row drifted from its file (as after a bug, or
    // an old release's tag reader).
    let (status, _) = app
        .json(
            "PUT",
            &format!("/api/v1/tracks/{}/metadata", ids[1]),
            Some(&admin),
            json!({"title": "Mine", "artist": "Me"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    musiclib_core::testing::execute(
        &app.library,
        "UPDATE tracks SET title = 'stale', genre = NULL, search_text = 'stale' WHERE id = $1",
        &[&ids[0]],
    )
    .await;
    let (_, drifted) = app
        .get(&format!("/api/v1/tracks/{}", ids[0]), Some(&admin))
        .await;
    assert_eq!(drifted["title"], "stale", "{drifted}");

    let (status, _) = app
        .json("POST", "/api/v1/admin/reindex", None, json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app
        .json("POST", "/api/v1/admin/reindex", Some(&user), json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, queued) = app
        .json("POST", "/api/v1/admin/reindex", Some(&admin), json!({}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    // Asked again while queued: the same job.
    let (_, again) = app
        .json("POST", "/api/v1/admin/reindex", Some(&admin), json!({}))
        .await;
    assert_eq!(again["job_id"], queued["job_id"]);
    musiclib_core::testing::drain_jobs(&app.library).await;

    let (status, job) = app
        .get(
            &format!("/api/v1/jobs/{}", queued["job_id"].as_str().unwrap()),
            Some(&admin),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(job["kind"], "reindex_library", "{job}");
    assert_eq!(job["state"], "succeeded", "{job}");
    let result = &job["result"];
    assert_eq!(result["total"], 2, "{job}");
    assert_eq!(result["done"], 2, "{job}");
    assert_eq!(result["changed"], 1, "{job}");
    assert_eq!(result["failed"], 0, "{job}");

    // The admin's list of jobs: newest first, by state and by kind, admins only.
    let (status, _) = app.get("/api/v1/admin/jobs", Some(&user)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, all) = app.get("/api/v1/admin/jobs", Some(&admin)).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    let items = all["items"].as_array().unwrap();
    assert!(
        items.len() >= 3,
        "two uploads' enrichment and the reindex: {all}"
    );
    assert_eq!(items[0]["id"], queued["job_id"], "the newest first: {all}");
    let created: Vec<&str> = items
        .iter()
        .map(|job| job["created_at"].as_str().unwrap())
        .collect();
    assert!(
        created.windows(2).all(|pair| pair[0] >= pair[1]),
        "{created:?}"
    );
    let (_, reindexes) = app
        .get(
            "/api/v1/admin/jobs?kind=reindex_library&state=succeeded",
            Some(&admin),
        )
        .await;
    assert_eq!(reindexes["total"], 1, "{reindexes}");
    assert_eq!(reindexes["items"][0]["id"], queued["job_id"]);
    let (_, none) = app
        .get(
            "/api/v1/admin/jobs?kind=reindex_library&state=failed",
            Some(&admin),
        )
        .await;
    assert_eq!(none["total"], 0, "{none}");
    let (_, paged) = app
        .get("/api/v1/admin/jobs?limit=1&offset=1", Some(&admin))
        .await;
    assert_eq!(paged["items"].as_array().unwrap().len(), 1, "{paged}");
    assert_eq!(paged["items"][0]["id"], items[1]["id"]);
    let (status, body) = app
        .get("/api/v1/admin/jobs?state=sleeping", Some(&admin))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    let (_, restored) = app
        .get(&format!("/api/v1/tracks/{}", ids[0]), Some(&admin))
        .await;
    assert_eq!(restored["title"], "Mañana Dorada");
    assert_eq!(restored["genre"], "Latin");
    let (_, manual) = app
        .get(&format!("/api/v1/tracks/{}", ids[1]), Some(&admin))
        .await;
    assert_eq!(manual["title"], "Mine");
    assert_eq!(manual["metadata_status"], "manual");
    let (_, found) = app
        .get("/api/v1/search/library?q=dorada", Some(&admin))
        .await;
    assert_eq!(found["tracks"].as_array().unwrap().len(), 1, "{found}");
}

both_backends!(services reindex, reindex_rereads_files);
