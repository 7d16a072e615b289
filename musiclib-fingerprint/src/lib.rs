//! Chromaprint audio fingerprints identical to Debian's `fpcalc` (Chromaprint 1.5 + FFmpeg 5.1).
//!
//! A fingerprint only matches fpcalc's word for word if Chromaprint is fed exactly the samples
//! fpcalc feeds it. fpcalc decodes with FFmpeg and converts every frame with libswresample to
//! 11025 Hz mono int16 before Chromaprint sees it; the pipeline here mirrors that:
//!
//! 1. `decode`: Symphonia decodes (MP3, AAC/M4A, FLAC, Vorbis, WAV), delivering the sample format,
//!    channel layout and first sample FFmpeg's decoders would (gapless MP3, MP4 edit-list priming
//!    via `mp4`). What Symphonia cannot decode, or not like FFmpeg (Opus, ALAC, WMA, multichannel
//!    Vorbis, …), is decoded by the `ffmpeg` command instead (`ffmpeg`), unconverted.
//! 2. `swr`: a bit-exact re-implementation of the libswresample conversion fpcalc configures.
//! 3. Chromaprint itself: the `rusty-chromaprint` crate (a Rust port of Lukas Lalinsky's
//!    Chromaprint), test2 preset (fpcalc's default algorithm 2), fed 11025 Hz mono so its own
//!    resampler is bypassed; its output then equals Chromaprint's.
//!
//! The decoded samples of step 1 are also offered as they are (`pcm`), for other analyses of a
//! file's audio (its loudness).
//!
//! Like fpcalc, at most `max_seconds` × 11025 converted samples are fingerprinted, and the
//! resampler is not drained at the end of the file (fpcalc 1.5.1 stops at the decoder's
//! end-of-file error before it would flush).

pub mod compare;
mod decode;
mod ffmpeg;
pub mod mp4;
pub mod pcm;
mod swr;

use std::ops::ControlFlow;
use std::path::Path;

use base64::Engine as _;
use rusty_chromaprint::{Configuration, FingerprintCompressor, Fingerprinter};

use swr::{ChannelLayout, Converter, InputFormat, OUTPUT_RATE};

/// fpcalc's default `-length`: only the first 120 seconds of audio are fingerprinted.
pub const DEFAULT_MAX_SECONDS: f64 = 120.0;

/// A Chromaprint fingerprint of (the start of) one audio file.
#[derive(Debug, Clone, PartialEq)]
pub struct Fingerprint {
    /// Raw Chromaprint words, as `fpcalc -raw` prints them.
    pub raw: Vec<u32>,
    /// Duration of the whole file in seconds (as fpcalc's DURATION, which it prints truncated to
    /// an integer; the float is kept here).
    pub duration: f64,
}

impl Fingerprint {
    /// The compressed, base64url (no padding) form, as `fpcalc` prints by default and AcoustID
    /// expects.
    pub fn compressed(&self) -> String {
        let config = Configuration::preset_test2();
        let bytes = FingerprintCompressor::from(&config).compress(&self.raw);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }
}

/// Why a file could not be fingerprinted.
#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    /// The file could not be opened or read.
    #[error("cannot read audio file: {0}")]
    Io(#[from] std::io::Error),
    /// Not a container/codec we (or ffmpeg) can decode.
    #[error("unsupported audio: {0}")]
    Unsupported(String),
    /// The audio data is damaged beyond use.
    #[error("cannot decode: {0}")]
    Decode(String),
    /// Too little audio for Chromaprint to produce a single word (about 2.5 seconds are needed).
    #[error("audio too short to fingerprint")]
    TooShort,
    /// The ffmpeg fallback could not be run or failed.
    #[error("ffmpeg failed: {0}")]
    Ffmpeg(String),
}

