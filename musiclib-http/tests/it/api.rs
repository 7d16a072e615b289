//! Auth, error, paging, upload, scan and health rules of `/api/v1`.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use musiclib_core::testing::TestLibrary;
use serde_json::{json, Value};
use tower::ServiceExt;

pub(crate) struct App {
    router: axum::Router,
    pub(crate) library: TestLibrary,
}

impl App {
    pub(crate) async fn new(library: TestLibrary) -> App {
        App {
            router: musiclib_http::router(library.library.clone()),
            library,
        }
    }

    pub(crate) async fn call(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, body)
    }

    pub(crate) async fn raw(
        &self,
        request: Request<Body>,
    ) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, headers, bytes.to_vec())
    }

    pub(crate) async fn json(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        body: Value,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.call(request.body(Body::from(body.to_string())).unwrap())
            .await
    }

    pub(crate) async fn get(&self, uri: &str, token: Option<&str>) -> (StatusCode, Value) {
        let mut request = Request::get(uri);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.call(request.body(Body::empty()).unwrap()).await
    }

    pub(crate) async fn register(&self, name: &str) -> String {
        let (status, body) = self
            .json(
                "POST",
                "/api/v1/auth/register",
                None,
                json!({"username": name, "password": "long enough"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["access_token"].as_str().unwrap().to_string()
    }

    pub(crate) async fn admin_token(&self) -> String {
        self.library
            .accounts()
            .create_user("root", "root-password", true)
            .await
            .unwrap();
        let (status, body) = self
            .json(
                "POST",
                "/api/v1/auth/login",
                None,
                json!({"username": "root", "password": "root-password"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        body["access_token"].as_str().unwrap().to_string()
    }

    pub(crate) async fn upload(
        &self,
        token: &str,
        name: &str,
        bytes: &[u8],
    ) -> (StatusCode, Value) {
        let boundary = "musiclib-test-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let request = Request::post("/api/v1/tracks/upload")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(
                header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(Body::from(body))
            .unwrap();
        self.call(request).await
    }
}

fn assert_error(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|message| !message.is_empty()),
        "{body}"
    );
}

both_backends!(auth_and_errors, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;

    let (status, body) = app.get("/api/v1/users/me", Some(&token)).await;
    assert_eq!(
        (
            status,
            body["username"].as_str(),
            body["is_admin"].as_bool()
        ),
        (StatusCode::OK, Some("alice"), Some(false))
    );
    let (status, body) = app.get("/api/v1/users/me", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthenticated");
    let (status, _) = app.get("/api/v1/users/me", Some("not-a-token")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // `?token=` is for media endpoints only.
    let (status, _) = app
        .get(&format!("/api/v1/tracks?token={token}"), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, body) = app
        .json(
            "POST",
            "/api/v1/auth/register",
            None,
            json!({"username": "ALICE", "password": "long enough"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_error(&body, "conflict");
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/auth/register",
            None,
            json!({"username": "bob", "password": "short"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["field"], "password");
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/auth/register",
            None,
            json!({"username": "bob"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // Registration never makes a superuser, whatever the body asks.
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/auth/register",
            None,
            json!({"username": "mallory", "password": "long enough", "is_superuser": true, "is_admin": true}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mallory = body["access_token"].as_str().unwrap().to_string();
    let (status, me) = app.get("/api/v1/users/me", Some(&mallory)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (me["is_admin"].as_bool(), me["is_superuser"].as_bool()),
        (Some(false), Some(false)),
        "{me}"
    );
    let (status, _) = app.get("/api/v1/admin/users", Some(&mallory)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = app
        .call(
            Request::post("/api/v1/auth/login")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{not json"))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["field"], "body");
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/auth/login",
            None,
            json!({"username": "alice", "password": "wrong password"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // OAuth2 password-flow clients log in with a form.
    let request = Request::post("/api/v1/auth/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(
            "grant_type=password&username=alice&password=long+enough",
        ))
        .unwrap();
    let (status, body) = app.call(request).await;
    assert_eq!(
        (status, body["token_type"].as_str()),
        (StatusCode::OK, Some("bearer"))
    );

    // Paging and query validation name the parameter.
    let (status, body) = app.get("/api/v1/tracks?limit=201", Some(&token)).await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("limit"))
    );
    let (status, body) = app.get("/api/v1/tracks?year=nineteen", Some(&token)).await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("year"))
    );
    let (status, body) = app.get("/api/v1/tracks?sort=-bogus", Some(&token)).await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("sort"))
    );
    let (status, body) = app.get("/api/v1/tracks", Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            body["total"].as_i64(),
            body["limit"].as_i64(),
            body["offset"].as_i64()
        ),
        (Some(0), Some(50), Some(0))
    );
    let (status, body) = app
        .get(
            "/api/v1/tracks/00000000-0000-0000-0000-000000000000",
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
    let (status, _) = app.get("/api/v1/nothing-here", Some(&token)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Admin-only operations.
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/sources/local_folder/scan",
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "forbidden");
    let admin = app.admin_token().await;
    let (status, body) = app
        .json("PATCH", "/api/v1/admin/settings", Some(&admin), json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED);
    assert_error(&body, "not_supported");
});

both_backends!(registration_closed_answers_403, |backend| async move {
    let library = TestLibrary::builder(backend)
        .config(|config| config.allow_registration = false)
        .build()
        .await;
    let app = App::new(library).await;
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/auth/register",
            None,
            json!({"username": "x", "password": "long enough"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "forbidden");
});

both_backends!(services upload_rules, |backend| async move {
    let corpus = musiclib_core::testing::corpus();
    let library = TestLibrary::builder(backend)
        .config(|config| config.max_upload_bytes = 12_000_000)
        .build()
        .await;
    let app = App::new(library).await;
    let token = app.register("alice").await;
    let mp3 = std::fs::read(
        corpus
            .join("library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3"),
    )
    .unwrap();

    let (status, first) = app.upload(&token, "a.mp3", &mp3).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["metadata_status"], "pending");
    assert_eq!(first["source"], "upload");
    assert_eq!(first["title"], "Mañana Dorada");
    assert_eq!(first["format"], "mp3");
    let (status, second) = app.upload(&token, "again.mp3", &mp3).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(second["id"], first["id"]);

    let (status, body) = app.upload(&token, "notes.mp3", b"plain text").await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("file"))
    );
    let flac = std::fs::read(
        corpus.join("library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac"),
    )
    .unwrap();
    let (status, body) = app.upload(&token, "big.flac", &flac).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_error(&body, "payload_too_large");

    let (_, list) = app.get("/api/v1/tracks?source=upload", Some(&token)).await;
    assert_eq!(list["total"], 1);
    let id = first["id"].as_str().unwrap();
    let (status, _) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{id}/metadata/enrich"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, body) = app
        .get("/api/v1/search/library?q=manana", Some(&token))
        .await;
    assert_eq!(
        (status, body["tracks"].as_array().map(Vec::len)),
        (StatusCode::OK, Some(1))
    );
    let (status, body) = app
        .json(
            "PUT",
            &format!("/api/v1/tracks/{id}/metadata"),
            Some(&token),
            json!({"title": "Renamed", "artist": "Someone"}),
        )
        .await;
    assert_eq!(
        (status, body["metadata_status"].as_str()),
        (StatusCode::OK, Some("manual"))
    );
    let (status, _) = app
        .json(
            "PATCH",
            &format!("/api/v1/tracks/{id}"),
            Some(&token),
            json!({"year": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = app
        .call(
            Request::delete(format!("/api/v1/tracks/{id}"))
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
});

both_backends!(scan_is_queued_and_503_without_queue, |backend| async move {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().to_path_buf();
    let library = TestLibrary::builder(backend)
        .config(move |config| config.local_media_import_path = Some(path))
        .build()
        .await;
    let app = App::new(library).await;
    let admin = app.admin_token().await;
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/sources/local_folder/scan",
            Some(&admin),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let job_id = body["job_id"].as_str().unwrap().to_string();
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (status, job) = app
        .get(&format!("/api/v1/jobs/{job_id}"), Some(&admin))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (job["kind"].as_str(), job["state"].as_str()),
        (Some("scan_local_folder"), Some("succeeded")),
        "{job}"
    );
    assert_eq!(job["result"]["seen"], 0);

    let path = folder.path().to_path_buf();
    let down = TestLibrary::builder(backend)
        .config(move |config| config.local_media_import_path = Some(path))
        .unavailable_queue()
        .build()
        .await;
    let app = App::new(down).await;
    let admin = app.admin_token().await;
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/sources/local_folder/scan",
            Some(&admin),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_error(&body, "queue_unavailable");
});

both_backends!(health_and_openapi, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    for path in ["/health", "/api/v1/health"] {
        let (status, body) = app.get(path, None).await;
        assert_eq!(
            (status, body["status"].as_str()),
            (StatusCode::OK, Some("ok"))
        );
    }
    let (status, doc) = app.get("/api/v1/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    for path in [
        "/tracks",
        "/tracks/upload",
        "/tracks/{id}",
        "/auth/login",
        "/search/library",
        "/sources/{source}/scan",
        "/jobs/{id}",
        "/tracks/{id}/lyrics",
        "/tracks/{id}/lyrics/refetch",
        "/storage",
        "/storage/duplicates",
        "/storage/broken",
        "/storage/broken/check",
        "/storage/missing-metadata",
        "/storage/cleanup",
        "/settings",
        "/settings/scrobbling",
        "/users/me/password",
        "/admin/users",
        "/admin/users/{id}",
        "/admin/services",
        "/admin/sources",
        "/admin/settings",
        "/admin/reindex",
        "/sources",
        "/search",
        "/sources/{source}/search",
        "/tracks/remote",
        "/tracks/{id}/materialize",
        "/downloads",
        "/downloads/{id}",
        "/radio",
        "/radio/next",
        "/tracks/{id}/similar",
        "/artists/{id}/similar",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI document"
        );
    }
    assert!(
        doc["components"]["schemas"].get("LyricsOut").is_some(),
        "LyricsOut missing from the OpenAPI components"
    );
    // A database outage is a 503, not a hang or a 500.
    musiclib_core::testing::close_database(&app.library).await;
    let (status, body) = app.get("/health", None).await;
    assert_eq!(
        (status, body["database"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("unreachable"))
    );
});

#[test]
fn openapi_document_is_generated() {
    let doc = musiclib_http::openapi();
    assert!(doc.paths.paths.contains_key("/tracks"));
}

both_backends!(cursor_paging, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    musiclib_core::testing::insert_library_tracks(&app.library, 45, 5).await;
    // Some tracks added a second earlier, some later: ties and distinct times to sort by.
    musiclib_core::testing::execute(
        &app.library,
        "UPDATE tracks SET created_at = created_at - 1000000 WHERE track_number <= 3",
        &[],
    )
    .await;
    musiclib_core::testing::execute(
        &app.library,
        "UPDATE tracks SET created_at = created_at + 1000000 WHERE track_number >= 8",
        &[],
    )
    .await;
    let token = app.register("pager").await;
    // `-created_at`: newest first, ties by id (descending too): exactly `created_at` reversed.
    let keys = |page: &Value| -> Vec<(i64, String)> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|track| {
                let created = track["created_at"].as_str().unwrap();
                (
                    musiclib_core::Timestamp::parse_rfc3339(created)
                        .unwrap()
                        .as_micros(),
                    track["id"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let (_, newest) = app
        .get("/api/v1/tracks?sort=-created_at&limit=200", Some(&token))
        .await;
    let (_, oldest) = app
        .get("/api/v1/tracks?sort=created_at&limit=200", Some(&token))
        .await;
    let (newest, mut oldest) = (keys(&newest), keys(&oldest));
    assert_eq!(newest.len(), 45);
    assert!(
        newest.windows(2).all(|pair| pair[0] > pair[1]),
        "not newest first: {newest:?}"
    );
    assert!(
        newest.windows(2).any(|pair| pair[0].0 > pair[1].0),
        "no two times differ: {newest:?}"
    );
    oldest.reverse();
    assert_eq!(oldest, newest);
    for list in ["tracks?sort=-created_at&", "albums?", "artists?"] {
        // Offsets and cursors walk the same rows; a cursor page has no offset.
        let (status, whole) = app
            .get(&format!("/api/v1/{list}limit=200"), Some(&token))
            .await;
        assert_eq!(status, StatusCode::OK, "{whole}");
        let ids = |page: &Value| -> Vec<String> {
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item["id"].as_str().unwrap().to_string())
                .collect()
        };
        let mut walked = Vec::new();
        let mut cursor = String::new();
        loop {
            let (status, page) = app
                .get(
                    &format!("/api/v1/{list}limit=2&cursor={cursor}"),
                    Some(&token),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{page}");
            assert_eq!(
                (page["offset"].clone(), page["total"].clone()),
                (Value::Null, whole["total"].clone())
            );
            walked.extend(ids(&page));
            match page["next_cursor"].as_str() {
                Some(next) => cursor = next.to_string(),
                None => break,
            }
        }
        assert_eq!(walked, ids(&whole), "{list}");
        assert!(
            whole.get("next_cursor").is_none(),
            "offset pages carry no cursor"
        );
    }
    // With a cursor, an offset skips that many rows after its place.
    let ids = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, whole) = app.get("/api/v1/tracks?limit=200", Some(&token)).await;
    let (status, skipped) = app
        .get("/api/v1/tracks?cursor=&offset=3&limit=2", Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "{skipped}");
    assert_eq!(ids(&skipped), ids(&whole)[3..5].to_vec());
    let next = skipped["next_cursor"].as_str().unwrap();
    let (_, after) = app
        .get(
            &format!("/api/v1/tracks?cursor={next}&limit=1"),
            Some(&token),
        )
        .await;
    assert_eq!(ids(&after), ids(&whole)[5..6].to_vec());
    let (status, past) = app
        .get("/api/v1/tracks?cursor=&offset=100000", Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        ids(&past).is_empty() && past.get("next_cursor").is_none(),
        "{past}"
    );
    for (query, field) in [
        ("tracks?cursor=&offset=-1", "offset"),
        ("tracks?cursor=bm9wZQ", "cursor"),
        ("tracks?sort=year&cursor=", "cursor"),
        ("tracks?cursor=&limit=201", "limit"),
    ] {
        let (status, body) = app.get(&format!("/api/v1/{query}"), Some(&token)).await;
        assert_eq!(
            (status, body["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{query}: {body}"
        );
    }
});

both_backends!(tracks_by_ids, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    musiclib_core::testing::insert_library_tracks(&app.library, 6, 2).await;
    let token = app.register("reader").await;
    let (_, all) = app.get("/api/v1/tracks?sort=title", Some(&token)).await;
    let ids: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|track| track["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6, "{all}");
    // In the order asked, a repeat kept, an unknown id left out.
    let unknown = "00000000-0000-0000-0000-000000000000";
    let asked = [ids[4], ids[0], unknown, ids[4], ids[2]];
    let (status, page) = app
        .get(
            &format!("/api/v1/tracks?ids={}", asked.join(",")),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let got: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|track| track["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[4], ids[0], ids[4], ids[2]]);
    assert_eq!(page["total"], 4);

    for bad in [
        "ids=".to_string(),
        "ids=not-an-id".to_string(),
        format!("ids={}&sort=title", ids[0]),
        format!("ids={}", vec![ids[0]; 201].join(",")),
    ] {
        let (status, body) = app
            .get(&format!("/api/v1/tracks?{bad}"), Some(&token))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["error"]["field"], "ids", "{bad}: {body}");
    }
    let (status, _) = app
        .get(&format!("/api/v1/tracks?ids={}", ids[0]), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
});

both_backends!(genres_with_counts, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    musiclib_core::testing::insert_library_tracks(&app.library, 40, 3).await;
    let token = app.register("browser").await;
    let (status, genres) = app.get("/api/v1/genres", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{genres}");
    let genres = genres.as_array().unwrap();
    assert!(!genres.is_empty());
    let names: Vec<String> = genres
        .iter()
        .map(|genre| genre["name"].as_str().unwrap().to_lowercase())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "by name");
    // Each genre's counts are what the filters of the lists find.
    for genre in genres {
        let name: String =
            form_urlencoded::byte_serialize(genre["name"].as_str().unwrap().as_bytes()).collect();
        let (_, tracks) = app
            .get(
                &format!("/api/v1/tracks?genre={name}&limit=1"),
                Some(&token),
            )
            .await;
        assert_eq!(tracks["total"], genre["track_count"], "{genre}");
        let (_, albums) = app
            .get(
                &format!("/api/v1/albums?genre={name}&limit=1"),
                Some(&token),
            )
            .await;
        assert!(
            albums["total"].as_i64().unwrap() <= genre["album_count"].as_i64().unwrap(),
            "{genre}: {albums}"
        );
    }
    let (status, _) = app.get("/api/v1/genres", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
});

both_backends!(services replay_gain_of_tracks, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;
    // Tags' ReplayGain (ID3v2 TXXX), as TrackOut says it.
    let dir = tempfile::tempdir().unwrap();
    let tagged = dir.path().join("tagged.mp3");
    std::fs::copy(
        musiclib_core::testing::corpus()
            .join("library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3"),
        &tagged,
    )
    .unwrap();
    musiclib_core::testing::write_tag_fields(
        &tagged,
        &[
            ("REPLAYGAIN_TRACK_GAIN", "-7.25 dB"),
            ("REPLAYGAIN_TRACK_PEAK", "0.977"),
            ("REPLAYGAIN_ALBUM_GAIN", "-6.5 dB"),
            ("REPLAYGAIN_ALBUM_PEAK", "0.999"),
        ],
    );
    let (status, track) = app
        .upload(&token, "tagged.mp3", &std::fs::read(&tagged).unwrap())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{track}");
    assert_eq!(
        track["replay_gain"],
        json!({"track_gain": -7.25, "track_peak": 0.977, "album_gain": -6.5, "album_peak": 0.999})
    );
    // A file without: every field null until measured, then the track's (no album).
    let (_, plain) = app
        .upload(&token, "tone.wav", &musiclib_core::testing::wav_tone(3))
        .await;
    assert_eq!(
        plain["replay_gain"],
        json!({"track_gain": null, "track_peak": null, "album_gain": null, "album_peak": null})
    );
    let report = app.library.media().measure_loudness(10).await.unwrap();
    assert_eq!(report.measured, 1, "{report:?}");
    let id = plain["id"].as_str().unwrap();
    let (status, measured) = app.get(&format!("/api/v1/tracks/{id}"), Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{measured}");
    let gain = &measured["replay_gain"];
    assert!(gain["track_gain"].as_f64().is_some_and(|gain| (-7.0..-4.0).contains(&gain)), "{gain}");
    assert!(gain["track_peak"].as_f64().is_some_and(|peak| (peak - 0.3662).abs() < 0.001), "{gain}");
    assert!(gain["album_gain"].is_null() && gain["album_peak"].is_null(), "{gain}");
    let (_, tagged_again) = app
        .get(&format!("/api/v1/tracks/{}", track["id"].as_str().unwrap()), Some(&token))
        .await;
    assert_eq!(tagged_again["replay_gain"]["track_gain"], -7.25);
});
