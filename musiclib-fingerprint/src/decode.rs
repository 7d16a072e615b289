//! Decoding with Symphonia, delivering the samples FFmpeg's decoders would hand to fpcalc.
//!
//! Three things make the sample stream match FFmpeg's rather than just sound the same:
//! * the sample *format*: FFmpeg decodes 16-bit FLAC/PCM as int16 and deeper PCM as left-aligned
//!   int32, which decides libswresample's internal arithmetic (see `swr.rs`);
//! * the *channel layout*, which decides the downmix gains (including the layout a FLAC file may
//!   state in a `WAVEFORMATEXTENSIBLE_CHANNEL_MASK` comment, as FFmpeg honours it);
//! * the *first sample*: FFmpeg drops MP3 encoder delay (LAME tag, delay + 529 samples, which
//!   Symphonia's gapless mode also does) and the AAC priming named by an MP4 edit list, which
//!   Symphonia's MP4 demuxer ignores, so it is dropped here (see `mp4.rs`).
//!
//! Lossy codecs decode to float, and Symphonia's float arithmetic is not FFmpeg's (FFmpeg's
//! decoders use their own SIMD transforms): about 0.02–0.15 % of the final 11025 Hz samples come
//! out one step apart, which flips a fingerprint bit now and then. Lossless decoding is exact.

use std::fs::File;
use std::ops::ControlFlow;
use std::path::Path;

use symphonia::core::audio::sample::{i24, u24, Sample};
use symphonia::core::audio::{Audio, AudioBuffer, Channels, GenericAudioBufferRef};
use symphonia::core::codecs::audio::well_known::{
    CODEC_ID_AAC, CODEC_ID_FLAC, CODEC_ID_MP1, CODEC_ID_MP2, CODEC_ID_MP3, CODEC_ID_OPUS,
    CODEC_ID_VORBIS,
};
use symphonia::core::codecs::audio::{AudioCodecParameters, AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, FormatReader, Track, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::packet::Packet;

use super::ffmpeg::StreamInfo;
use super::swr::{ChannelLayout, InputFormat};
use super::{mp4, AudioSink, Block, FingerprintError};

/// How decoding with Symphonia went wrong: either it can't handle the file at all (worth trying
/// ffmpeg) or the file itself is bad.
pub(crate) enum SymphoniaFailure {
    /// Symphonia cannot decode this; `stream` is what it could still tell about the stream
    /// (e.g. an Ogg Opus file: the container is read, only the codec is missing).
    Unsupported {
        reason: String,
        stream: Option<StreamInfo>,
    },
    Fatal(FingerprintError),
}

impl SymphoniaFailure {
    fn unsupported(reason: String) -> Self {
        SymphoniaFailure::Unsupported {
            reason,
            stream: None,
        }
    }
}

impl From<FingerprintError> for SymphoniaFailure {
    fn from(err: FingerprintError) -> Self {
        SymphoniaFailure::Fatal(err)
    }
}

/// Decodes the default audio track of `path` into `sink` until the sink has enough.
/// Returns the duration of the whole track in seconds, as FFmpeg reports it.
pub(crate) fn decode_file(path: &Path, sink: &mut dyn AudioSink) -> Result<f64, SymphoniaFailure> {
    let mut track = open_track(path)?;
    let (info, params) = (track.info.clone(), track.params.clone());
    let mut decoder = make_decoder(&info, &params)?;
    // MP4 priming is only visible in the edit list, which Symphonia does not apply.
    let priming = if params.codec == CODEC_ID_AAC {
        mp4::priming_samples(path, params.sample_rate.unwrap_or(0)).unwrap_or(0)
    } else {
        0
    };
    let mut feeder = Feeder::new(&params, priming);
    if params.codec == CODEC_ID_FLAC {
        feeder.channel_mask = flac_channel_mask(track.format.as_mut());
    }
    let sink_is_full = decode_packets(&mut track, decoder.as_mut(), &mut feeder, sink)?;
    if !feeder.started {
        let err = FingerprintError::Decode("no audio could be decoded".into());
        return Err(SymphoniaFailure::Fatal(err));
    }
    if let Some(duration) = ffmpeg_duration(&info, &params, priming) {
        return Ok(duration);
    }
    // The container does not state a length: count the remaining packets without decoding them.
    let mut frames = feeder.decoded_frames;
    if sink_is_full {
        while let Some(packet) = track.next_packet() {
            frames += packet.dur.get();
        }
    }
    let rate = f64::from(feeder.rate.max(1));
    Ok(frames.saturating_sub(priming) as f64 / rate)
}

/// The demuxer positioned on the audio track to decode.
struct OpenTrack<'p> {
    path: &'p Path,
    format: Box<dyn FormatReader>,
    track_id: u32,
    /// The track as the demuxer describes it (its length, encoder delay and padding).
    info: Track,
    /// The track's audio codec parameters.
    params: AudioCodecParameters,
}

