//! What to send for a media request, decided once for every interface: the original, a
//! cached Opus rendition, or a live Opus encode. `/api/v1` and Subsonic differ only in what
//! they ask ([`Want`]); a placeholder's audio is fetched first when the asker waits for it
//! ([`crate::Library::open_audio`]).

use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;

use super::{Media, Quality, TrackAudio};
use crate::auth::Caller;
use crate::{Result, TrackId};

/// The encoding a client asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Encoding {
    /// The original file.
    Original,
    /// Opus at a quality.
    Opus(Quality),
    /// Within a bit rate (kbit/s): the original when its bit rate is known and within it,
    /// else Opus at the best quality within it (the lowest when none is).
    WithinKbps(i64),
}

impl Encoding {
    /// Subsonic's `format` and `maxBitRate`: `raw` is the original; no format with no
    /// limit is the original, with a limit the original when it is within; any other format
    /// (musiclib's renditions are all Opus) is Opus within the limit (the best without one).
    pub fn subsonic(format: Option<&str>, max_kbps: Option<i64>) -> Encoding {
        let limit = max_kbps.filter(|kbps| *kbps > 0);
        match (format.map(str::to_ascii_lowercase).as_deref(), limit) {
            (Some("raw"), _) | (None, None) => Encoding::Original,
            (None, Some(limit)) => Encoding::WithinKbps(limit),
            (Some(_), Some(limit)) => Encoding::Opus(Quality::within_kbps(limit)),
            (Some(_), None) => Encoding::Opus(Quality::High),
        }
    }

    /// The Opus quality to send for an original of `original_kbps`; `None`: the original.
    pub(crate) fn opus_for(self, original_kbps: Option<i64>) -> Option<Quality> {
        match self {
            Encoding::Original => None,
            Encoding::Opus(quality) => Some(quality),
            Encoding::WithinKbps(limit) => match original_kbps {
                Some(kbps) if kbps <= limit => None,
                _ => Some(Quality::within_kbps(limit)),
            },
        }
    }
}

/// What a media request asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Want {
    /// The encoding.
    pub encoding: Encoding,
    /// Seconds into the track to start at (Opus only: a live encode starts there).
    pub offset_seconds: f64,
    /// Whether Opus that is not cached yet is encoded live. Otherwise the original is sent
    /// while the rendition is built in the background.
    pub live: bool,
    /// How long to wait for a placeholder's audio to be fetched (`None`: a placeholder is a
    /// conflict, 409).
    pub wait_for_placeholder: Option<Duration>,
}

impl Want {
    /// The original file, a placeholder a conflict.
    pub fn original() -> Want {
        Want {
            encoding: Encoding::Original,
            offset_seconds: 0.0,
            live: false,
            wait_for_placeholder: None,
        }
    }
}

/// What to send.
pub enum Delivery {
    /// Stored audio, the original or a cached rendition (byte ranges work).
    Stored {
        /// The audio.
        audio: TrackAudio,
        /// The rendition's quality; `None` for the original.
        rendition: Option<Quality>,
    },
    /// A live Opus encode (no ranges; it holds one of the live encodes until dropped).
    Live {
        /// Its quality.
        quality: Quality,
        /// The encoded bytes.
        body: BoxStream<'static, std::io::Result<Bytes>>,
    },
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delivery::Stored { audio, rendition } => f
                .debug_struct("Stored")
                .field("audio", audio)
                .field("rendition", rendition)
                .finish(),
            Delivery::Live { quality, .. } => {
                f.debug_struct("Live").field("quality", quality).finish()
            }
        }
    }
}

impl Media {
    /// Decides what to send for `want` and opens it. A placeholder is
    /// [`crate::Error::NotMaterialized`] (409); past the live encodes, [`crate::Error::Busy`].
    pub async fn open(&self, caller: &Caller, id: &TrackId, want: &Want) -> Result<Delivery> {
        let original = self.track_audio(id).await?;
        let Some(quality) = want.encoding.opus_for(original.bitrate_kbps) else {
            return Ok(Delivery::Stored {
                audio: original,
                rendition: None,
            });
        };
        if want.live && want.offset_seconds > 0.0 {
            let body = self
                .live_transcode(caller, id, quality, want.offset_seconds)
                .await?;
            return Ok(Delivery::Live { quality, body });
        }
        match self.rendition_for_stream(id, quality).await? {
            Some(audio) => Ok(Delivery::Stored {
                audio,
                rendition: Some(quality),
            }),
            None if want.live => {
                let body = self.live_transcode(caller, id, quality, 0.0).await?;
                Ok(Delivery::Live { quality, body })
            }
            None => Ok(Delivery::Stored {
                audio: original,
                rendition: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsonic_formats_and_limits() {
        use Encoding::*;
        assert_eq!(Encoding::subsonic(None, None), Original);
        assert_eq!(Encoding::subsonic(Some("raw"), Some(64)), Original);
        assert_eq!(Encoding::subsonic(None, Some(0)), Original);
        assert_eq!(Encoding::subsonic(None, Some(200)), WithinKbps(200));
        assert_eq!(Encoding::subsonic(Some("opus"), None), Opus(Quality::High));
        assert_eq!(
            Encoding::subsonic(Some("mp3"), Some(128)),
            Opus(Quality::Medium)
        );
        assert_eq!(
            Encoding::subsonic(Some("opus"), Some(8)),
            Opus(Quality::Low)
        );
    }

    #[test]
    fn a_limit_keeps_an_original_within_it() {
        let within = Encoding::WithinKbps;
        assert_eq!(within(320).opus_for(Some(256)), None);
        assert_eq!(within(320).opus_for(Some(900)), Some(Quality::High));
        assert_eq!(within(128).opus_for(Some(900)), Some(Quality::Medium));
        assert_eq!(within(96).opus_for(None), Some(Quality::Low));
        assert_eq!(within(32).opus_for(None), Some(Quality::Low));
        assert_eq!(Encoding::Original.opus_for(Some(900)), None);
        assert_eq!(
            Encoding::Opus(Quality::Low).opus_for(Some(32)),
            Some(Quality::Low)
        );
    }
}
