//! Who may do what, as a table: every operation that needs a permission, called by an
//! anonymous client, the owner of the thing, another user, and an admin, each answered with
//! its expected status. The adapter checks nothing itself (core decides, see
//! `musiclib_core::auth::policy`), so this table is core's policy seen through the API.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::{json, Value};

use crate::api::App;

/// The callers of every row, in this order.
const ROLES: [&str; 4] = ["anonymous", "owner", "other user", "admin"];

/// What the table's rows address: each role gets its own copy of what a row destroys.
struct World {
    /// Tracks uploaded by the owner, one per role.
    tracks: Vec<String>,
    /// A job the owner queued.
    job: String,
    /// The owner's private playlists, one per role, and a public one.
    private: Vec<String>,
    public: String,
    owner_id: String,
    /// Accounts to disable and delete, one per role.
    accounts: Vec<String>,
    /// The owner's queued downloads, one per role.
    downloads: Vec<String>,
}

struct Row {
    operation: &'static str,
    method: &'static str,
    path: fn(&World, usize) -> String,
    body: Option<Value>,
    /// Statuses for anonymous, owner, other user, admin.
    expect: [u16; 4],
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            operation: "read the catalogue",
            method: "GET",
            path: |_, _| "/api/v1/tracks".into(),
            body: None,
            expect: [401, 200, 200, 200],
        },
        Row {
            operation: "read a track",
            method: "GET",
            path: |w, _| format!("/api/v1/tracks/{}", w.tracks[0]),
            body: None,
            expect: [401, 200, 200, 200],
        },
        Row {
            operation: "edit a track",
            method: "PATCH",
            path: |w, _| format!("/api/v1/tracks/{}", w.tracks[0]),
            body: Some(json!({"title": "Edited"})),
            expect: [401, 200, 403, 200],
        },
        Row {
            operation: "set a track's metadata",
            method: "PUT",
            path: |w, _| format!("/api/v1/tracks/{}/metadata", w.tracks[0]),
            body: Some(json!({"title": "Manual"})),
            expect: [401, 200, 403, 200],
        },
        Row {
            operation: "delete a track",
            method: "DELETE",
            path: |w, role| format!("/api/v1/tracks/{}", w.tracks[role]),
            body: None,
            expect: [401, 204, 403, 204],
        },
        Row {
            operation: "read a download",
            method: "GET",
            path: |w, _| format!("/api/v1/downloads/{}", w.downloads[0]),
            body: None,
            expect: [401, 200, 404, 200],
        },
        Row {
            operation: "cancel a download",
            method: "POST",
            path: |w, role| format!("/api/v1/downloads/{}/cancel", w.downloads[role]),
            body: None,
            expect: [401, 200, 404, 200],
        },
        Row {
            operation: "read a job",
            method: "GET",
            path: |w, _| format!("/api/v1/jobs/{}", w.job),
            body: None,
            expect: [401, 200, 404, 200],
        },
        Row {
            operation: "scan a source",
            method: "POST",
            path: |_, _| "/api/v1/sources/local_folder/scan".into(),
            body: Some(json!({})),
            expect: [401, 403, 403, 202],
        },
        Row {
            operation: "reveal one's app password",
            method: "GET",
            path: |_, _| "/api/v1/users/me/legacy-password".into(),
            body: None,
            expect: [401, 200, 200, 200],
        },
        Row {
            operation: "rotate the owner's app password",
            method: "POST",
            path: |w, _| format!("/api/v1/admin/users/{}/legacy-password", w.owner_id),
            body: Some(json!({})),
            expect: [401, 200, 403, 200],
        },
        Row {
            operation: "list accounts",
            method: "GET",
            path: |_, _| "/api/v1/admin/users".into(),
            body: None,
            expect: [401, 403, 403, 200],
        },
        Row {
            operation: "add an account",
            method: "POST",
            path: |_, _| "/api/v1/admin/users".into(),
            body: Some(json!({"username": "newcomer", "password": "long enough"})),
            expect: [401, 403, 403, 201],
        },
        Row {
            operation: "disable an account",
            method: "PATCH",
            path: |w, role| format!("/api/v1/admin/users/{}", w.accounts[role]),
            body: Some(json!({"disabled": true})),
            expect: [401, 403, 403, 200],
        },
        Row {
            operation: "delete an account",
            method: "DELETE",
            path: |w, role| format!("/api/v1/admin/users/{}", w.accounts[role]),
            body: None,
            expect: [401, 403, 403, 204],
        },
        Row {
            operation: "read the service report",
            method: "GET",
            path: |_, _| "/api/v1/admin/services".into(),
            body: None,
            expect: [401, 403, 403, 200],
        },
        Row {
            operation: "read the source registry",
            method: "GET",
            path: |_, _| "/api/v1/admin/sources".into(),
            body: None,
            expect: [401, 403, 403, 200],
        },
        Row {
            operation: "read server settings",
            method: "GET",
            path: |_, _| "/api/v1/admin/settings".into(),
            body: None,
            expect: [401, 403, 403, 200],
        },
        Row {
            operation: "read storage statistics",
            method: "GET",
            path: |_, _| "/api/v1/storage".into(),
            body: None,
            expect: [401, 200, 200, 200],
        },
        Row {
            operation: "check every stored file",
            method: "POST",
            path: |_, _| "/api/v1/storage/broken/check".into(),
            body: Some(json!({})),
            expect: [401, 403, 403, 202],
        },
        Row {
            operation: "clean up storage",
            method: "POST",
            path: |_, _| "/api/v1/storage/cleanup".into(),
            body: Some(json!({"dry_run": true})),
            expect: [401, 403, 403, 202],
        },
        Row {
            operation: "reindex",
            method: "POST",
            path: |_, _| "/api/v1/admin/reindex".into(),
            body: Some(json!({})),
            expect: [401, 403, 403, 202],
        },
        Row {
            operation: "change server settings",
            method: "PATCH",
            path: |_, _| "/api/v1/admin/settings".into(),
            body: Some(json!({})),
            expect: [401, 403, 403, 501],
        },
        Row {
            operation: "change a source",
            method: "PATCH",
            path: |_, _| "/api/v1/admin/sources/local_folder".into(),
            body: Some(json!({})),
            expect: [401, 403, 403, 501],
        },
        Row {
            operation: "read a private playlist",
            method: "GET",
            path: |w, _| format!("/api/v1/playlists/{}", w.private[0]),
            body: None,
            expect: [401, 200, 404, 404],
        },
        Row {
            operation: "read a public playlist",
            method: "GET",
            path: |w, _| format!("/api/v1/playlists/{}", w.public),
            body: None,
            expect: [401, 200, 200, 200],
        },
        Row {
            operation: "rename a public playlist",
            method: "PATCH",
            path: |w, _| format!("/api/v1/playlists/{}", w.public),
            body: Some(json!({"name": "Renamed"})),
            expect: [401, 200, 403, 403],
        },
        Row {
            operation: "add to a public playlist",
            method: "POST",
            path: |w, _| format!("/api/v1/playlists/{}/tracks", w.public),
            body: None,
            expect: [401, 200, 403, 403],
        },
        Row {
            operation: "delete a private playlist",
            method: "DELETE",
            path: |w, role| format!("/api/v1/playlists/{}", w.private[role]),
            body: None,
            expect: [401, 204, 404, 404],
        },
        Row {
            operation: "stream a track",
            method: "GET",
            path: |w, _| format!("/api/v1/stream/{}", w.tracks[0]),
            body: None,
            expect: [401, 409, 409, 409],
        },
        Row {
            operation: "sync",
            method: "GET",
            path: |_, _| "/api/v1/sync/changes?since=0".into(),
            body: None,
            expect: [401, 200, 200, 200],
        },
    ]
}

