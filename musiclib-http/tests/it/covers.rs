//! Covers and fingerprint candidates over HTTP, with a mock AcoustID and Cover Art Archive.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use base64::Engine as _;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::api::App;

const RELEASE_GROUP: &str = "0071b7aa-2cea-433f-89ce-4851fb983174";

fn fixture(relative: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn front_image() -> Vec<u8> {
    let doc: Value =
        serde_json::from_str(&fixture("coverartarchive/front_image_250.json")).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(doc["body_base64"].as_str().unwrap())
        .unwrap()
}

async fn services() -> (MockServer, MockServer) {
    let acoustid = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v2/lookup"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Content-Type", "application/json; charset=UTF-8")
                .set_body_string(fixture("acoustid/lookup_high_score.json")),
        )
        .mount(&acoustid)
        .await;
    let archive = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/release-group/{RELEASE_GROUP}/front")))
        .respond_with(
            ResponseTemplate::new(307)
                .insert_header("Location", format!("{}/img/front.jpg", archive.uri())),
        )
        .mount(&archive)
        .await;
    Mock::given(method("GET"))
        .and(path("/img/front.jpg"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Content-Type", "image/jpeg")
                .set_body_bytes(front_image()),
        )
        .mount(&archive)
        .await;
    (acoustid, archive)
}

fn get(uri: &str, token: Option<&str>) -> axum::http::request::Builder {
    let builder = Request::get(uri);
    match token {
        Some(token) => builder.header(header::AUTHORIZATION, format!("Bearer {token}")),
        None => builder,
    }
}

