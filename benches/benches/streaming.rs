//! Streaming benchmarks, each side by side with its peer in one run:
//!
//! - `opus_build`: building the medium (128 kbit/s) Opus rendition of a corpus FLAC through
//!   musiclib (`build_renditions`: staging, ffmpeg, publication, row) against the same ffmpeg
//!   command run directly. Rounds alternate; prints medians and the ratio (goal ≤ 1.1).
//! - `hls_cold_start`: a 10-minute FLAC (generated with ffmpeg into a temporary directory)
//!   with no HLS rendition: time until its playlist and first segment are in hand, against
//!   the time to encode the whole rendition (what answering only after a full build costs).
//!
//! `MUSICLIB_BENCH_CORPUS_DEFAULT=target/corpus cargo bench -p musiclib-benches --bench streaming`
//! (the corpus of `shared/corpus/make-corpus.sh`; defaults to `target/corpus`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use musiclib_core::media::Quality;
use musiclib_core::testing::{Backend, TestLibrary};

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";
const ROUNDS: usize = 5;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("MUSICLIB_BENCH_CORPUS_DEFAULT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/corpus"));
    dir.join(FLAC).exists().then_some(dir)
}

async fn user(library: &TestLibrary) -> musiclib_core::auth::Caller {
    let user = library
        .accounts()
        .create_user("bench", "bench-password", false)
        .await
        .unwrap();
    musiclib_core::auth::Caller { user }
}

async fn opus_build(corpus: &Path) {
    let library = TestLibrary::new(Backend::Embedded).await;
    let caller = user(&library).await;
    let source = corpus.join(FLAC);
    let track = library
        .ingest()
        .upload_track(
            &caller,
            Some("a.flac"),
            std::fs::read(&source).unwrap().as_slice(),
        )
        .await
        .unwrap()
        .track;
    let out = tempfile::tempdir().unwrap();
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        library
            .media()
            .build_renditions(&track.id, &[Quality::Medium])
            .await
            .unwrap();
        ours.push(started.elapsed());
        library.media().evict_renditions(0).await.unwrap();

        let started = Instant::now();
        let status = Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-y", "-i"])
            .arg(&source)
            .args([
                "-map", "0:a:0", "-vn", "-c:a", "libopus", "-b:a", "128k", "-f", "ogg",
            ])
            .arg(out.path().join("plain.opus"))
            .status()
            .unwrap();
        assert!(status.success());
        plain.push(started.elapsed());
    }
    let (ours, plain) = (median(ours), median(plain));
    println!(
        "opus_build/medium: musiclib {:.3} s, plain ffmpeg {:.3} s (medians of {ROUNDS}); ratio {:.3} (goal <= 1.1)",
        ours.as_secs_f64(),
        plain.as_secs_f64(),
        ours.as_secs_f64() / plain.as_secs_f64()
    );
}

async fn hls_cold_start() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("ten-minutes.flac");
    let status = Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "anoisesrc=d=600:c=pink:r=44100:a=0.2",
            "-f",
            "lavfi",
            "-i",
            "sine=f=220:d=600:r=44100",
            "-filter_complex",
            "amix=inputs=2",
            "-ac",
            "2",
            "-c:a",
            "flac",
        ])
        .arg(&source)
        .status()
        .unwrap();
    assert!(status.success(), "ffmpeg generates the 10-minute FLAC");
    let library = TestLibrary::new(Backend::Embedded).await;
    let caller = user(&library).await;
    let track = library
        .ingest()
        .upload_track(
            &caller,
            Some("ten.flac"),
            std::fs::read(&source).unwrap().as_slice(),
        )
        .await
        .unwrap()
        .track;
    let (mut first, mut whole) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let playlist = library
            .media()
            .hls_playlist(&caller, &track.id, Some("token"))
            .await
            .unwrap();
        assert!(playlist.contains("seg-00099.ts"));
        let segment = library
            .media()
            .hls_segment(&caller, &track.id, "seg-00000.ts")
            .await
            .unwrap();
        assert!(!segment.is_empty());
        first.push(started.elapsed());
        library.media().build_hls(&track.id).await.unwrap();
        whole.push(started.elapsed());
        library.media().evict_renditions(0).await.unwrap();
    }
    println!(
        "hls_cold_start/10min_flac: playlist + first segment {:.0} ms (goal <= 1500), whole rendition {:.1} s (medians of {ROUNDS}; max first {:.0} ms)",
        median(first.clone()).as_secs_f64() * 1000.0,
        median(whole).as_secs_f64(),
        first.iter().max().unwrap().as_secs_f64() * 1000.0
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this once too: skip there.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    match corpus() {
        Some(corpus) => runtime.block_on(opus_build(&corpus)),
        None => eprintln!("no corpus at target/corpus: opus_build skipped"),
    }
    runtime.block_on(hls_cold_start());
}
