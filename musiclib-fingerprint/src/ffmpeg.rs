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

use super::swr::{ChannelLayout, InputFormat};
use super::{AudioSink, Block, FingerprintError};

/// What the decoder produces, when already known from Symphonia's look at the container.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamInfo {
    pub(crate) sample_rate: u32,
    pub(crate) layout: ChannelLayout,
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
    // Refuse unusable formats before starting a process.
    sink.start(info.sample_rate, info.layout, info.format)?;
    let mut child = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-i"])
        .arg(path)
        .args(["-map", "0:a:0", "-f", raw_format, "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FingerprintError::Ffmpeg(format!("cannot run ffmpeg: {e}")))?;
    // ffmpeg may complain at length about a damaged file: drain its stderr on the side so a full
    // pipe can never stall it, keeping the last message for the error report.
    let stderr = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text.lines().last().unwrap_or_default().to_string()
        })
    });
    let pushed = match child.stdout.take() {
        Some(mut stdout) => pump(&mut stdout, sink, info),
        None => Err(std::io::Error::other("no stdout pipe")),
    };
    // The pipe is closed by now, which stops ffmpeg early when we have enough; its exit status
    // then doesn't matter.
    let status = child
        .wait()
        .map_err(|e| FingerprintError::Ffmpeg(e.to_string()))?;
    let last_message = stderr
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default();
    let frames =
        pushed.map_err(|e| FingerprintError::Ffmpeg(format!("reading ffmpeg output: {e}")))?;
    if frames == 0 && !status.success() {
        let msg = if last_message.is_empty() {
            "no audio decoded".to_string()
        } else {
            last_message
        };
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
    let frame_bytes = bytes_per_sample * info.layout.channels();
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
        let ch = info.layout.channels();
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
            "stream=sample_fmt,sample_rate,channels,channel_layout,duration:format=duration",
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
    let layout = field("channel_layout").map_or_else(
        || ChannelLayout::default_for(channels),
        |name| layout_named(name, channels),
    );
    Ok(StreamInfo {
        sample_rate,
        layout,
        format,
        duration,
    })
}

/// The layout behind one of FFmpeg's layout names (the common ones; others fall back to the
/// default layout for the channel count, as FFmpeg does for unknown layouts).
fn layout_named(name: &str, channels: usize) -> ChannelLayout {
    const FL: u64 = 0x1;
    const FR: u64 = 0x2;
    const FC: u64 = 0x4;
    const LFE: u64 = 0x8;
    const BL: u64 = 0x10;
    const BR: u64 = 0x20;
    const BC: u64 = 0x100;
    const SL: u64 = 0x200;
    const SR: u64 = 0x400;
    let mask = match name {
        "mono" => FC,
        "stereo" => FL | FR,
        "2.1" => FL | FR | LFE,
        "3.0" => FL | FR | FC,
        "3.0(back)" => FL | FR | BC,
        "4.0" => FL | FR | FC | BC,
        "quad" => FL | FR | BL | BR,
        "quad(side)" => FL | FR | SL | SR,
        "3.1" => FL | FR | FC | LFE,
        "5.0" => FL | FR | FC | BL | BR,
        "5.0(side)" => FL | FR | FC | SL | SR,
        "4.1" => FL | FR | FC | LFE | BC,
        "5.1" => FL | FR | FC | LFE | BL | BR,
        "5.1(side)" => FL | FR | FC | LFE | SL | SR,
        "6.0" => FL | FR | FC | BC | SL | SR,
        "6.1" => FL | FR | FC | LFE | BC | SL | SR,
        "7.0" => FL | FR | FC | BL | BR | SL | SR,
        "7.1" => FL | FR | FC | LFE | BL | BR | SL | SR,
        _ => 0,
    };
    ChannelLayout::from_mask(mask, channels)
}
