//! Media: stream (original with Range, Opus by format/maxBitRate, timeOffset), download,
//! cover art (always an image), and that streaming never counts a play.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::domain::Page;
use musiclib_core::testing::Backend;

use crate::both_backends;
use crate::harness::{header_text, Fixture};

fn is_png(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x89PNG\r\n\x1a\n")
}

/// Width and height of a PNG.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

both_backends!(streams_and_covers, |backend: Backend| async move {
    let app = Fixture::new(backend).await;
    let song = app.track_ids[0].clone();
    let track = app
        .library
        .catalog()
        .get_track(&musiclib_core::TrackId::parse(&song).unwrap())
        .await
        .unwrap();
    let size = track.size_bytes.unwrap() as usize;

    // The original, whole and by range; download is the same bytes.
    let (status, content_type, whole) = app
        .get("stream", &format!("{}&id={song}", app.auth()))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(Some(content_type.as_str()), track.mime_type.as_deref());
    assert_eq!(whole.len(), size);
    let request = Request::get(format!("/rest/stream.view?{}&id={song}", app.auth()))
        .header(header::RANGE, "bytes=100-1123")
        .body(Body::empty())
        .unwrap();
    let response = range_response(&app, request).await;
    assert_eq!(response.0, StatusCode::PARTIAL_CONTENT);
    assert_eq!(response.1, format!("bytes 100-1123/{size}"));
    assert_eq!(response.2, whole[100..1124]);
    let request = Request::get(format!("/rest/download?{}&id={song}", app.auth()))
        .header(header::RANGE, format!("bytes={size}-"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        range_response(&app, request).await.0,
        StatusCode::RANGE_NOT_SATISFIABLE
    );
    let (_, _, downloaded) = app
        .get("download", &format!("{}&id={song}", app.auth()))
        .await;
    assert_eq!(downloaded, whole);

    // A low bit rate limit or another format: Opus (live while the rendition is not built),
    // also from an offset (transcodeOffset).
    // (These tests run under the README test command, which installs ffmpeg.)
    require_ffmpeg();
    for params in ["maxBitRate=64", "format=opus", "format=mp3&timeOffset=2"] {
        let (status, content_type, body) = app
            .get("stream", &format!("{}&id={song}&{params}", app.auth()))
            .await;
        assert_eq!(status, StatusCode::OK, "{params}");
        assert_eq!(content_type, "audio/ogg", "{params}");
        assert!(
            body.starts_with(b"OggS") && body.len() > 1000,
            "{params}: {} bytes",
            body.len()
        );
    }
    let (_, _, full) = app
        .get("stream", &format!("{}&id={song}&format=opus", app.auth()))
        .await;
    let (_, _, later) = app
        .get(
            "stream",
            &format!("{}&id={song}&format=opus&timeOffset=3", app.auth()),
        )
        .await;
    assert!(
        later.len() < full.len(),
        "an offset stream is shorter: {} vs {}",
        later.len(),
        full.len()
    );
    // Errors of a binary method come in the envelope, with HTTP 200.
    let (status, content_type, body) = app
        .get(
            "stream",
            &format!("{}&id=00000000-0000-7000-8000-000000000000", app.auth()),
        )
        .await;
    assert_eq!(
        (status, content_type.starts_with("text/xml")),
        (StatusCode::OK, true)
    );
    assert!(String::from_utf8(body).unwrap().contains(r#"code="70""#));
    let (_, _, body) = app
        .get(
            "stream",
            &format!("{}&f=json&id={song}&timeOffset=-1", app.auth()),
        )
        .await;
    assert!(String::from_utf8(body).unwrap().contains("timeOffset"));

    // Streaming never counts a play.
    let history = app
        .library
        .social()
        .history(&app.caller, Page::default())
        .await
        .unwrap();
    assert_eq!(history.total, 0);

    // Cover art: always an image. No cover (nothing enriched yet), an unknown id, a size.
    let album = track.album_id.unwrap().to_string();
    for id in [
        album.as_str(),
        song.as_str(),
        "00000000-0000-7000-8000-000000000000",
        "whatever",
    ] {
        let (status, content_type, body) = app
            .get("getCoverArt", &format!("{}&id={id}&size=64", app.auth()))
            .await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "image/png"),
            "{id}"
        );
        assert!(is_png(&body), "{id}");
        assert_eq!(png_size(&body), (64, 64));
    }
    let (_, _, body) = app
        .get("getCoverArt", &format!("{}&id={album}", app.auth()))
        .await;
    // Sizes come in buckets: the placeholder's own (256), the largest (1024).
    assert_eq!(png_size(&body), (256, 256));
    let (_, _, body) = app
        .get(
            "getCoverArt",
            &format!("{}&id={album}&size=100000", app.auth()),
        )
        .await;
    assert_eq!(png_size(&body), (1024, 1024));
    // Credentials are still required.
    let (_, content_type, _) = app
        .get("getCoverArt", &format!("u=ann&p=wrong&id={album}"))
        .await;
    assert!(content_type.starts_with("text/xml"));
});

/// Status, Content-Range and body of a request.
async fn range_response(app: &Fixture, request: Request<Body>) -> (StatusCode, String, Vec<u8>) {
    let (status, headers, body) = app.send_parts(request).await;
    (status, header_text(&headers, header::CONTENT_RANGE), body)
}

/// Fails unless ffmpeg runs: the transcoding checks are never skipped silently.
fn require_ffmpeg() {
    let runs = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        runs,
        "ffmpeg is needed (the README test command installs it): transcoding is not tested without it"
    );
}
