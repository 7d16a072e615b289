//! Streaming (spec: Streaming): the audio of a track as byte ranges, from local disk (read in
//! chunks, never whole) or from S3 (a ranged GET, proxied). HTTP semantics (Range parsing,
//! status codes) are the adapter's; this module answers "what is this track's audio" and
//! "give me these bytes of it".

use std::ops::Range;

use bytes::Bytes;
use futures::stream::BoxStream;

use crate::domain::Availability;
use crate::{Error, Library, Result, Timestamp, TrackId};

/// What a `Range` header asks of a representation of `size` bytes, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByteRange {
    /// The whole representation (no Range, or one the server ignores: invalid syntax,
    /// several ranges).
    Whole,
    /// One satisfiable range.
    Part(Range<u64>),
    /// A range that starts beyond the end.
    Unsatisfiable,
}

/// Resolves a `Range` header value against `size` bytes, for the adapters. Parsing is
/// http-range-header's; what to do with its answer follows RFC 9110 §14.1.2: a suffix longer
/// than the representation means all of it, an end beyond it means its last byte, a start
/// beyond it is unsatisfiable, and an invalid header is ignored.
pub fn byte_range(header: &str, size: u64) -> ByteRange {
    use http_range_header::{EndPosition, StartPosition};
    let parsed = match http_range_header::parse_range_header(header) {
        Ok(parsed) => parsed,
        // `bytes=-0` is well-formed but selects nothing (§14.1.1).
        Err(http_range_header::RangeUnsatisfiableError::ZeroSuffix) => {
            return ByteRange::Unsatisfiable
        }
        Err(_) => return ByteRange::Whole,
    };
    let [only] = parsed.ranges.as_slice() else {
        // Several ranges: answering with the whole body is allowed, and what players need.
        return ByteRange::Whole;
    };
    let (start, end) = match (only.start, only.end) {
        (StartPosition::FromLast(0), _) => return ByteRange::Unsatisfiable,
        (StartPosition::FromLast(suffix), _) => (size.saturating_sub(suffix), size),
        (StartPosition::Index(start), EndPosition::LastByte) => (start, size),
        (StartPosition::Index(start), EndPosition::Index(last)) => {
            if last < start {
                return ByteRange::Whole;
            }
            (start, last.saturating_add(1).min(size))
        }
    };
    if start >= size {
        ByteRange::Unsatisfiable
    } else {
        ByteRange::Part(start..end)
    }
}

/// The stored audio of a track, with what an HTTP cache needs to validate it.
#[derive(Debug, Clone)]
pub struct TrackAudio {
    /// Blob key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// MIME type of the original.
    pub mime_type: String,
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
    created_at: i64,
}

impl Library {
    /// The original audio of a track. A placeholder (no audio yet) is a conflict, with a
    /// message saying so, not a missing file.
    ///
    /// Every stream request comes here, so a row read in the last few seconds is reused;
    /// deleting a track in this process forgets it at once.
    pub async fn track_audio(&self, id: &TrackId) -> Result<TrackAudio> {
        if let Some(audio) = self.audio_cache().get(id) {
            return Ok(audio);
        }
        let audio = self.read_track_audio(id).await?;
        self.audio_cache().insert(id.clone(), audio.clone());
        Ok(audio)
    }

    async fn read_track_audio(&self, id: &TrackId) -> Result<TrackAudio> {
        // Read only the columns streaming needs.
        let row: Option<AudioRow> = sqlx::query_as(
            "SELECT storage_uri, availability, size_bytes, content_sha256, mime_type, created_at
             FROM tracks WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(self.db().pool())
        .await?;
        let track = row.ok_or_else(|| Error::not_found("track", id))?;
        if track.storage_uri.is_empty() || track.availability == Availability::Placeholder.as_str()
        {
            return Err(Error::Conflict(format!(
                "track {id} has no audio yet: it is a placeholder of a remote track"
            )));
        }
        let size = match track.size_bytes {
            Some(size) if size >= 0 => size as u64,
            _ => {
                self.blobs()
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
        self.blobs().get_range_stream(&audio.key, range).await
    }
}

/// A track's audio as a file on local disk: the blob itself on the local backend, a
/// temporary copy (deleted on drop) on S3.
pub(crate) struct LocalFile {
    /// The file.
    pub path: std::path::PathBuf,
    _temp: Option<tempfile::TempPath>,
}

impl Library {
    /// The blob `key` as a local file, for tools that need a path (decoders, ffmpeg).
    pub(crate) async fn audio_as_local_file(&self, key: &str) -> Result<LocalFile> {
        if key.is_empty() {
            return Err(Error::not_found("audio", "the track has no audio"));
        }
        if let Some(path) = self.blobs().local_path(key) {
            return Ok(LocalFile { path, _temp: None });
        }
        let extension = std::path::Path::new(key)
            .extension()
            .and_then(|extension| extension.to_str())
            .unwrap_or("bin");
        let temp = tempfile::Builder::new()
            .suffix(&format!(".{extension}"))
            .tempfile_in(self.staging_dir())
            .map_err(|error| Error::io(self.staging_dir(), error))?
            .into_temp_path();
        self.blobs().download_to(key, &temp).await?;
        Ok(LocalFile {
            path: temp.to_path_buf(),
            _temp: Some(temp),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc_9110() {
        use ByteRange::*;
        assert_eq!(byte_range("bytes=0-99", 1000), Part(0..100));
        assert_eq!(byte_range("bytes=900-", 1000), Part(900..1000));
        assert_eq!(byte_range("bytes=-100", 1000), Part(900..1000));
        // A suffix longer than the file is all of it; an end past the file is its last byte.
        assert_eq!(byte_range("bytes=-5000", 1000), Part(0..1000));
        assert_eq!(byte_range("bytes=990-5000", 1000), Part(990..1000));
        assert_eq!(byte_range("bytes=999-999", 1000), Part(999..1000));
        assert_eq!(byte_range("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(byte_range("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(byte_range("bytes=0-", 0), Unsatisfiable);
        // Ignored: bad syntax, other units, several ranges, reversed.
        assert_eq!(byte_range("bytes=abc", 1000), Whole);
        assert_eq!(byte_range("items=0-1", 1000), Whole);
        assert_eq!(byte_range("bytes=0-1,5-6", 1000), Whole);
        assert_eq!(byte_range("bytes=9-1", 1000), Whole);
    }
}