async fn covers_and_candidates(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let (acoustid, archive) = services().await;
    let (acoustid_uri, archive_uri) = (acoustid.uri(), archive.uri());
    let library = TestLibrary::builder(backend)
        .config(move |config| {
            config.enrichment.acoustid_api_key = Some("key".into());
            config.enrichment.acoustid_base_url = acoustid_uri;
            config.enrichment.coverart_base_url = archive_uri;
            config.enrichment.acoustid_requests_per_second = 3.0;
        })
        .build()
        .await;
    let app = App::new(library).await;
    let token = app.register("alice").await;
    let mp3 = std::fs::read(corpus.join("library/Incoming/Aurora Lane - Polar Drift.mp3")).unwrap();
    let (status, track) = app.upload(&token, "Polar Drift.mp3", &mp3).await;
    assert_eq!(status, StatusCode::CREATED, "{track}");
    let id = track["id"].as_str().unwrap().to_string();
    assert_eq!(track["has_cover"], false);
    // Not yet enriched: no cover, a JSON 404.
    let (status, body) = app
        .get(&format!("/api/v1/tracks/{id}/cover"), Some(&token))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "not_found", "{body}");

    musiclib_core::testing::drain_jobs(&app.library).await;
    let (_, track) = app.get(&format!("/api/v1/tracks/{id}"), Some(&token)).await;
    assert_eq!(track["metadata_status"], "enriched", "{track}");
    assert_eq!(track["has_cover"], true, "{track}");
    let album_id = track["album_id"].as_str().unwrap().to_string();
    let (_, album) = app
        .get(&format!("/api/v1/albums/{album_id}"), Some(&token))
        .await;
    assert_eq!(album["has_cover"], true, "{album}");

    // The cover, by bearer and by ?token=, for the track and the album.
    for uri in [
        format!("/api/v1/tracks/{id}/cover"),
        format!("/api/v1/albums/{album_id}/cover"),
    ] {
        let (status, headers, bytes) = app
            .raw(get(&uri, Some(&token)).body(Body::empty()).unwrap())
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "image/jpeg");
        assert_eq!(bytes, front_image());
        let etag = headers[header::ETAG].to_str().unwrap().to_string();
        let last_modified = headers[header::LAST_MODIFIED].to_str().unwrap().to_string();

        let (status, _, bytes) = app
            .raw(
                get(&format!("{uri}?token={token}"), None)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!((status, bytes.len()), (StatusCode::OK, front_image().len()));

        // Revalidation.
        let request = get(&uri, Some(&token))
            .header(header::IF_NONE_MATCH, &etag)
            .body(Body::empty())
            .unwrap();
        let (status, headers, bytes) = app.raw(request).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert!(bytes.is_empty());
        assert_eq!(headers[header::ETAG], etag.as_str());
        let request = get(&uri, Some(&token))
            .header(header::IF_MODIFIED_SINCE, &last_modified)
            .body(Body::empty())
            .unwrap();
        assert_eq!(app.raw(request).await.0, StatusCode::NOT_MODIFIED);
        let request = get(&uri, Some(&token))
            .header(header::IF_NONE_MATCH, "\"something-else\"")
            .body(Body::empty())
            .unwrap();
        assert_eq!(app.raw(request).await.0, StatusCode::OK);

        // No token: 401 with the JSON error.
        let (status, body) = app.get(&uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    // The token in the query is for media only.
    let (status, _) = app
        .get(&format!("/api/v1/tracks/{id}?token={token}"), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Thumbnails.
    let (status, headers, bytes) = app
        .raw(
            get(
                &format!("/api/v1/albums/{album_id}/cover?size=32"),
                Some(&token),
            )
            .body(Body::empty())
            .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "image/jpeg");
    assert!(bytes.starts_with(&[0xFF, 0xD8]) && bytes.len() < front_image().len());
    let (status, body) = app
        .get(
            &format!("/api/v1/albums/{album_id}/cover?size=0"),
            Some(&token),
        )
        .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("size")),
        "{body}"
    );
    let (status, body) = app
        .get(
            &format!("/api/v1/albums/{album_id}/cover?size=big"),
            Some(&token),
        )
        .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("size")),
        "{body}"
    );

    // Sizes are snapped to a few buckets: 100 and 120 are one thumbnail (128), whatever
    // sizes clients ask for, an album has at most five.
    let thumbnail = |size: u32| {
        let request = get(
            &format!("/api/v1/albums/{album_id}/cover?size={size}"),
            Some(&token),
        )
        .body(Body::empty())
        .unwrap();
        app.raw(request)
    };
    let (_, first_headers, first) = thumbnail(100).await;
    let (_, second_headers, second) = thumbnail(120).await;
    assert_eq!(first, second);
    assert_eq!(first_headers[header::ETAG], second_headers[header::ETAG]);
    assert!(first_headers[header::ETAG]
        .to_str()
        .unwrap()
        .ends_with("-128\""));
    for size in (16..=1200).step_by(37) {
        let (status, _, _) = thumbnail(size).await;
        assert_eq!(status, StatusCode::OK, "size {size}");
    }
    let album = musiclib_core::AlbumId::parse(&album_id).unwrap();
    let thumbnails =
        musiclib_core::testing::blob_keys(&app.library, &format!("covers/thumbs/{album}/")).await;
    assert!(
        !thumbnails.is_empty() && thumbnails.len() <= 5,
        "{thumbnails:?}"
    );
    // They count toward a bounded cache: with room for one, the others are evicted.
    app.library.media().evict_thumbnails(1).await.unwrap();
    let thumbnails =
        musiclib_core::testing::blob_keys(&app.library, &format!("covers/thumbs/{album}/")).await;
    assert!(thumbnails.len() <= 1, "{thumbnails:?}");
    // Evicted ones are made again on request.
    let (status, _, again) = thumbnail(100).await;
    assert_eq!((status, again), (StatusCode::OK, first));

    // Candidates: every titled recording, best first; nothing applied.
    let (status, candidates) = app
        .get(
            &format!("/api/v1/tracks/{id}/metadata/candidates"),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{candidates}");
    let candidates = candidates.as_array().unwrap();
    assert_eq!(candidates.len(), 2, "{candidates:?}");
    assert_eq!(
        candidates[0]["recording_id"],
        "864455ce-3586-4f6f-8caf-9c6eba11d576"
    );
    assert_eq!(candidates[0]["score"], 0.971834);
    assert_eq!(candidates[0]["album"], "Northern Lights");
    assert_eq!(candidates[1]["title"], "Polar Drift (radio edit)");
    assert_eq!(candidates[1]["album"], "Polar Drift");
    // The stored fingerprint is reused: two lookups in all (enrichment, candidates).
    assert_eq!(acoustid.received_requests().await.unwrap().len(), 2);

    // Apply the second one by hand.
    let (status, edited) = app
        .json("PUT", &format!("/api/v1/tracks/{id}/metadata"), Some(&token), serde_json::json!({
            "title": candidates[1]["title"], "artist": candidates[1]["artist"], "album": candidates[1]["album"],
            "musicbrainz_recording_id": candidates[1]["recording_id"],
        }))
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["metadata_status"], "manual");
    assert_eq!(
        edited["musicbrainz_recording_id"],
        "a7d93e04-6c2b-4f18-9e5a-1b8c3d7f2e60"
    );
    let (status, queued) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{id}/metadata/enrich"),
            Some(&token),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert!(
        queued["note"].as_str().unwrap().contains("manual"),
        "{queued}"
    );

    // Unknown ids.
    let (status, _) = app
        .get(
            "/api/v1/tracks/0190a1b2-0000-7000-8000-000000000000/metadata/candidates",
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

both_backends!(services covers_and_candidates_served, covers_and_candidates);

both_backends!(services candidates_without_a_key, candidates_need_an_api_key);

async fn candidates_need_an_api_key(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;
    let mp3 = std::fs::read(corpus.join("library/Incoming/untitled.mp3")).unwrap();
    let (_, track) = app.upload(&token, "untitled.mp3", &mp3).await;
    let (status, body) = app
        .get(
            &format!(
                "/api/v1/tracks/{}/metadata/candidates",
                track["id"].as_str().unwrap()
            ),
            Some(&token),
        )
        .await;
    // Not configured here: unavailable (501 is for what the API never does).
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("ACOUSTID_API_KEY"));
}

// A playlist's cover reads by `?token=` too (an image element cannot send a header), and
// only for who may read the playlist.
both_backends!(playlist_cover_by_token, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let owner = app.register("owner").await;
    let other = app.register("other").await;
    let (status, playlist) = app
        .json(
            "POST",
            "/api/v1/playlists",
            Some(&owner),
            serde_json::json!({"name": "Mine", "public": false}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{playlist}");
    let uri = format!(
        "/api/v1/playlists/{}/cover",
        playlist["id"].as_str().unwrap()
    );
    let put = Request::put(&uri)
        .header(header::AUTHORIZATION, format!("Bearer {owner}"))
        .header(header::CONTENT_TYPE, "image/jpeg")
        .body(Body::from(front_image()))
        .unwrap();
    let (status, _, _) = app.raw(put).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let by_token = |token: &str| {
        get(&format!("{uri}?token={token}"), None)
            .body(Body::empty())
            .unwrap()
    };
    let (status, headers, bytes) = app.raw(by_token(&owner)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "image/jpeg");
    assert_eq!(bytes, front_image());
    let (status, _, _) = app.raw(by_token(&other)).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another user's private playlist"
    );
    let (status, _, _) = app.raw(by_token("garbage")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
});
