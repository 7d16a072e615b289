//! A track's original audio (spec: Streaming): what it is ([`TrackAudio`]: size, MIME type,
//! validators) and byte ranges of it, from local disk (slices of a memory map, never read
//! whole) or from S3 (a ranged GET, proxied).

use std::ops::Range;

use bytes::Bytes;
use futures::stream::BoxStream;

use super::Media;
use crate::domain::Availability;
use crate::{Error, Result, Timestamp, TrackId};

/// The stored audio of a track, with what an HTTP cache needs to validate it.
#[derive(Debug, Clone)]
pub struct TrackAudio {
    /// Blob key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// MIME type of the original.
    pub mime_type: String,
    /// Bit rate in kbit/s, when known.
    pub bitrate_kbps: Option<i64>,
    /// Strong validator: the content's sha256 (audio never changes in place).
    pub etag: String,
    /// When the audio was stored.
    pub last_modified: Timestamp,
}

#[derive(sqlx::FromRow)]
struct AudioRow {
    storage_uri: String,
    availability: String,
    size_bytes: Option<i64>,
    content_sha256: Option<String>,
    mime_type: Option<String>,
    bitrate_kbps: Option<i64>,
    created_at: i64,
}

impl Media {
    /// The original audio of a track. A placeholder (no audio yet) is a conflict, with a
    /// message saying so, not a missing file.
    ///
    /// Every stream request comes here, so a row read in the last few seconds is reused;
    /// deleting a track in this process forgets it at once.
    pub async fn track_audio(&self, id: &TrackId) -> Result<TrackAudio> {
        if let Some(audio) = self.state.audio.get(id) {
            return Ok(audio);
        }
        let audio = self.read_track_audio(id).await?;
        self.state.audio.insert(id.clone(), audio.clone());
        Ok(audio)
    }

    async fn read_track_audio(&self, id: &TrackId) -> Result<TrackAudio> {
        // Read only the columns streaming needs.
        let row: Option<AudioRow> = self
            .db
            .sql(
                "SELECT storage_uri, availability, size_bytes, content_sha256, mime_type, bitrate_kbps, created_at
                 FROM tracks WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let track = row.ok_or_else(|| Error::not_found("track", id))?;
        if track.storage_uri.is_empty() || track.availability == Availability::Placeholder.as_str()
        {
            return Err(Error::NotMaterialized(id.as_str().to_owned()));
        }
        let size = match track.size_bytes {
            Some(size) if size >= 0 => size as u64,
            _ => {
                self.storage
                    .blobs()
                    .head(&track.storage_uri)
                    .await?
                    .ok_or_else(|| Error::not_found("audio of track", id))?
                    .size
            }
        };
        let etag = match &track.content_sha256 {
            Some(sha) => format!("\"{}\"", &sha[..sha.len().min(32)]),
            None => format!("\"{id}-{size:x}\""),
        };
        Ok(TrackAudio {
            key: track.storage_uri,
            size,
            mime_type: track
                .mime_type
                .unwrap_or_else(|| "application/octet-stream".into()),
            bitrate_kbps: track.bitrate_kbps,
            etag,
            last_modified: Timestamp::from_micros(track.created_at),
        })
    }

    /// Streams `range` of a track's audio (a bounded read on disk, a ranged GET on S3). A
    /// missing blob is reported before any byte is sent.
    pub async fn read_audio(
        &self,
        audio: &TrackAudio,
        range: Range<u64>,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        if range.start > range.end || range.end > audio.size {
            return Err(Error::invalid(
                "range",
                format!("{range:?} is outside the {} bytes of the audio", audio.size),
            ));
        }
        if range.is_empty() {
            return Ok(Box::pin(futures::stream::empty()));
        }
        let stream = self
            .storage
            .blobs()
            .get_range_stream(&audio.key, range)
            .await?;
        Ok(crate::metrics::counted_stream("stored", stream))
    }
}
