//! Fallback decoding through the `ffmpeg` command, for codecs Symphonia lacks (Opus).
//!
//! ffmpeg is asked for 11025 Hz mono signed 16-bit PCM made by libswresample with exactly the
//! settings fpcalc uses ("compatible mode" of Chromaprint's FFmpegAudioProcessor), so the samples
//! reaching Chromaprint are the ones fpcalc would feed it.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use super::swr::{InputFormat, OUTPUT_RATE};
use super::{AudioSink, Block, FingerprintError};

/// libswresample options of fpcalc's converter: swr engine, 16-tap filter, 256 phases with
/// linear interpolation, cutoff 0.8, output S16 mono at 11025 Hz.
const ARESAMPLE: &str = "aresample=osr=11025:ochl=mono:osf=s16:resampler=swr:filter_size=16:phase_shift=8:linear_interp=1:cutoff=0.8";

/// Decodes `path` with ffmpeg into `sink` (11025 Hz mono int16) until the sink has enough.
/// Returns the stream duration reported by ffprobe (or the decoded length).
pub(crate) fn decode_file(path: &Path, sink: &mut dyn AudioSink) -> Result<f64, FingerprintError> {
    let mut child = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-i"])
        .arg(path)
        .args(["-map", "0:a:0", "-af", ARESAMPLE, "-f", "s16le", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FingerprintError::Ffmpeg(format!("cannot run ffmpeg: {e}")))?;
    let Some(mut stdout) = child.stdout.take() else {
        return Err(FingerprintError::Ffmpeg("no stdout pipe".into()));
    };
    sink.start(OUTPUT_RATE, 1, InputFormat::S16)?;
    let mut pushed: u64 = 0;
    let mut finished_early = false;
    let mut bytes = vec![0u8; 64 * 1024];
    let mut carry: Option<u8> = None;
    let mut samples: Vec<i16> = Vec::with_capacity(bytes.len() / 2 + 1);
    loop {
        let n = stdout
            .read(&mut bytes)
            .map_err(|e| FingerprintError::Ffmpeg(format!("reading ffmpeg output: {e}")))?;
        if n == 0 {
            break;
        }
        samples.clear();
        let mut chunk = &bytes[..n];
        if let Some(lo) = carry.take() {
            samples.push(i16::from_le_bytes([lo, chunk[0]]));
            chunk = &chunk[1..];
        }
        let mut pairs = chunk.chunks_exact(2);
        samples.extend(pairs.by_ref().map(|p| i16::from_le_bytes([p[0], p[1]])));
        carry = pairs.remainder().first().copied();
        pushed += samples.len() as u64;
        if sink.push(Block::S16(&[&samples])).is_break() {
            finished_early = true;
            break;
        }
    }
    // Closing the pipe stops ffmpeg early when we have enough; its exit status then doesn't matter.
    drop(stdout);
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let status = child
        .wait()
        .map_err(|e| FingerprintError::Ffmpeg(e.to_string()))?;
    if !status.success() && !finished_early && pushed == 0 {
        let msg = stderr.lines().last().unwrap_or("unknown error").to_string();
        return Err(FingerprintError::Decode(msg));
    }
    Ok(probe_duration(path).unwrap_or(pushed as f64 / f64::from(OUTPUT_RATE)))
}

/// The audio stream's duration as ffprobe reports it (the number fpcalc prints as DURATION).
fn probe_duration(path: &Path) -> Option<f64> {
    let output = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "a:0",
            "-show_entries",
            "stream=duration:format=duration",
            "-of",
            "default=nw=1:nk=1",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.trim().parse::<f64>().ok())
}
