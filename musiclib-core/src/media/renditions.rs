//! Opus renditions (spec: Streaming rules 1, 3, 4; job `transcode_track`): smaller copies of
//! a track for mobile and metered listening, built by ffmpeg, kept in the blob store under a
//! size bound with least-recently-used eviction.
//!
//! A stream request with `quality` gets the rendition when it exists; on a miss it gets the
//! original at once and one `transcode_track` job per (track, quality) warms the cache,
//! however many requests miss together (the job's dedup key). A rendition is built in the
//! staging directory, stored with an atomic put, and only then given a row: a reader never
//! sees a half-written one.

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Media, TrackAudio};
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::storage::layout;
use crate::{Error, JobId, Result, Timestamp, TrackId, UserId};

/// Rendition qualities (`?quality=`), Opus in Ogg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quality {
    /// 64 kbit/s: speech-transparent, for metered connections.
    Low,
    /// 128 kbit/s: transparent for most music.
    Medium,
    /// 192 kbit/s.
    High,
}

impl Quality {
    /// Every quality, lowest first.
    pub const ALL: [Quality; 3] = [Quality::Low, Quality::Medium, Quality::High];

    /// Parses `low`, `medium` or `high`.
    pub fn parse(text: &str) -> Result<Quality> {
        match text {
            "low" => Ok(Quality::Low),
            "medium" => Ok(Quality::Medium),
            "high" => Ok(Quality::High),
            _ => Err(Error::invalid("quality", "must be low, medium or high")),
        }
    }

    /// The name used in URLs and rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::Low => "low",
            Quality::Medium => "medium",
            Quality::High => "high",
        }
    }

    /// The best quality within a bit rate limit (kbit/s); the lowest when none is.
    pub fn within_kbps(max_kbps: i64) -> Quality {
        Quality::ALL
            .into_iter()
            .filter(|quality| i64::from(quality.kbps()) <= max_kbps)
            .max_by_key(|quality| quality.kbps())
            .unwrap_or(Quality::Low)
    }

    /// Opus bitrate in kbit/s.
    pub fn kbps(self) -> u32 {
        match self {
            Quality::Low => 64,
            Quality::Medium => 128,
            Quality::High => 192,
        }
    }
}

/// Kind of the renditions this module builds (the table also holds HLS ones).
const OPUS: &str = "opus";

/// The `transcode_track` job: builds a track's missing renditions.
#[derive(Debug)]
pub struct TranscodeTrack;

/// What a `transcode_track` job builds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscodePayload {
    /// The track.
    pub track_id: TrackId,
    /// The Opus qualities (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualities: Option<Vec<Quality>>,
    /// Whether to build the HLS rendition too.
    #[serde(default)]
    pub hls: bool,
}

impl JobKind for TranscodeTrack {
    const NAME: &'static str = "transcode_track";
    const POOL: Pool = Pool::General;
    type Payload = TranscodePayload;
    type Service = Media;

    /// One build per track and quality when a stream missed one quality; one per track for
    /// a full build ([`Media::request_optimize`]).
    fn dedup_key(payload: &TranscodePayload) -> Option<String> {
        let track = &payload.track_id;
        Some(match payload.qualities.as_deref() {
            Some([quality]) if !payload.hls => format!("transcode:{track}:{}", quality.as_str()),
            _ => format!("transcode:{track}:all"),
        })
    }

    async fn run(
        media: &Media,
        _context: &JobContext,
        payload: TranscodePayload,
    ) -> Result<Value, JobError> {
        let qualities = payload.qualities.unwrap_or_else(|| Quality::ALL.to_vec());
        let built = async {
            let mut built: Vec<&str> = media
                .build_renditions(&payload.track_id, &qualities)
                .await?
                .iter()
                .map(|quality| quality.as_str())
                .collect();
            if payload.hls && media.build_hls(&payload.track_id).await? {
                built.push("hls");
            }
            Ok::<_, Error>(built)
        };
        match built.await {
            Ok(built) => Ok(serde_json::json!({ "built": built })),
            Err(Error::NotFound { .. }) => {
                Ok(serde_json::json!({ "outcome": "skipped", "reason": "the track was deleted" }))
            }
            Err(
                error @ (Error::Conflict(_) | Error::Unavailable(_) | Error::TranscoderUnavailable),
            ) => Err(JobError::permanent(error.to_string())),
            Err(error) => Err(JobError::from(error)),
        }
    }
}

#[derive(sqlx::FromRow)]
struct RenditionRow {
    id: String,
    storage_uri: String,
    size_bytes: i64,
    created_at: i64,
}