/// Decodes at most `max_seconds` of audio and fingerprints it with the test2 preset (fpcalc's
/// default algorithm 2). A `max_seconds` of zero or less means the whole file (fpcalc
/// `-length 0`). Blocking (CPU-bound); callers run it on a blocking thread.
pub fn fingerprint_file(path: &Path, max_seconds: f64) -> Result<Fingerprint, FingerprintError> {
    mp4::check_sample_tables_in_file(path)
        .map_err(|reason| FingerprintError::Decode(format!("the file is damaged: {reason}")))?;
    let mut pipeline = Pipeline::new(output_limit(max_seconds));
    // A decoder panic on a damaged file is that file's error, not the caller's crash.
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decode_into(path, &mut pipeline)
    }));
    let duration = decoded.map_err(|_| {
        FingerprintError::Decode("the decoder failed on this file (it is damaged)".into())
    })??;
    let raw = pipeline.finish();
    if raw.is_empty() {
        return Err(FingerprintError::TooShort);
    }
    Ok(Fingerprint { raw, duration })
}

/// The 11025 Hz mono samples Chromaprint is fed for `path` (what fpcalc would feed it), for
/// tests and diagnostics.
#[doc(hidden)]
pub fn chromaprint_input(path: &Path, max_seconds: f64) -> Result<Vec<i16>, FingerprintError> {
    let mut pipeline = Pipeline::new(output_limit(max_seconds));
    pipeline.keep_input = true;
    decode_into(path, &mut pipeline)?;
    Ok(pipeline.kept)
}

/// Decodes `path` into `sink` with Symphonia, or with ffmpeg for what Symphonia cannot decode
/// (faithfully); returns the stream duration. Symphonia gives up before delivering any audio,
/// so the same sink serves the fallback.
fn decode_into(path: &Path, sink: &mut dyn AudioSink) -> Result<f64, FingerprintError> {
    match decode::decode_file(path, sink) {
        Ok(duration) => Ok(duration),
        Err(decode::SymphoniaFailure::Unsupported { reason, stream }) => {
            tracing::debug!(path = %path.display(), %reason, "symphonia cannot decode; using ffmpeg");
            ffmpeg::decode_file(path, sink, stream)
        }
        Err(decode::SymphoniaFailure::Fatal(err)) => Err(err),
    }
}

/// fpcalc's `stream_limit`: the number of converted samples fingerprinted (`size_t` truncation of
/// seconds × 11025); `usize::MAX` when unlimited.
fn output_limit(max_seconds: f64) -> usize {
    if max_seconds.is_finite() && max_seconds > 0.0 {
        (max_seconds * f64::from(OUTPUT_RATE)) as usize
    } else {
        usize::MAX
    }
}

/// Decoded audio as FFmpeg's decoder would hand it over: one slice per channel.
pub(crate) enum Block<'a> {
    U8(&'a [&'a [u8]]),
    S16(&'a [&'a [i16]]),
    S32(&'a [&'a [i32]]),
    F32(&'a [&'a [f32]]),
}

/// Where decoders deliver audio.
pub(crate) trait AudioSink {
    /// Declares the stream format; called once, before the first `push`.
    fn start(
        &mut self,
        sample_rate: u32,
        layout: ChannelLayout,
        format: InputFormat,
    ) -> Result<(), FingerprintError>;
    /// Consumes one block; `Break` means no more audio is needed.
    fn push(&mut self, block: Block<'_>) -> ControlFlow<()>;
}

/// libswresample-equivalent conversion followed by Chromaprint, with fpcalc's length limit.
struct Pipeline {
    converter: Option<Converter>,
    fingerprinter: Fingerprinter,
    converted: Vec<i16>,
    /// Converted samples still allowed into the fingerprint.
    remaining: usize,
    /// Diagnostics: keep a copy of everything fed to Chromaprint in `kept`.
    keep_input: bool,
    kept: Vec<i16>,
}

impl Pipeline {
    fn new(limit: usize) -> Self {
        Self {
            converter: None,
            fingerprinter: Fingerprinter::new(&Configuration::preset_test2()),
            converted: Vec::new(),
            remaining: limit,
            keep_input: false,
            kept: Vec::new(),
        }
    }

    fn finish(mut self) -> Vec<u32> {
        if self.converter.is_none() {
            return Vec::new();
        }
        self.fingerprinter.finish();
        self.fingerprinter.fingerprint().to_vec()
    }
}

impl AudioSink for Pipeline {
    fn start(
        &mut self,
        sample_rate: u32,
        layout: ChannelLayout,
        format: InputFormat,
    ) -> Result<(), FingerprintError> {
        let converter =
            Converter::new(sample_rate, layout, format).map_err(FingerprintError::Unsupported)?;
        // Chromaprint's own resampler and downmix are bypassed: it always gets 11025 Hz mono.
        self.fingerprinter
            .start(OUTPUT_RATE, 1)
            .map_err(|e| FingerprintError::Unsupported(format!("chromaprint: {e}")))?;
        self.converter = Some(converter);
        Ok(())
    }

