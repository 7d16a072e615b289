//! `GET`/`HEAD /api/v1/stream/{id}`: byte ranges, validators and auth on both backends (the
//! S3 backend proxies each range as a ranged GET).

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::{Backend, TestLibrary};

use crate::api::App;

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";

fn request(
    method: &str,
    uri: &str,
    token: Option<&str>,
    headers: &[(header::HeaderName, &str)],
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    for (name, value) in headers {
        builder = builder.header(name, *value);
    }
    builder.body(Body::empty()).unwrap()
}

async fn ranges_and_validators(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;
    let bytes = std::fs::read(corpus.join(FLAC)).unwrap();
    let size = bytes.len();
    let (status, track) = app.upload(&token, "first.flac", &bytes).await;
    assert_eq!(status, StatusCode::CREATED);
    let uri = format!("/api/v1/stream/{}", track["id"].as_str().unwrap());

    // The whole file.
    let (status, headers, body) = app.raw(request("GET", &uri, Some(&token), &[])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, bytes);
    assert_eq!(headers[header::CONTENT_TYPE], "audio/flac");
    assert_eq!(headers[header::ACCEPT_RANGES], "bytes");
    assert_eq!(headers[header::CONTENT_LENGTH], size.to_string().as_str());
    let etag = headers[header::ETAG].to_str().unwrap().to_string();
    let last_modified = headers[header::LAST_MODIFIED].to_str().unwrap().to_string();

    // Ranges: closed, open, suffix, past the end, and the last byte.
    let cases = [
        ("bytes=0-99", 0..100),
        ("bytes=1000000-", 1_000_000..size),
        ("bytes=-4096", size - 4096..size),
        (
            &*format!("bytes={}-{}", size - 10, size + 500),
            size - 10..size,
        ),
        (&*format!("bytes={}-{}", size - 1, size - 1), size - 1..size),
    ];
    for (range, expected) in cases {
        let (status, headers, body) = app
            .raw(request(
                "GET",
                &uri,
                Some(&token),
                &[(header::RANGE, range)],
            ))
            .await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(body, &bytes[expected.clone()], "{range}");
        assert_eq!(
            headers[header::CONTENT_RANGE],
            format!("bytes {}-{}/{size}", expected.start, expected.end - 1).as_str(),
            "{range}"
        );
        assert_eq!(
            headers[header::CONTENT_LENGTH],
            (expected.end - expected.start).to_string().as_str()
        );
    }
    let (status, headers, body) = app
        .raw(request(
            "GET",
            &uri,
            Some(&token),
            &[(header::RANGE, &format!("bytes={size}-"))],
        ))
        .await;
    assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(
        headers[header::CONTENT_RANGE],
        format!("bytes */{size}").as_str()
    );
    let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], "range_not_satisfiable");
    // Ignored Range headers: bad syntax, several ranges.
    for range in ["bytes=oops", "bytes=0-1,10-20"] {
        let (status, _, body) = app
            .raw(request(
                "GET",
                &uri,
                Some(&token),
                &[(header::RANGE, range)],
            ))
            .await;
        assert_eq!((status, body.len()), (StatusCode::OK, size), "{range}");
    }

    // If-Range: a current validator keeps the range, a stale one gets the whole file.
    for (validator, expected) in [
        (etag.as_str(), StatusCode::PARTIAL_CONTENT),
        (last_modified.as_str(), StatusCode::PARTIAL_CONTENT),
        ("\"stale\"", StatusCode::OK),
    ] {
        let (status, _, _) = app
            .raw(request(
                "GET",
                &uri,
                Some(&token),
                &[(header::RANGE, "bytes=0-9"), (header::IF_RANGE, validator)],
            ))
            .await;
        assert_eq!(status, expected, "If-Range {validator}");
    }
    // Conditional GET.
    let (status, _, body) = app
        .raw(request(
            "GET",
            &uri,
            Some(&token),
            &[(header::IF_NONE_MATCH, &etag)],
        ))
        .await;
    assert_eq!((status, body.len()), (StatusCode::NOT_MODIFIED, 0));

    // HEAD: the same headers, no body.
    let (status, headers, body) = app
        .raw(request(
            "HEAD",
            &uri,
            Some(&token),
            &[(header::RANGE, "bytes=0-99")],
        ))
        .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(headers[header::CONTENT_LENGTH], "100");
    assert!(body.is_empty());

    // Auth: bearer or ?token=, nothing else.
    let (status, _, body) = app
        .raw(request(
            "GET",
            &format!("{uri}?token={token}"),
            None,
            &[(header::RANGE, "bytes=0-0")],
        ))
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::PARTIAL_CONTENT, vec![bytes[0]])
    );
    for (auth_uri, header_token) in [
        (uri.clone(), None),
        (format!("{uri}?token=garbage"), None),
        (uri.clone(), Some("garbage")),
    ] {
        let (status, _, body) = app.raw(request("GET", &auth_uri, header_token, &[])).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["error"]["code"], "unauthenticated");
    }

    // Unknown track, and a placeholder without audio: clear JSON errors, never a 500.
    let (status, _) = app
        .get(
            "/api/v1/stream/0190a1b2-0000-7000-8000-000000000000",
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let id = musiclib_core::TrackId::parse(track["id"].as_str().unwrap()).unwrap();
    musiclib_core::testing::make_placeholder(&app.library, &id).await;
    let (status, body) = app.get(&uri, Some(&token)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("placeholder"));
}

