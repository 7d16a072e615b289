//! Users' pictures: uploaded (checked and bounded), or generated from the user id.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::{Backend, TestLibrary};

use crate::api::App;

/// A 1×1 PNG.
fn png() -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
        .unwrap()
}

/// Width and height from a PNG's header (its IHDR chunk comes first).
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

fn put(token: &str, content_type: &str, body: Vec<u8>) -> Request<Body> {
    Request::put("/api/v1/users/me/avatar")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .unwrap()
}

both_backends!(
    a_picture_uploaded_or_generated,
    |backend: Backend| async move {
        let app = App::new(TestLibrary::new(backend).await).await;
        let owner = app.register("pictured").await;
        let viewer = app.register("viewer").await;
        let (_, me) = app.get("/api/v1/users/me", Some(&owner)).await;
        let id = me["id"].as_str().unwrap().to_string();
        let read = |token: String, etag: Option<String>| {
            let mut request = Request::get(format!("/api/v1/users/{id}/avatar?token={token}"));
            if let Some(etag) = etag {
                request = request.header(header::IF_NONE_MATCH, etag);
            }
            request.body(Body::empty()).unwrap()
        };

        // None uploaded: a generated PNG, the same every time.
        let (status, headers, generated) = app.raw(read(viewer.clone(), None)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "image/png");
        assert_eq!(png_size(&generated), (160, 160));
        let (_, _, again) = app.raw(read(owner.clone(), None)).await;
        assert_eq!(again, generated);
        let etag = headers[header::ETAG].to_str().unwrap().to_string();
        let (status, _, _) = app.raw(read(viewer.clone(), Some(etag.clone()))).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);

        // Uploaded: checked as an image, and bounded.
        let (status, _, body) = app
            .raw(put(&owner, "image/png", b"not an image".to_vec()))
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            String::from_utf8_lossy(&body)
        );
        let (status, _, _) = app
            .raw(put(&owner, "image/png", vec![0; 3 * 1024 * 1024]))
            .await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        let uploaded = png();
        let (status, _, _) = app.raw(put(&owner, "image/png", uploaded.clone())).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, headers, body) = app.raw(read(viewer.clone(), Some(etag.clone()))).await;
        assert_eq!(status, StatusCode::OK, "a new picture, a new validator");
        assert_eq!(body, uploaded);
        assert_ne!(headers[header::ETAG].to_str().unwrap(), etag);

        // Removed: the generated one again.
        let (status, _, _) = app
            .raw(
                Request::delete("/api/v1/users/me/avatar")
                    .header(header::AUTHORIZATION, format!("Bearer {owner}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (_, _, body) = app.raw(read(viewer.clone(), None)).await;
        assert_eq!(body, generated);
        let (status, _) = app
            .get(
                "/api/v1/users/0190a000-0000-7000-8000-000000000000/avatar",
                Some(&viewer),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // A replaced picture's blob is gone at once; a deleted account's, with the account.
        let (status, _, _) = app.raw(put(&owner, "image/png", png())).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, _, _) = app.raw(put(&owner, "image/png", png())).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let keys = musiclib_core::testing::blob_keys(&app.library, "avatars/").await;
        assert_eq!(keys.len(), 1, "{keys:?}");
        let admin = app.admin_token().await;
        let (status, _) = app
            .json(
                "DELETE",
                &format!("/api/v1/admin/users/{id}"),
                Some(&admin),
                serde_json::json!(null),
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let keys = musiclib_core::testing::blob_keys(&app.library, "avatars/").await;
        assert!(keys.is_empty(), "{keys:?}");
    }
);