    fn push(&mut self, block: Block<'_>) -> ControlFlow<()> {
        let Some(converter) = self.converter.as_mut() else {
            return ControlFlow::Break(());
        };
        self.converted.clear();
        match block {
            Block::U8(planes) => converter.push_u8(planes, &mut self.converted),
            Block::S16(planes) => converter.push_s16(planes, &mut self.converted),
            Block::S32(planes) => converter.push_s32(planes, &mut self.converted),
            Block::F32(planes) => converter.push_f32(planes, &mut self.converted),
        }
        let take = self.converted.len().min(self.remaining);
        if take > 0 {
            self.fingerprinter.consume(&self.converted[..take]);
            if self.keep_input {
                self.kept.extend_from_slice(&self.converted[..take]);
            }
        }
        self.remaining -= take;
        if self.remaining == 0 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fpcalc -raw` and `fpcalc` output for the corpus' 5-second `Incoming/untitled.mp3`.
    const RAW: [u32; 19] = [
        3830886104, 3830816472, 2757531288, 2753331864, 2688320152, 2688385704, 2705232616,
        2709447404, 2750310373, 2750176679, 2741772214, 2741966742, 2742953862, 2742953862,
        2726114742, 2724992166, 3807118502, 3807120550, 3807317142,
    ];
    const COMPRESSED: &str =
        "AQAAE4yiRFIkLsGz4O2O63jRHDdz7MmRVe0EdUqIsD3sBn1GoOGYo-yI_ziaBwYQMh4BYAQRgCGgEA";

    #[test]
    fn compressed_form_matches_fpcalc() {
        let fp = Fingerprint {
            raw: RAW.to_vec(),
            duration: 5.04,
        };
        assert_eq!(fp.compressed(), COMPRESSED);
    }

    #[test]
    fn length_limit_follows_fpcalc() {
        assert_eq!(output_limit(DEFAULT_MAX_SECONDS), 1_323_000);
        assert_eq!(output_limit(0.0), usize::MAX);
        assert_eq!(output_limit(f64::NAN), usize::MAX);
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let err = fingerprint_file(Path::new("/nonexistent/audio.flac"), DEFAULT_MAX_SECONDS);
        assert!(matches!(err, Err(FingerprintError::Io(_))), "{err:?}");
    }

    /// Exact agreement with the golden `fpcalc -raw` fingerprints of the test corpus, for the
    /// short lossless files (lossless decoding is exact, so any difference is a bug in the
    /// conversion). Needs the corpus the README test command generates.
    #[test]
    #[cfg_attr(
        not(musiclib_services),
        ignore = "needs the test corpus: run the README test command"
    )]
    fn lossless_corpus_files_match_fpcalc() {
        let corpus = std::env::var_os("MUSICLIB_TEST_CORPUS")
            .map(std::path::PathBuf::from)
            .expect("MUSICLIB_TEST_CORPUS is set by the README test command");
        let manifest = std::fs::read(corpus.join("manifest.json")).expect("the corpus manifest");
        let manifest: serde_json::Value =
            serde_json::from_slice(&manifest).expect("manifest.json is JSON");
        let mut checked = 0;
        for file in manifest["files"].as_array().into_iter().flatten() {
            let path = file["path"].as_str().unwrap_or_default();
            let short = file["fpcalc"]["duration"]
                .as_f64()
                .is_some_and(|d| d <= 30.0);
            if !(path.ends_with(".wav") && short) {
                continue;
            }
            let Some(golden) = file["fpcalc"]["fingerprint"].as_array() else {
                continue;
            };
            let golden: Vec<u32> = golden
                .iter()
                .filter_map(|w| w.as_u64())
                .map(|w| w as u32)
                .collect();
            let fp = fingerprint_file(&corpus.join(path), DEFAULT_MAX_SECONDS).expect(path);
            assert_eq!(fp.raw, golden, "{path}");
            checked += 1;
        }
        assert!(
            checked > 0,
            "no short WAV file with a golden fingerprint in the corpus"
        );
    }
}
