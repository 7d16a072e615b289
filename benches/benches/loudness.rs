//! What measuring a track's loudness (ReplayGain, the `analyze_loudness` job) costs next to
//! decoding it: for a file of each format of the corpus, the median of 5 runs of decoding
//! alone (`musiclib_fingerprint::pcm`, the decoder the measurement reads), of decoding and
//! measuring on one thread (`measure_file`) and with the metering on a second thread
//! (`measure_file_beside`, what the job does when a second CPU slot is free), and the
//! ratios to decoding. The goal: at most 1.2 (the decoding and a fifth). Opus is decoded
//! by the ffmpeg command.
//!
//! `cargo bench -p musiclib-benches --bench loudness` (the corpus in `MUSICLIB_TEST_CORPUS`,
//! else `target/corpus`).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use musiclib_fingerprint::pcm::{PcmSink, Samples, Speaker};

/// Takes the samples and does nothing with them (so that decoding runs to the end).
struct Discard(usize);

impl PcmSink for Discard {
    fn start(&mut self, _rate: u32, _speakers: &[Speaker]) -> Result<(), String> {
        Ok(())
    }

    fn push(&mut self, samples: Samples<'_>) -> ControlFlow<()> {
        self.0 += match samples {
            Samples::U8(planes) => planes.len(),
            Samples::S16(planes) => planes.len(),
            Samples::S32(planes) => planes.len(),
            Samples::F32(planes) => planes.len(),
        };
        ControlFlow::Continue(())
    }
}

const FILES: &[&str] = &[
    "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
    "library/Aurora Lane/Northern Lights (2019)/04 - Ice Shelf.flac",
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    "library/Various Artists/Summer Mix 2022/CD 2/02 - Last Ferry Home.ogg",
    "library/Mira Kowalczyk/Łódź Sessions (2018)/01 - Żółta Łódka.m4a",
    "library/Opus Collective/Field Recordings & Drones/01 - Tidal Hum.opus",
    "library/Unsorted/field take 01.wav",
];

fn median(runs: usize, run: &dyn Fn()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    let corpus = std::env::var_os("MUSICLIB_TEST_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/corpus"));
    if !corpus.join("manifest.json").exists() {
        eprintln!(
            "no corpus at {}: loudness benchmark skipped",
            corpus.display()
        );
        return;
    }
    let (mut decode_total, mut measure_total, mut beside_total) = (0.0, 0.0, 0.0);
    for file in FILES {
        let path = corpus.join(file);
        let decode = median(5, &|| {
            musiclib_fingerprint::pcm::decode_file(&path, &mut Discard(0)).unwrap();
        });
        let measure = median(5, &|| {
            musiclib_core::media::loudness::measure_file(&path).unwrap();
        });
        let beside = median(5, &|| {
            musiclib_core::media::loudness::measure_file_beside(&path).unwrap();
        });
        let seconds = musiclib_core::probe::probe_path(&path)
            .map(|facts| facts.duration_ms as f64 / 1000.0)
            .unwrap_or(0.0);
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        println!(
            "loudness/{name} ({seconds:.0} s): decode {:.1} ms; decode + measure {:.1} ms (ratio {:.2}), on two threads {:.1} ms (ratio {:.2}; goal <= 1.2)",
            decode * 1000.0,
            measure * 1000.0,
            measure / decode,
            beside * 1000.0,
            beside / decode
        );
        decode_total += decode;
        measure_total += measure;
        beside_total += beside;
    }
    println!(
        "loudness/all {} files: decode {:.2} s; decode + measure {:.2} s (ratio {:.2}), on two threads {:.2} s (ratio {:.2})",
        FILES.len(),
        decode_total,
        measure_total,
        measure_total / decode_total,
        beside_total,
        beside_total / decode_total
    );
}