async fn world(app: &App, owner: &str, owner_id: &str) -> World {
    // Tracks without audio (placeholders: streaming them is a 409), uploaded by the owner.
    musiclib_core::testing::insert_synthetic_tracks(&app.library, 4).await;
    let owner_user = musiclib_core::UserId::parse(owner_id).unwrap();
    musiclib_core::testing::set_uploader(&app.library, &owner_user).await;
    let (_, tracks) = app.get("/api/v1/tracks?limit=4", Some(owner)).await;
    let tracks: Vec<String> = tracks["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|track| track["id"].as_str().unwrap().to_string())
        .collect();
    for track in &tracks {
        musiclib_core::testing::make_placeholder(
            &app.library,
            &musiclib_core::TrackId::parse(track).unwrap(),
        )
        .await;
    }
    let (status, job) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{}/metadata/enrich", tracks[0]),
            Some(owner),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let mut private = Vec::new();
    for role in ROLES {
        let (status, playlist) = app
            .json(
                "POST",
                "/api/v1/playlists",
                Some(owner),
                json!({"name": format!("for {role}")}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{playlist}");
        private.push(playlist["id"].as_str().unwrap().to_string());
    }
    let (_, public) = app
        .json(
            "POST",
            "/api/v1/playlists",
            Some(owner),
            json!({"name": "everyone's", "public": true}),
        )
        .await;
    let mut accounts = Vec::new();
    for role in 0..ROLES.len() {
        let token = app.register(&format!("account-{role}")).await;
        let (_, me) = app.get("/api/v1/users/me", Some(&token)).await;
        accounts.push(me["id"].as_str().unwrap().to_string());
    }
    let mut downloads = Vec::new();
    for role in 0..ROLES.len() {
        let (status, created) = app
            .json(
                "POST",
                "/api/v1/downloads",
                Some(owner),
                json!({"source": "subsonic", "source_id": format!("s{role}")}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        downloads.push(created["download"]["id"].as_str().unwrap().to_string());
    }
    World {
        accounts,
        downloads,
        tracks,
        job: job["job_id"].as_str().unwrap().to_string(),
        private,
        public: public["id"].as_str().unwrap().to_string(),
        owner_id: owner_id.to_string(),
    }
}

both_backends!(
    every_operation_by_every_role,
    |backend: Backend| async move {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().to_path_buf();
        let audio = musiclib_core::testing::wav_tone(1);
        let songs: Vec<(String, String)> = (0..ROLES.len())
            .map(|role| (format!("s{role}"), format!("Song {role}")))
            .collect();
        let songs: Vec<(&str, &str, Option<u64>)> = songs
            .iter()
            .map(|(id, title)| (id.as_str(), title.as_str(), None))
            .collect();
        let subsonic = musiclib_core::testing::subsonic_server(&songs, &audio).await;
        let url = subsonic.uri();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.local_media_import_path = Some(path);
                config.remote.subsonic = Some(musiclib_core::config::SubsonicSourceConfig {
                    url,
                    username: "friend".into(),
                    password: "app-password".into(),
                });
            })
            .build()
            .await;
        let app = App::new(library).await;
        let owner = app.register("owner").await;
        let other = app.register("other").await;
        let admin = app.admin_token().await;
        let (_, me) = app.get("/api/v1/users/me", Some(&owner)).await;
        let world = world(&app, &owner, me["id"].as_str().unwrap()).await;
        let tokens = [
            None,
            Some(owner.as_str()),
            Some(other.as_str()),
            Some(admin.as_str()),
        ];

        let mut failures = Vec::new();
        for row in rows() {
            for (role, token) in tokens.iter().enumerate() {
                let path = (row.path)(&world, role);
                let body = match (&row.body, row.operation) {
                    (_, "add to a public playlist") => {
                        Some(json!({"track_ids": [world.tracks[0]]}))
                    }
                    (body, _) => body.clone(),
                };
                let mut request = Request::builder().method(row.method).uri(&path);
                if let Some(token) = token {
                    request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
                }
                let request = match body {
                    Some(body) => request
                        .header(header::CONTENT_TYPE, "application/json")
                        .body(Body::from(body.to_string())),
                    None => request.body(Body::empty()),
                }
                .unwrap();
                let (status, answer) = app.call(request).await;
                if status.as_u16() != row.expect[role] {
                    failures.push(format!(
                        "{} by {}: {} {path} answered {status} (expected {}): {answer}",
                        row.operation, ROLES[role], row.method, row.expect[role]
                    ));
                } else if !status.is_success() {
                    // Every refusal names its reason in the one error shape.
                    assert!(
                        answer["error"]["code"].is_string(),
                        "{} by {}: {answer}",
                        row.operation,
                        ROLES[role]
                    );
                }
            }
        }
        assert!(
            failures.is_empty(),
            "permission table:\n{}",
            failures.join("\n")
        );
    }
);