async fn quality_misses_then_hits(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;
    let bytes = std::fs::read(corpus.join("library/Incoming/untitled.mp3")).unwrap();
    let (_, track) = app.upload(&token, "untitled.mp3", &bytes).await;
    let id = track["id"].as_str().unwrap();
    let uri = format!("/api/v1/stream/{id}?quality=medium");

    // A miss: the original at once, and the rendition is built in the background.
    let (status, headers, body) = app.raw(request("GET", &uri, Some(&token), &[])).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["x-rendition"], "original");
    assert_eq!(headers[header::CONTENT_TYPE], "audio/mpeg");
    assert_eq!(body, bytes);
    musiclib_core::testing::drain_jobs(&app.library).await;

    // A hit: Opus in Ogg, with ranges too.
    let (status, headers, body) = app
        .raw(request(
            "GET",
            &uri,
            Some(&token),
            &[(header::RANGE, "bytes=0-3")],
        ))
        .await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(headers["x-rendition"], "opus-medium");
    assert_eq!(headers[header::CONTENT_TYPE], "audio/ogg");
    assert_eq!(body, b"OggS");

    let (status, body) = app
        .get(
            &format!("/api/v1/stream/{id}?quality=lossless"),
            Some(&token),
        )
        .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("quality")),
        "{body}"
    );

    // Optimize queues the rest; the health report names the transcoder.
    let (status, queued) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{id}/optimize"),
            Some(&token),
            serde_json::Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    musiclib_core::testing::drain_jobs(&app.library).await;
    for quality in ["low", "high"] {
        let (_, headers, _) = app
            .raw(request(
                "HEAD",
                &format!("/api/v1/stream/{id}?quality={quality}"),
                Some(&token),
                &[],
            ))
            .await;
        assert_eq!(headers["x-rendition"], format!("opus-{quality}").as_str());
    }
    // The user's streaming_quality is what a request without `quality` gets; `original`
    // overrides it.
    let plain = format!("/api/v1/stream/{id}");
    let (_, headers, _) = app.raw(request("HEAD", &plain, Some(&token), &[])).await;
    assert_eq!(headers["x-rendition"], "original");
    let (status, body) = app
        .json(
            "PATCH",
            "/api/v1/settings",
            Some(&token),
            serde_json::json!({"streaming_quality": "low"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, headers, _) = app.raw(request("HEAD", &plain, Some(&token), &[])).await;
    assert_eq!(headers["x-rendition"], "opus-low");
    let (_, headers, _) = app
        .raw(request(
            "HEAD",
            &format!("{plain}?quality=original"),
            Some(&token),
            &[],
        ))
        .await;
    assert_eq!(headers["x-rendition"], "original");

    let (_, health) = app.get("/api/v1/health", None).await;
    assert_eq!(health["transcoder"], "available");
}

both_backends!(services quality, quality_misses_then_hits);

both_backends!(services ranges, ranges_and_validators);
