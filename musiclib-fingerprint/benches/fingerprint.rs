//! Decode + fingerprint time against `fpcalc` on the same files, side by side in one run.
//!
//! For one file per format of the default corpus (`MUSICLIB_TEST_CORPUS` or
//! `MUSICLIB_BENCH_FP_CORPUS`), criterion measures `musiclib/<format>` (the library call the
//! enrichment job makes) and `fpcalc/<format>` (the `fpcalc` process on the same file). Then
//! a plain interleaved loop prints the ratio of medians: ours / fpcalc, and ours / (fpcalc minus
//! the start-up of an `fpcalc -version` process), so process start-up cannot flatter us.
//! Goal: ratio ≤ 1.0 for MP3, FLAC, Ogg and M4A.
//!
//! `cargo bench -p musiclib-fingerprint --bench fingerprint`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use musiclib_fingerprint::{fingerprint_file, DEFAULT_MAX_SECONDS};

const FILES: &[(&str, &str)] = &[
    (
        "mp3",
        "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    ),
    (
        "flac",
        "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
    ),
    (
        "ogg",
        "library/Various Artists/Summer Mix 2022/CD 1/01 - Sunset Boulevard.ogg",
    ),
    (
        "m4a",
        "library/Mira Kowalczyk/Łódź Sessions (2018)/01 - Żółta Łódka.m4a",
    ),
    (
        "opus",
        "library/Opus Collective/Field Recordings & Drones/01 - Tidal Hum.opus",
    ),
    ("wav", "library/Unsorted/field take 01.wav"),
];

fn corpus() -> Option<PathBuf> {
    ["MUSICLIB_BENCH_FP_CORPUS", "MUSICLIB_TEST_CORPUS"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .find(|dir| dir.join("manifest.json").is_file())
}

fn fpcalc(path: &Path) {
    let output = Command::new("fpcalc")
        .arg("-raw")
        .arg(path)
        .output()
        .expect("run fpcalc");
    assert!(
        output.status.success() || !output.stdout.is_empty(),
        "fpcalc failed on {}",
        path.display()
    );
}

fn ours(path: &Path) {
    fingerprint_file(path, DEFAULT_MAX_SECONDS).expect("fingerprint");
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn bench(c: &mut Criterion) {
    let Some(corpus) = corpus() else {
        eprintln!("no corpus (MUSICLIB_TEST_CORPUS): fingerprint benchmark skipped");
        return;
    };
    if Command::new("fpcalc").arg("-version").output().is_err() {
        eprintln!("fpcalc is not installed: fingerprint benchmark skipped");
        return;
    }
    let mut group = c.benchmark_group("fingerprint");
    group.sample_size(10);
    for (format, relative) in FILES {
        let path = corpus.join(relative);
        group.bench_function(format!("musiclib/{format}"), |b| b.iter(|| ours(&path)));
        group.bench_function(format!("fpcalc/{format}"), |b| b.iter(|| fpcalc(&path)));
    }
    group.finish();
    // Under `cargo test` (no `--bench`) criterion only checks each function once; the timing
    // table below is for real runs.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }

    // Side by side: alternate the two so machine noise hits both alike.
    let startup = median(
        (0..15)
            .map(|_| {
                let started = Instant::now();
                Command::new("fpcalc").arg("-version").output().unwrap();
                started.elapsed()
            })
            .collect(),
    );
    println!(
        "fpcalc process start-up: {:.1} ms",
        startup.as_secs_f64() * 1000.0
    );
    println!("format  musiclib ms  fpcalc ms  ratio  ratio(no start-up)");
    for (format, relative) in FILES {
        let path = corpus.join(relative);
        let (mut mine, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..9 {
            let started = Instant::now();
            ours(&path);
            mine.push(started.elapsed());
            let started = Instant::now();
            fpcalc(&path);
            theirs.push(started.elapsed());
        }
        let (mine, theirs) = (
            median(mine).as_secs_f64() * 1000.0,
            median(theirs).as_secs_f64() * 1000.0,
        );
        let bare = (theirs - startup.as_secs_f64() * 1000.0).max(0.001);
        println!(
            "{format:<6} {mine:>11.1} {theirs:>10.1} {:>6.2} {:>10.2}",
            mine / theirs,
            mine / bare
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