impl OpenTrack<'_> {
    /// The next packet of the track, or `None` at the end of the stream (or at damage, keeping
    /// what was read before it, as fpcalc does).
    fn next_packet(&mut self) -> Option<Packet> {
        loop {
            match self.format.next_packet() {
                Ok(Some(packet)) if packet.track_id == self.track_id => return Some(packet),
                Ok(Some(_)) => continue,
                Ok(None) => return None,
                Err(SymError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return None
                }
                Err(e) => {
                    tracing::debug!(path = %self.path.display(), error = %e, "stopping at read error");
                    return None;
                }
            }
        }
    }
}

/// Probes the container and picks its first audio track.
fn open_track(path: &Path) -> Result<OpenTrack<'_>, SymphoniaFailure> {
    let file = File::open(path).map_err(|e| SymphoniaFailure::Fatal(e.into()))?;
    let stream = MediaSourceStream::new(Box::new(file), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let format = symphonia::default::get_probe()
        .probe(
            &hint,
            stream,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|e| SymphoniaFailure::unsupported(format!("container: {e}")))?;
    let no_track = || SymphoniaFailure::unsupported("no audio track".into());
    let track = format
        .first_track_known_codec(TrackType::Audio)
        .ok_or_else(no_track)?;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|params| params.audio())
        .ok_or_else(no_track)?
        .clone();
    let info = track.clone();
    Ok(OpenTrack {
        path,
        format,
        track_id: info.id,
        info,
        params,
    })
}

/// Symphonia's decoder for the track, unless Symphonia lacks one or is known to decode it
/// differently from FFmpeg (then the ffmpeg fallback takes over). The decoder is gapless: it
/// drops the MP3 encoder delay and padding the demuxer marks on each packet, exactly like
/// FFmpeg's mp3 demuxer does.
fn make_decoder(
    info: &Track,
    params: &AudioCodecParameters,
) -> Result<Box<dyn AudioDecoder>, SymphoniaFailure> {
    if symphonia_is_unreliable(params) {
        return Err(SymphoniaFailure::Unsupported {
            reason: "codec configuration Symphonia decodes differently from FFmpeg".into(),
            stream: float_stream_info(info, params),
        });
    }
    symphonia::default::get_codecs()
        .make_audio_decoder(params, &AudioDecoderOptions::default().gapless(true))
        .map_err(|e| SymphoniaFailure::Unsupported {
            reason: format!("codec: {e}"),
            stream: float_stream_info(info, params),
        })
}