impl Media {
    /// The audio to stream for `quality`: the rendition when it is cached (its last access is
    /// stamped for the LRU), else `None` (serve the original), having queued a job to build
    /// it. The enqueue is best effort: a down queue only means the cache stays cold.
    pub async fn rendition_for_stream(
        &self,
        id: &TrackId,
        quality: Quality,
    ) -> Result<Option<TrackAudio>> {
        let row: Option<RenditionRow> = self
            .db
            .sql(
                "SELECT id, storage_uri, size_bytes, created_at FROM renditions
                 WHERE track_id = $1 AND kind = $2 AND quality = $3",
            )
            .bind(id)
            .bind(OPUS)
            .bind(quality.as_str())
            .fetch_optional(self.db.pool())
            .await?;
        crate::metrics::cache_lookup("renditions", row.is_some());
        if let Some(row) = row {
            self.stamp_rendition_access(&row.id).await;
            return Ok(Some(TrackAudio {
                key: row.storage_uri,
                size: row.size_bytes.max(0) as u64,
                mime_type: "audio/ogg".into(),
                bitrate_kbps: Some(i64::from(quality.kbps())),
                etag: format!("\"{}\"", row.id),
                last_modified: Timestamp::from_micros(row.created_at),
            }));
        }
        if self.transcoder.ready().await {
            let payload = TranscodePayload {
                track_id: id.clone(),
                qualities: Some(vec![quality]),
                hls: false,
            };
            if let Err(error) = self.jobs.enqueue::<TranscodeTrack>(&payload, None).await {
                tracing::warn!(track_id = %id, error = %crate::error_chain(&error), "could not queue a rendition build");
            }
        }
        Ok(None)
    }

    /// Queues a build of every rendition the track lacks (the
    /// Opus qualities and HLS).
    pub async fn request_optimize(&self, id: &TrackId, requested_by: &UserId) -> Result<JobId> {
        self.catalog.get_track(id).await?;
        if !self.transcoder.ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let payload = TranscodePayload {
            track_id: id.clone(),
            qualities: Some(Quality::ALL.to_vec()),
            hls: true,
        };
        self.jobs
            .enqueue::<TranscodeTrack>(&payload, Some(requested_by))
            .await
    }

    /// Builds the renditions of `id` in `qualities` that do not exist yet. Idempotent.
    /// Returns the qualities built.
    pub async fn build_renditions(
        &self,
        id: &TrackId,
        qualities: &[Quality],
    ) -> Result<Vec<Quality>> {
        if !self.transcoder.ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let audio = self.track_audio(id).await?;
        let mut built = Vec::new();
        // The original as a local file, fetched (on S3: downloaded) once, when first needed.
        let mut source = None;
        for &quality in qualities {
            let exists: Option<String> = self
                .db
                .sql("SELECT id FROM renditions WHERE track_id = $1 AND kind = $2 AND quality = $3")
                .bind(id)
                .bind(OPUS)
                .bind(quality.as_str())
                .fetch_scalar_optional(self.db.pool())
                .await?;
            if exists.is_some() {
                continue;
            }
            let source = match &mut source {
                Some(source) => source,
                None => source.insert(self.storage.local_file(&audio.key).await?),
            };
            let output = self.storage.temp_file(".opus")?;
            self.transcoder
                .opus_file(&source.path, &output, quality.kbps())
                .await?;
            let key = layout::opus_rendition(id, quality.as_str());
            let size = self.storage.blobs().put_file(&key, &output).await?;
            match self
                .insert_rendition(id, OPUS, quality.as_str(), &key, size)
                .await
            {
                Ok(_) => {
                    crate::metrics::rendition_built(OPUS);
                    built.push(quality);
                }
                // The track was deleted meanwhile (the row's foreign key): drop our blob.
                Err(error) => {
                    self.storage.delete_unreferenced([key]).await;
                    if self.catalog.find_track(id).await?.is_none() {
                        return Err(Error::not_found("track", id));
                    }
                    return Err(error);
                }
            }
        }
        self.evict_renditions(self.cache_max_bytes).await?;
        Ok(built)
    }

    /// Deletes least-recently-used renditions until the cache holds at most `bound` bytes
    /// (run after each build with `RENDITION_CACHE_MAX_BYTES`). The row goes first, so no
    /// reader is sent to a deleted blob.
    pub async fn evict_renditions(&self, bound: u64) -> Result<()> {
        let total: i64 = self
            .db
            .sql("SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM renditions")
            .fetch_scalar(self.db.pool())
            .await?;
        let mut excess = total - bound.min(i64::MAX as u64) as i64;
        while excess > 0 {
            let oldest: Option<(String, String, i64)> = self
                .db
                .sql("SELECT id, storage_uri, size_bytes FROM renditions ORDER BY last_access_at, id LIMIT 1")
                .fetch_optional(self.db.pool())
                .await?;
            let Some((rendition, key, size)) = oldest else {
                break;
            };
            self.db
                .sql("DELETE FROM renditions WHERE id = $1")
                .bind(rendition.as_str())
                .execute(self.db.pool())
                .await?;
            self.storage.blobs().delete_tree(&key).await?;
            tracing::info!(%key, size, "evicted a rendition (cache over RENDITION_CACHE_MAX_BYTES)");
            excess -= size;
        }
        Ok(())
    }

