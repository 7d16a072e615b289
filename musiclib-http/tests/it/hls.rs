//! HLS over real HTTP: ffmpeg plays a cold track's playlist end to end through the token in
//! the query, continuous to within 50 ms of the original; auth, names and the transcoder's
//! absence answer clear errors.

use std::process::Command;

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};

use crate::api::App;

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/03 - Magnetosphere.flac";

/// Decodes `input` with ffmpeg to mono 44.1 kHz PCM: its duration in seconds and what
/// ffmpeg reported as errors.
fn decode(input: &str) -> (f64, String) {
    let output = Command::new("ffmpeg")
        .args([
            "-nostdin", "-v", "error", "-i", input, "-map", "0:a:0", "-ac", "1", "-ar", "44100",
            "-f", "s16le", "-",
        ])
        .output()
        .expect("ffmpeg runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        output.stdout.len() as f64 / 2.0 / 44100.0,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn serve(app: &App) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = musiclib_http::router(app.library.library.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

both_backends!(services cold_track_end_to_end, ffmpeg_plays_a_cold_track_end_to_end);

async fn ffmpeg_plays_a_cold_track_end_to_end(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;
    let original = corpus.join(FLAC);
    let (status, track) = app
        .upload(&token, "m.flac", &std::fs::read(&original).unwrap())
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = track["id"].as_str().unwrap().to_string();
    let address = serve(&app).await;
    let base = format!("http://{address}/api/v1/stream/{id}/hls");

    // No token: 401 with the JSON error, for the playlist and for a segment.
    for path in ["playlist.m3u8", "seg-00000.ts"] {
        let (status, body) = app
            .get(&format!("/api/v1/stream/{id}/hls/{path}"), None)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(body["error"]["code"], "unauthenticated", "{body}");
    }
    // Not a segment name.
    let (status, body) = app
        .get(
            &format!("/api/v1/stream/{id}/hls/seg-1.ts?token={token}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "segment");

    // Cold: ffmpeg plays the playlist while the segments are being encoded, then again from
    // the stored rendition. Each time the whole track, continuous, without decode errors.
    let (expected, _) = decode(original.to_str().unwrap());
    let url = format!("{base}/playlist.m3u8?token={token}");
    for pass in ["cold", "stored"] {
        let (played, errors) = tokio::task::spawn_blocking({
            let url = url.clone();
            move || decode(&url)
        })
        .await
        .unwrap();
        assert!(errors.trim().is_empty(), "{pass}: ffmpeg reported {errors}");
        assert!(
            (played - expected).abs() <= 0.050,
            "{pass}: played {played:.3} s of {expected:.3} s"
        );
        app.library
            .media()
            .build_hls(&musiclib_core::TrackId::parse(&id).unwrap())
            .await
            .unwrap();
    }
}

both_backends!(services no_transcoder, without_ffmpeg_hls_answers_503);

async fn without_ffmpeg_hls_answers_503(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let library = TestLibrary::builder(backend)
        .config(|config| config.transcoding.ffmpeg = "/nonexistent/ffmpeg".into())
        .build()
        .await;
    let app = App::new(library).await;
    let token = app.register("alice").await;
    let (_, track) = app
        .upload(&token, "m.flac", &std::fs::read(corpus.join(FLAC)).unwrap())
        .await;
    let id = track["id"].as_str().unwrap();
    let (status, body) = app
        .get(
            &format!("/api/v1/stream/{id}/hls/playlist.m3u8"),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "transcoder_unavailable");
    // Originals still play.
    let (status, _) = app.get(&format!("/api/v1/stream/{id}"), Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
}