/// Decodes packets into the feeder until the stream ends or the sink is full (then `true`).
/// Like fpcalc, which gives up at the first decoding error (forgiving one on the very first
/// packet), a damaged packet ends the stream: the fingerprint covers the audio before it.
fn decode_packets(
    track: &mut OpenTrack<'_>,
    decoder: &mut dyn AudioDecoder,
    feeder: &mut Feeder,
    sink: &mut dyn AudioSink,
) -> Result<bool, SymphoniaFailure> {
    let mut first_packet = true;
    while let Some(packet) = track.next_packet() {
        let audio = match decoder.decode(&packet) {
            Ok(audio) => audio,
            Err(SymError::DecodeError(e)) if first_packet => {
                tracing::debug!(path = %track.path.display(), error = %e, "skipping undecodable first packet");
                first_packet = false;
                continue;
            }
            Err(e) => {
                tracing::debug!(path = %track.path.display(), error = %e, "stopping at decode error");
                return Ok(false);
            }
        };
        first_packet = false;
        if feeder.feed(audio, sink)?.is_break() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The speaker layout a FLAC file states in its `WAVEFORMATEXTENSIBLE_CHANNEL_MASK` comment
/// (written for layouts FLAC has no default for), which FFmpeg's demuxer applies.
fn flac_channel_mask(format: &mut dyn FormatReader) -> Option<u64> {
    let mut metadata = format.metadata();
    // The FLAC demuxer's own comments come last, after any ID3v2 tag the probe read before the
    // stream.
    let tag = metadata.skip_to_latest()?.media.tags.iter().find(|tag| {
        tag.raw
            .key
            .eq_ignore_ascii_case("WAVEFORMATEXTENSIBLE_CHANNEL_MASK")
    })?;
    let text = tag.raw.value.to_string();
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Stream facts for the ffmpeg fallback, for codecs whose FFmpeg decoder outputs float (Opus,
/// multichannel Vorbis), so ffprobe need not be asked.
fn float_stream_info(info: &Track, params: &AudioCodecParameters) -> Option<StreamInfo> {
    let sample_rate = match params.codec {
        // FFmpeg's Opus decoder always runs at 48 kHz.
        CODEC_ID_OPUS => 48_000,
        CODEC_ID_VORBIS => params.sample_rate?,
        _ => return None,
    };
    Some(StreamInfo {
        sample_rate,
        layout: ChannelLayout::vorbis_for(params.channels.as_ref()?.count()),
        format: InputFormat::F32,
        duration: ffmpeg_duration(info, params, 0),
    })
}

/// Codec configurations Symphonia decodes differently from FFmpeg beyond rounding: its Vorbis
/// decoder's output for more than two channels does not match FFmpeg's at all, and its AAC
/// decoder has no SBR/PS, so HE-AAC would come out as the band-limited core only (0.6 refuses an
/// explicitly signalled HE-AAC itself; this check does not depend on it).
fn symphonia_is_unreliable(params: &AudioCodecParameters) -> bool {
    match params.codec {
        CODEC_ID_VORBIS => params.channels.as_ref().is_some_and(|c| c.count() > 2),
        CODEC_ID_AAC => params.extra_data.as_deref().is_some_and(is_he_aac_config),
        _ => false,
    }
}

/// Whether an AAC AudioSpecificConfig declares SBR (HE-AAC, object type 5) or parametric stereo
/// (HE-AACv2, object type 29) explicitly.
fn is_he_aac_config(config: &[u8]) -> bool {
    let object_type = config.first().map_or(0, |b| b >> 3);
    matches!(object_type, 5 | 29)
}

/// The stream duration FFmpeg reports (and fpcalc prints as DURATION) for this track.
fn ffmpeg_duration(info: &Track, params: &AudioCodecParameters, priming: u64) -> Option<f64> {
    let rate = f64::from(params.sample_rate?);
    // Symphonia counts the playable frames, without encoder delay and padding.
    let frames = info.num_frames?;
    let frames = if matches!(params.codec, CODEC_ID_MP3 | CODEC_ID_MP2 | CODEC_ID_MP1) {
        // MP3 (Xing/LAME): FFmpeg counts whole frames, encoder delay and padding included.
        frames + u64::from(info.delay.unwrap_or(0)) + u64::from(info.padding.unwrap_or(0))
    } else {
        // MP4: the priming named by the edit list is not part of the duration.
        frames.saturating_sub(priming)
    };
    Some(frames as f64 / rate)
}

/// Turns Symphonia's decoded buffers into the sample format FFmpeg's decoder would output.
struct Feeder {
    /// Decoded frames still to drop at the start (MP4 priming).
    skip: u64,
    /// Significant bits of integer samples, when the container says (FLAC 16 vs 24 bit).
    bits_per_sample: Option<u32>,
    /// Speaker layout stated by the file, overriding the codec's default one.
    channel_mask: Option<u64>,
    started: bool,
    rate: u32,
    decoded_frames: u64,
    /// Scratch planes for formats that need converting before the resampler.
    scratch_i16: Vec<Vec<i16>>,
    scratch_i32: Vec<Vec<i32>>,
    scratch_u8: Vec<Vec<u8>>,
    scratch_f32: Vec<Vec<f32>>,
}

impl Feeder {
    fn new(params: &AudioCodecParameters, priming: u64) -> Self {
        Self {
            skip: priming,
            bits_per_sample: params.bits_per_sample,
            channel_mask: None,
            started: false,
            rate: params.sample_rate.unwrap_or(0),
            decoded_frames: 0,
            scratch_i16: Vec::new(),
            scratch_i32: Vec::new(),
            scratch_u8: Vec::new(),
            scratch_f32: Vec::new(),
        }
    }

    /// Feeds one decoded buffer, converted like FFmpeg's decoder output, to the sink.
    fn feed(
        &mut self,
        audio: GenericAudioBufferRef<'_>,
        sink: &mut dyn AudioSink,
    ) -> Result<ControlFlow<()>, FingerprintError> {
        let frames = audio.frames();
        if frames == 0 {
            return Ok(ControlFlow::Continue(()));
        }
        self.decoded_frames += frames as u64;
        let skip = self.skip.min(frames as u64) as usize;
        self.skip -= skip as u64;
        if skip == frames {
            return Ok(ControlFlow::Continue(()));
        }
        let format = self.ffmpeg_format(&audio);
        if !self.started {
            let spec = audio.spec();
            self.rate = spec.rate();
            let channels = spec.channels();
            let mask = self.channel_mask.unwrap_or(match channels {
                Channels::Positioned(positions) => positions.bits(),
                // Unpositioned channels: `from_mask` falls back to FFmpeg's default layout.
                _ => 0,
            });
            let layout = ChannelLayout::from_mask(mask, channels.count());
            sink.start(self.rate, layout, format)?;
            self.started = true;
        }
        let flow = match audio {
            GenericAudioBufferRef::S16(buf) => push(sink, buf, skip),
            GenericAudioBufferRef::F32(buf) => push(sink, buf, skip),
            GenericAudioBufferRef::U8(buf) => push(sink, buf, skip),
            GenericAudioBufferRef::S32(buf) => match format {
                // 16-bit FLAC arrives left-aligned in i32; FFmpeg hands out plain int16.
                InputFormat::S16 => {
                    convert(buf, skip, &mut self.scratch_i16, |v: i32| (v >> 16) as i16);
                    push_owned(sink, &self.scratch_i16)
                }
                _ => push(sink, buf, skip),
            },
            GenericAudioBufferRef::S24(buf) => {
                convert(buf, skip, &mut self.scratch_i32, |v: i24| v.inner() << 8);
                push_owned(sink, &self.scratch_i32)
            }
            GenericAudioBufferRef::U24(buf) => {
                convert(buf, skip, &mut self.scratch_i32, |v: u24| {
                    (v.inner() as i32 - (1 << 23)) << 8
                });
                push_owned(sink, &self.scratch_i32)
            }
            GenericAudioBufferRef::U32(buf) => {
                convert(buf, skip, &mut self.scratch_i32, |v: u32| {
                    (v ^ 0x8000_0000) as i32
                });
                push_owned(sink, &self.scratch_i32)
            }
            GenericAudioBufferRef::U16(buf) => {
                convert(buf, skip, &mut self.scratch_i16, |v: u16| {
                    (v ^ 0x8000) as i16
                });
                push_owned(sink, &self.scratch_i16)
            }
            GenericAudioBufferRef::S8(buf) => {
                convert(buf, skip, &mut self.scratch_u8, |v: i8| (v as u8) ^ 0x80);
                push_owned(sink, &self.scratch_u8)
            }
            GenericAudioBufferRef::F64(buf) => {
                convert(buf, skip, &mut self.scratch_f32, |v: f64| v as f32);
                push_owned(sink, &self.scratch_f32)
            }
        };
        Ok(flow)
    }

    /// The sample format FFmpeg's decoder produces for this stream.
    fn ffmpeg_format(&self, audio: &GenericAudioBufferRef<'_>) -> InputFormat {
        match audio {
            GenericAudioBufferRef::U8(_) | GenericAudioBufferRef::S8(_) => InputFormat::U8,
            GenericAudioBufferRef::S16(_) | GenericAudioBufferRef::U16(_) => InputFormat::S16,
            GenericAudioBufferRef::S24(_)
            | GenericAudioBufferRef::U24(_)
            | GenericAudioBufferRef::U32(_) => InputFormat::S32,
            GenericAudioBufferRef::S32(_) => match self.bits_per_sample {
                Some(bits) if bits <= 16 => InputFormat::S16,
                _ => InputFormat::S32,
            },
            GenericAudioBufferRef::F32(_) | GenericAudioBufferRef::F64(_) => InputFormat::F32,
        }
    }
}

/// Sample types that map onto one of the [`Block`] variants.
trait PlaneSample: Sized {
    fn block<'a>(planes: &'a [&'a [Self]]) -> Block<'a>;
}

impl PlaneSample for u8 {
    fn block<'a>(planes: &'a [&'a [u8]]) -> Block<'a> {
        Block::U8(planes)
    }
}

impl PlaneSample for i16 {
    fn block<'a>(planes: &'a [&'a [i16]]) -> Block<'a> {
        Block::S16(planes)
    }
}

impl PlaneSample for i32 {
    fn block<'a>(planes: &'a [&'a [i32]]) -> Block<'a> {
        Block::S32(planes)
    }
}

impl PlaneSample for f32 {
    fn block<'a>(planes: &'a [&'a [f32]]) -> Block<'a> {
        Block::F32(planes)
    }
}

/// Passes a decoded buffer's planes (minus `skip` leading frames) to the sink.
fn push<T: Sample + PlaneSample>(
    sink: &mut dyn AudioSink,
    buf: &AudioBuffer<T>,
    skip: usize,
) -> ControlFlow<()> {
    let planes: Vec<&[T]> = buf.iter_planes().map(|plane| &plane[skip..]).collect();
    sink.push(T::block(&planes))
}

/// Passes converted scratch planes to the sink.
fn push_owned<T: PlaneSample>(sink: &mut dyn AudioSink, planes: &[Vec<T>]) -> ControlFlow<()> {
    let refs: Vec<&[T]> = planes.iter().map(Vec::as_slice).collect();
    sink.push(T::block(&refs))
}

/// Converts every plane of `buf` (minus `skip` leading frames) into `scratch`.
fn convert<S: Sample, T>(
    buf: &AudioBuffer<S>,
    skip: usize,
    scratch: &mut Vec<Vec<T>>,
    f: impl Fn(S) -> T,
) {
    scratch.resize_with(buf.num_planes(), Vec::new);
    for (plane, dst) in buf.iter_planes().zip(scratch.iter_mut()) {
        dst.clear();
        dst.extend(plane[skip..].iter().map(|&v| f(v)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_explicit_he_aac() {
        assert!(!is_he_aac_config(&[0x12, 0x10])); // AAC-LC, 44.1 kHz stereo
        assert!(is_he_aac_config(&[0x2b, 0x92, 0x08, 0x00])); // SBR (object type 5)
        assert!(is_he_aac_config(&[0xeb, 0x09, 0x88, 0x00])); // PS (object type 29)
        assert!(!is_he_aac_config(&[]));
    }
}