    /// Publishes a stored rendition: its row, unless one of the same track, kind and
    /// quality exists (another worker won: `Ok(false)`). A deleted track fails on its
    /// foreign key.
    pub(crate) async fn insert_rendition(
        &self,
        id: &TrackId,
        kind: &str,
        quality: &str,
        key: &str,
        size: u64,
    ) -> Result<bool> {
        let inserted = self
            .db
            .sql(
                "INSERT INTO renditions (id, track_id, kind, quality, storage_uri, size_bytes, created_at, last_access_at)
                 VALUES ($1, $2, $3, $4, $5, $6, {now}, {now})
                 ON CONFLICT (track_id, kind, quality) DO NOTHING",
            )
            .bind(uuid::Uuid::now_v7().to_string())
            .bind(id)
            .bind(kind)
            .bind(quality)
            .bind(key)
            .bind(size as i64)
            .execute(self.db.pool())
            .await?;
        Ok(inserted == 1)
    }

    /// Transcodes a track to Opus at `quality` while it is read, starting `offset_seconds`
    /// in: for players that cannot wait for the cached rendition, and for seeking into a
    /// transcoded stream (OpenSubsonic `transcodeOffset`). The ffmpeg process ends when the
    /// stream is dropped. 503 [`Error::TranscoderUnavailable`] without ffmpeg.
    ///
    /// The stream holds one of the live encodes for `caller` (`MAX_LIVE_ENCODES`, per user
    /// `MAX_LIVE_ENCODES_PER_USER`) until it is dropped: past them, [`Error::Busy`] (503 with
    /// `Retry-After`).
    pub async fn live_transcode(
        &self,
        caller: &crate::auth::Caller,
        id: &TrackId,
        quality: Quality,
        offset_seconds: f64,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        let audio = self.track_audio(id).await?;
        self.live_transcode_audio(caller, &audio, quality, offset_seconds)
            .await
    }

    /// [`Media::live_transcode`] of stored audio that is not a track's (a podcast episode).
    pub async fn live_transcode_audio(
        &self,
        caller: &crate::auth::Caller,
        audio: &TrackAudio,
        quality: Quality,
        offset_seconds: f64,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        let kbps = quality.kbps();
        self.live_pipe(caller, audio, offset_seconds, |transcoder, path| {
            transcoder.opus_pipe(path, kbps, offset_seconds)
        })
        .await
    }

    /// A live encode of stored audio to `target` (OpenSubsonic `transcoding`), starting
    /// `offset_seconds` in, under the same bounds as [`Media::live_transcode`].
    pub async fn live_encode_audio(
        &self,
        caller: &crate::auth::Caller,
        audio: &TrackAudio,
        target: &super::decision::Target,
        offset_seconds: f64,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        self.live_pipe(caller, audio, offset_seconds, |transcoder, path| {
            transcoder.encode_pipe(path, target, offset_seconds)
        })
        .await
    }

    /// The bytes of the ffmpeg `spawn` starts on `audio`'s file, holding one of the live
    /// encodes for `caller` until the stream is dropped.
    async fn live_pipe(
        &self,
        caller: &crate::auth::Caller,
        audio: &TrackAudio,
        offset_seconds: f64,
        spawn: impl FnOnce(&super::Transcoder, &std::path::Path) -> Result<tokio::process::Child>,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        if !offset_seconds.is_finite() || offset_seconds < 0.0 {
            return Err(Error::invalid(
                "timeOffset",
                "must be a non-negative number of seconds",
            ));
        }
        if !self.transcoder.ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let slot = self.state.live_budget.take(&caller.user.id)?;
        let source = self.storage.local_file(&audio.key).await?;
        let mut child = spawn(&self.transcoder, &source.path)?;
        let stdout = child.stdout.take().expect("stdout is piped");
        // The stream owns the process, the source file and its live-encode place: all live
        // until it is dropped (the player left: ffmpeg is killed).
        let keep = (child, source, slot);
        Ok(crate::metrics::counted_stream(
            "transcode",
            Box::pin(
                tokio_util::io::ReaderStream::with_capacity(stdout, 64 * 1024).map(move |chunk| {
                    let _ = &keep;
                    chunk
                }),
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_of_queued_jobs_still_parse_and_dedup_as_before() {
        let track = TrackId::new();
        let single: TranscodePayload = serde_json::from_value(serde_json::json!({
            "track_id": track.to_string(), "qualities": ["low"]
        }))
        .unwrap();
        assert_eq!(
            TranscodeTrack::dedup_key(&single).unwrap(),
            format!("transcode:{track}:low")
        );
        let all: TranscodePayload = serde_json::from_value(serde_json::json!({
            "track_id": track.to_string(), "qualities": ["low", "medium", "high"], "hls": true
        }))
        .unwrap();
        assert_eq!(
            TranscodeTrack::dedup_key(&all).unwrap(),
            format!("transcode:{track}:all")
        );
        let bare: TranscodePayload =
            serde_json::from_value(serde_json::json!({ "track_id": track.to_string() })).unwrap();
        assert_eq!((bare.qualities, bare.hls), (None, false));
        assert!(
            serde_json::from_value::<TranscodePayload>(serde_json::json!({
                "track_id": track.to_string(), "qualities": ["lossless"]
            }))
            .is_err()
        );
    }
}
