//! `musiclib fingerprint -raw -json` against the `fpcalc -raw -json` values recorded in the
//! corpus manifest: per format, files equal word for word, words equal and bit error rate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Default)]
struct Tally {
    files: usize,
    identical: usize,
    words: usize,
    words_equal: usize,
    bits_differing: u64,
    length_mismatches: Vec<String>,
}

/// Runs `musiclib fingerprint -raw -json` on `files` in one process.
fn ours(files: &[PathBuf]) -> Vec<serde_json::Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_musiclib"))
        .arg("fingerprint")
        .arg("-raw")
        .arg("-json")
        .args(files)
        .output()
        .expect("run musiclib fingerprint");
    assert!(
        output.status.success(),
        "musiclib fingerprint failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect()
}

#[test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
fn fingerprints_match_fpcalc_on_the_corpus() {
    let corpus = musiclib_core::testing::corpus();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap();
    let golden: Vec<(&str, &str, &serde_json::Value)> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|file| file["fpcalc"]["fingerprint"].is_array())
        .map(|file| {
            (
                file["path"].as_str().unwrap(),
                file["format"].as_str().unwrap(),
                &file["fpcalc"],
            )
        })
        .collect();
    assert!(golden.len() >= 30, "the corpus has golden fingerprints");

    // Two processes in parallel, each taking half the files.
    let paths: Vec<PathBuf> = golden
        .iter()
        .map(|(path, _, _)| corpus.join(path))
        .collect();
    let (first, second) = paths.split_at(paths.len() / 2);
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| ours(first));
        let second = scope.spawn(|| ours(second));
        (first.join().unwrap(), second.join().unwrap())
    });
    let results: Vec<serde_json::Value> = first.into_iter().chain(second).collect();
    assert_eq!(results.len(), golden.len());

    let mut by_format: BTreeMap<&str, Tally> = BTreeMap::new();
    for ((path, format, expected), ours) in golden.iter().zip(&results) {
        let theirs: Vec<u32> = words(&expected["fingerprint"]);
        let mine: Vec<u32> = words(&ours["fingerprint"]);
        let tally = by_format.entry(format).or_default();
        tally.files += 1;
        if theirs.len() != mine.len() {
            tally.length_mismatches.push(format!(
                "{path}: {} vs fpcalc {}",
                mine.len(),
                theirs.len()
            ));
        }
        let compared = theirs.len().max(mine.len());
        tally.words += compared;
        for index in 0..compared {
            match (mine.get(index), theirs.get(index)) {
                (Some(a), Some(b)) => {
                    tally.words_equal += (a == b) as usize;
                    tally.bits_differing += (a ^ b).count_ones() as u64;
                }
                _ => tally.bits_differing += 32,
            }
        }
        tally.identical += (mine == theirs) as usize;
        // DURATION agrees with fpcalc's to the hundredth.
        let (a, b) = (
            ours["duration"].as_f64().unwrap(),
            expected["duration"].as_f64().unwrap(),
        );
        assert!((a - b).abs() < 0.015, "{path}: duration {a} vs fpcalc {b}");
    }

    println!("format        files  identical  words equal  bit errors");
    let mut worst = 0.0f64;
    for (format, tally) in &by_format {
        let ber = tally.bits_differing as f64 / (tally.words as f64 * 32.0) * 100.0;
        worst = worst.max(ber);
        println!(
            "{format:<12} {:>6} {:>10} {:>11.3}% {:>10.4}%",
            tally.files,
            tally.identical,
            tally.words_equal as f64 / tally.words as f64 * 100.0,
            ber
        );
        for mismatch in &tally.length_mismatches {
            println!("  length differs: {mismatch}");
        }
    }
    // Lossless audio decodes to the same samples as FFmpeg's, so the fingerprint is fpcalc's
    // word for word. Lossy decoders (symphonia vs FFmpeg) may round a rare sample one step
    // apart: allow a stray bit, nothing more.
    for (format, tally) in &by_format {
        if ["flac", "wav"].contains(format) {
            assert_eq!(
                tally.identical, tally.files,
                "{format}: lossless files must match fpcalc exactly"
            );
        }
        assert!(
            tally.length_mismatches.is_empty(),
            "{format}: {:?}",
            tally.length_mismatches
        );
    }
    let files: usize = by_format.values().map(|tally| tally.files).sum();
    let identical: usize = by_format.values().map(|tally| tally.identical).sum();
    assert!(
        identical * 100 >= files * 90,
        "only {identical} of {files} files equal fpcalc's"
    );
    assert!(worst < 0.01, "bit error rate {worst:.4}% against fpcalc");
}

fn words(value: &serde_json::Value) -> Vec<u32> {
    value
        .as_array()
        .map(|words| {
            words
                .iter()
                .map(|word| word.as_u64().unwrap() as u32)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn fingerprint_reports_unreadable_files_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.mp3");
    std::fs::write(&text, "not audio").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_musiclib"))
        .args(["fingerprint", "-json"])
        .arg(&text)
        .arg(Path::new("/nonexistent/file.flac"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("notes.mp3") && stderr.contains("file.flac"),
        "{stderr}"
    );
}
