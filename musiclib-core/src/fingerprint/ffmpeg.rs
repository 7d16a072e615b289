//! Fallback decoding through the `ffmpeg` command, for codecs Symphonia lacks (Opus above all).
//!
//! ffmpeg only decodes: it writes the decoder's samples, unconverted, as raw PCM in the
//! decoder's own sample type (float for Opus), at the native rate and channel count. The
//! conversion to 11025 Hz mono then happens in `swr.rs` exactly as for Symphonia's output, so the
//! end of the stream is handled like fpcalc does (the `aresample` filter would drain the resampler
//! at the end, which fpcalc never does).

use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::{Command, Stdio};

use super::swr::InputFormat;
use super::{AudioSink, Block, FingerprintError};

/// What the decoder produces, when already known from Symphonia's look at the container.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamInfo {
    pub(crate) sample_rate: u32,
    pub(crate) channels: usize,
    pub(crate) format: InputFormat,
    pub(crate) duration: Option<f64>,
}

/// Decodes `path` with ffmpeg into `sink` until the sink has enough. `known` skips the ffprobe
/// call when the stream's format is already known. Returns the stream duration.
pub(crate) fn decode_file(
    path: &Path,
    sink: &mut dyn AudioSink,
    known: Option<StreamInfo>,
) -> Result<f64, FingerprintError> {
    let info = match known {
        Some(info) if info.duration.is_some() => info,
        _ => probe(path)?,
    };
    let raw_format = match info.format {
        InputFormat::U8 => "u8",
        InputFormat::S16 => "s16le",
        InputFormat::S32 => "s32le",
        InputFormat::F32 => "f32le",
    };
    let mut child = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-i"])
        .arg(path)
        .args(["-map", "0:a:0", "-f", raw_format, "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FingerprintError::Ffmpeg(format!("cannot run ffmpeg: {e}")))?;
    let Some(mut stdout) = child.stdout.take() else {
        return Err(FingerprintError::Ffmpeg("no stdout pipe".into()));
    };
    sink.start(info.sample_rate, info.channels, info.format)?;
    let pushed = pump(&mut stdout, sink, info);
    // Closing the pipe stops ffmpeg early when we have enough; its exit status then doesn't matter.
    drop(stdout);
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let status = child
        .wait()
        .map_err(|e| FingerprintError::Ffmpeg(e.to_string()))?;
    let frames =
        pushed.map_err(|e| FingerprintError::Ffmpeg(format!("reading ffmpeg output: {e}")))?;
    if frames == 0 && !status.success() {
        let msg = stderr.lines().last().unwrap_or("unknown error").to_string();
        return Err(FingerprintError::Decode(msg));
    }
    Ok(info
        .duration
        .unwrap_or(frames as f64 / f64::from(info.sample_rate.max(1))))
}

/// Reads interleaved PCM from `input` and hands it to `sink` one channel slice per plane.
/// Returns the number of frames read.
fn pump(input: &mut impl Read, sink: &mut dyn AudioSink, info: StreamInfo) -> std::io::Result<u64> {
    let bytes_per_sample = match info.format {
        InputFormat::U8 => 1,
        InputFormat::S16 => 2,
        InputFormat::S32 | InputFormat::F32 => 4,
    };
    let frame_bytes = bytes_per_sample * info.channels;
    let mut buf = vec![0u8; frame_bytes * 4096];
    let mut filled = 0;
    let mut frames_total = 0u64;
    let mut planes = Planes::default();
    loop {
        let n = input.read(&mut buf[filled..])?;
        filled += n;
        let frames = filled / frame_bytes;
        if frames > 0 {
            frames_total += frames as u64;
            let whole = frames * frame_bytes;
            if planes.push(&buf[..whole], info, sink).is_break() {
                return Ok(frames_total);
            }
            buf.copy_within(whole..filled, 0);
            filled -= whole;
        }
        if n == 0 {
            return Ok(frames_total);
        }
    }
}

/// De-interleaving scratch space.
#[derive(Default)]
struct Planes {
    u8: Vec<Vec<u8>>,
    s16: Vec<Vec<i16>>,
    s32: Vec<Vec<i32>>,
    f32: Vec<Vec<f32>>,
}

impl Planes {
    fn push(
        &mut self,
        bytes: &[u8],
        info: StreamInfo,
        sink: &mut dyn AudioSink,
    ) -> ControlFlow<()> {
        let ch = info.channels;
        match info.format {
            InputFormat::U8 => {
                deinterleave(&mut self.u8, bytes, ch, |b| b[0]);
                let refs: Vec<&[u8]> = self.u8.iter().map(Vec::as_slice).collect();
                sink.push(Block::U8(&refs))
            }
            InputFormat::S16 => {
                deinterleave(&mut self.s16, bytes, ch, |b| {
                    i16::from_le_bytes([b[0], b[1]])
                });
                let refs: Vec<&[i16]> = self.s16.iter().map(Vec::as_slice).collect();
                sink.push(Block::S16(&refs))
            }
            InputFormat::S32 => {
                deinterleave(&mut self.s32, bytes, ch, |b| {
                    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
                });
                let refs: Vec<&[i32]> = self.s32.iter().map(Vec::as_slice).collect();
                sink.push(Block::S32(&refs))
            }
            InputFormat::F32 => {
                deinterleave(&mut self.f32, bytes, ch, |b| {
                    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
                });
                let refs: Vec<&[f32]> = self.f32.iter().map(Vec::as_slice).collect();
                sink.push(Block::F32(&refs))
            }
        }
    }
}

/// Splits interleaved little-endian samples (`T` is as wide as one sample) into one vector per
/// channel.
fn deinterleave<T>(
    planes: &mut Vec<Vec<T>>,
    bytes: &[u8],
    channels: usize,
    read: impl Fn(&[u8]) -> T,
) {
    planes.resize_with(channels, Vec::new);
    for plane in planes.iter_mut() {
        plane.clear();
    }
    let sample_bytes = std::mem::size_of::<T>();
    for (i, sample) in bytes.chunks_exact(sample_bytes).enumerate() {
        planes[i % channels].push(read(sample));
    }
}

/// The decoder's output format, rate, channel count and the stream duration, from ffprobe.
fn probe(path: &Path) -> Result<StreamInfo, FingerprintError> {
    let output = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "a:0",
            "-show_entries",
            "stream=sample_fmt,sample_rate,channels,duration:format=duration",
            "-of",
            "default=nw=1",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| FingerprintError::Ffmpeg(format!("cannot run ffprobe: {e}")))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    let sample_rate: u32 = field("sample_rate")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let channels: usize = field("channels").and_then(|v| v.parse().ok()).unwrap_or(0);
    if sample_rate == 0 || channels == 0 {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(FingerprintError::Unsupported(
            err.lines()
                .last()
                .map_or_else(|| "no audio stream".to_string(), str::to_string),
        ));
    }
    // The decoder's sample format decides libswresample's arithmetic (see swr.rs).
    let format = match field("sample_fmt").unwrap_or("fltp").trim_end_matches('p') {
        "u8" => InputFormat::U8,
        "s16" => InputFormat::S16,
        "s32" | "s64" => InputFormat::S32,
        _ => InputFormat::F32,
    };
    // Stream duration first, container duration otherwise (as fpcalc's GetDuration).
    let duration = text
        .lines()
        .filter_map(|l| l.strip_prefix("duration="))
        .find_map(|v| v.trim().parse::<f64>().ok());
    Ok(StreamInfo {
        sample_rate,
        channels,
        format,
        duration,
    })
}
