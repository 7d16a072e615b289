//! The decoded audio of a whole file, for analyses besides the fingerprint (a track's
//! loudness): the samples this crate's decoding hands on, as FFmpeg's decoders would give them
//! (gapless MP3, MP4 priming dropped; Symphonia, or the `ffmpeg` command for what it cannot
//! decode, Opus above all), in the decoder's own sample type, before any conversion.

use std::ops::ControlFlow;
use std::path::Path;

use super::swr::{ChannelLayout, InputFormat};
use super::{AudioSink, Block, FingerprintError};

/// Where a channel's speaker is (FFmpeg's channel layout, in stream order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// Front left.
    FrontLeft,
    /// Front right.
    FrontRight,
    /// Front centre (also a mono stream's one channel).
    FrontCenter,
    /// Low-frequency effects.
    LowFrequency,
    /// Back left.
    BackLeft,
    /// Back right.
    BackRight,
    /// Front left of centre.
    FrontLeftOfCenter,
    /// Front right of centre.
    FrontRightOfCenter,
    /// Back centre.
    BackCenter,
    /// Side left.
    SideLeft,
    /// Side right.
    SideRight,
    /// Any other position.
    Other,
}

impl Speaker {
    /// The speakers of `layout`, in stream order.
    fn of(layout: ChannelLayout) -> Vec<Speaker> {
        const ORDER: [Speaker; 11] = [
            Speaker::FrontLeft,
            Speaker::FrontRight,
            Speaker::FrontCenter,
            Speaker::LowFrequency,
            Speaker::BackLeft,
            Speaker::BackRight,
            Speaker::FrontLeftOfCenter,
            Speaker::FrontRightOfCenter,
            Speaker::BackCenter,
            Speaker::SideLeft,
            Speaker::SideRight,
        ];
        (0..64)
            .filter(|bit| layout.mask() & (1u64 << bit) != 0)
            .map(|bit| ORDER.get(bit).copied().unwrap_or(Speaker::Other))
            .collect()
    }
}

/// Decoded audio: one slice per channel, all of the same length, in the decoder's type.
#[derive(Debug, Clone, Copy)]
pub enum Samples<'a> {
    /// Unsigned 8-bit (128 is silence).
    U8(&'a [&'a [u8]]),
    /// Signed 16-bit.
    S16(&'a [&'a [i16]]),
    /// Signed 32-bit, full scale (deeper PCM left-aligned).
    S32(&'a [&'a [i32]]),
    /// 32-bit float, 1.0 full scale.
    F32(&'a [&'a [f32]]),
}

/// Where [`decode_file`] delivers audio.
pub trait PcmSink {
    /// Declares the stream: its sample rate and its channels' speakers, in stream order.
    /// Called once, before the first `push`; an error stops the decoding.
    fn start(&mut self, sample_rate: u32, speakers: &[Speaker]) -> Result<(), String>;
    /// Consumes the next samples; `Break` means no more are needed.
    fn push(&mut self, samples: Samples<'_>) -> ControlFlow<()>;
}

/// Decodes the whole of `path` (its first audio track) into `sink`, until the file ends or
/// the sink has enough. Returns the stream's duration in seconds. Blocking (CPU-bound);
/// callers run it on a blocking thread. A decoder panic on a damaged file is that file's
/// error.
pub fn decode_file(path: &Path, sink: &mut dyn PcmSink) -> Result<f64, FingerprintError> {
    super::mp4::check_sample_tables_in_file(path)
        .map_err(|reason| FingerprintError::Decode(format!("the file is damaged: {reason}")))?;
    let mut adapter = Adapter { sink };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        super::decode_into(path, &mut adapter)
    }))
    .map_err(|_| {
        FingerprintError::Decode("the decoder failed on this file (it is damaged)".into())
    })?
}

/// The fingerprint's sink interface over a [`PcmSink`].
struct Adapter<'s> {
    sink: &'s mut dyn PcmSink,
}

impl AudioSink for Adapter<'_> {
    fn start(
        &mut self,
        sample_rate: u32,
        layout: ChannelLayout,
        _format: InputFormat,
    ) -> Result<(), FingerprintError> {
        self.sink
            .start(sample_rate, &Speaker::of(layout))
            .map_err(FingerprintError::Unsupported)
    }

    fn push(&mut self, block: Block<'_>) -> ControlFlow<()> {
        self.sink.push(match block {
            Block::U8(planes) => Samples::U8(planes),
            Block::S16(planes) => Samples::S16(planes),
            Block::S32(planes) => Samples::S32(planes),
            Block::F32(planes) => Samples::F32(planes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speakers_follow_the_layout_in_stream_order() {
        assert_eq!(
            Speaker::of(ChannelLayout::default_for(1)),
            vec![Speaker::FrontCenter]
        );
        assert_eq!(
            Speaker::of(ChannelLayout::default_for(6)),
            vec![
                Speaker::FrontLeft,
                Speaker::FrontRight,
                Speaker::FrontCenter,
                Speaker::LowFrequency,
                Speaker::SideLeft,
                Speaker::SideRight,
            ]
        );
    }

    #[test]
    fn a_missing_file_is_an_io_error() {
        struct Nothing;
        impl PcmSink for Nothing {
            fn start(&mut self, _: u32, _: &[Speaker]) -> Result<(), String> {
                Ok(())
            }
            fn push(&mut self, _: Samples<'_>) -> ControlFlow<()> {
                ControlFlow::Continue(())
            }
        }
        let error = decode_file(Path::new("/nonexistent/audio.flac"), &mut Nothing);
        assert!(matches!(error, Err(FingerprintError::Io(_))), "{error:?}");
    }
}
