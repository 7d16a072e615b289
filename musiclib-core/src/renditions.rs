//! Opus renditions (spec: Streaming rules 1, 3, 4; job `transcode_track`): smaller copies of
//! a track for mobile and metered listening, built by ffmpeg, kept in the blob store under a
//! size bound with least-recently-used eviction.
//!
//! A stream request with `quality` gets the rendition when it exists; on a miss it gets the
//! original at once and one `transcode_track` job per (track, quality) warms the cache,
//! however many requests miss together (the job's dedup key). A rendition is built in the
//! staging directory, stored with an atomic put, and only then given a row: a reader never
//! sees a half-written one.

use std::process::Stdio;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;

use serde_json::Value;

use crate::jobs::{kind, JobError, NewJob};
use crate::streaming::TrackAudio;
use crate::{Error, JobId, Library, Result, Timestamp, TrackId, UserId};

/// Rendition qualities (`?quality=`), Opus in Ogg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// Opus bitrate in kbit/s.
    pub fn kbps(self) -> u32 {
        match self {
            Quality::Low => 64,
            Quality::Medium => 128,
            Quality::High => 192,
        }
    }
}

/// Kind of the renditions this module builds (the table also has room for HLS).
const OPUS: &str = "opus";

fn rendition_key(track: &TrackId, quality: Quality) -> String {
    format!("renditions/{track}/{}.opus", quality.as_str())
}

fn dedup_key(track: &TrackId, quality: Quality) -> String {
    format!("transcode:{track}:{}", quality.as_str())
}

#[derive(sqlx::FromRow)]
struct RenditionRow {
    id: String,
    storage_uri: String,
    size_bytes: i64,
    created_at: i64,
}

impl Library {
    /// Whether ffmpeg (the transcoder) can be run: checked once per process.
    pub fn transcoder_available(&self) -> bool {
        let ffmpeg = self.config().transcoding.ffmpeg.clone();
        *self.transcoder_check().get_or_init(|| {
            std::process::Command::new(&ffmpeg)
                .arg("-version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
    }

    /// [`Library::transcoder_available`] for async callers: the first check runs ffmpeg on
    /// the blocking pool, not on a request's thread.
    pub(crate) async fn transcoder_ready(&self) -> bool {
        if let Some(available) = self.transcoder_check().get() {
            return *available;
        }
        let library = self.clone();
        tokio::task::spawn_blocking(move || library.transcoder_available())
            .await
            .unwrap_or(false)
    }

    /// The audio to stream for `quality`: the rendition when it is cached (its last access is
    /// stamped for the LRU), else `None` (serve the original), having queued a job to build
    /// it. The enqueue is best effort: a down queue only means the cache stays cold.
    pub async fn rendition_for_stream(
        &self,
        id: &TrackId,
        quality: Quality,
    ) -> Result<Option<TrackAudio>> {
        let row: Option<RenditionRow> = sqlx::query_as(
            "SELECT id, storage_uri, size_bytes, created_at FROM renditions
             WHERE track_id = $1 AND kind = $2 AND quality = $3",
        )
        .bind(id.as_str())
        .bind(OPUS)
        .bind(quality.as_str())
        .fetch_optional(self.db().pool())
        .await?;
        if let Some(row) = row {
            self.stamp_rendition_access(&row.id).await;
            return Ok(Some(TrackAudio {
                key: row.storage_uri,
                size: row.size_bytes.max(0) as u64,
                mime_type: "audio/ogg".into(),
                etag: format!("\"{}\"", row.id),
                last_modified: Timestamp::from_micros(row.created_at),
            }));
        }
        if self.transcoder_ready().await {
            let job = NewJob::new(
                kind::TRANSCODE,
                serde_json::json!({ "track_id": id.to_string(), "qualities": [quality.as_str()] }),
            )
            .dedup(dedup_key(id, quality));
            if let Err(error) = self.enqueue(job).await {
                tracing::warn!(track_id = %id, error = %crate::error_chain(&error), "could not queue a rendition build");
            }
        }
        Ok(None)
    }

    /// `POST /tracks/{id}/optimize`: queues a build of every rendition the track lacks (the
    /// Opus qualities and HLS).
    pub async fn request_optimize(&self, id: &TrackId, requested_by: &UserId) -> Result<JobId> {
        self.get_track(id).await?;
        if !self.transcoder_ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let qualities: Vec<&str> = Quality::ALL.iter().map(|q| q.as_str()).collect();
        self.enqueue(
            NewJob::new(
                kind::TRANSCODE,
                serde_json::json!({ "track_id": id.to_string(), "qualities": qualities, "hls": true }),
            )
            .dedup(format!("transcode:{id}:all"))
            .by(requested_by),
        )
        .await
    }

    /// Builds the renditions of `id` in `qualities` that do not exist yet. Idempotent.
    /// Returns the qualities built.
    pub async fn build_renditions(
        &self,
        id: &TrackId,
        qualities: &[Quality],
    ) -> Result<Vec<Quality>> {
        if !self.transcoder_ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let audio = self.track_audio(id).await?;
        let mut built = Vec::new();
        // The original as a local file, fetched (on S3: downloaded) once, when first needed.
        let mut source = None;
        for &quality in qualities {
            let exists: Option<(String,)> = sqlx::query_as(
                "SELECT id FROM renditions WHERE track_id = $1 AND kind = $2 AND quality = $3",
            )
            .bind(id.as_str())
            .bind(OPUS)
            .bind(quality.as_str())
            .fetch_optional(self.db().pool())
            .await?;
            if exists.is_some() {
                continue;
            }
            let source = match &mut source {
                Some(source) => source,
                None => source.insert(self.audio_as_local_file(&audio.key).await?),
            };
            let output = tempfile::Builder::new()
                .suffix(".opus")
                .tempfile_in(self.staging_dir())
                .map_err(|error| Error::io(self.staging_dir(), error))?
                .into_temp_path();
            self.run_ffmpeg(&source.path, &output, quality).await?;
            let key = rendition_key(id, quality);
            let size = self.blobs().put_file(&key, &output).await?;
            let inserted = self
                .insert_rendition(id, OPUS, quality.as_str(), &key, size)
                .await;
            match inserted {
                Ok(_) => built.push(quality),
                // The track was deleted meanwhile (the row's foreign key): drop our blob.
                Err(error) => {
                    let _ = self.blobs().delete(&key).await;
                    if self.find_track(id).await?.is_none() {
                        return Err(Error::not_found("track", id));
                    }
                    return Err(error.into());
                }
            }
        }
        self.evict_renditions(self.config().transcoding.rendition_cache_max_bytes)
            .await?;
        Ok(built)
    }

    /// Deletes least-recently-used renditions until the cache holds at most `bound` bytes
    /// (run after each build with `RENDITION_CACHE_MAX_BYTES`). The row goes first, so no
    /// reader is sent to a deleted blob.
    pub async fn evict_renditions(&self, bound: u64) -> Result<()> {
        let total: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM renditions",
        )
        .fetch_one(self.db().pool())
        .await?;
        let mut excess = total - bound.min(i64::MAX as u64) as i64;
        while excess > 0 {
            let oldest: Option<(String, String, i64)> = sqlx::query_as(
                "SELECT id, storage_uri, size_bytes FROM renditions ORDER BY last_access_at, id LIMIT 1",
            )
            .fetch_optional(self.db().pool())
            .await?;
            let Some((rendition, key, size)) = oldest else {
                break;
            };
            sqlx::query("DELETE FROM renditions WHERE id = $1")
                .bind(&rendition)
                .execute(self.db().pool())
                .await?;
            self.blobs().delete_tree(&key).await?;
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
    ) -> std::result::Result<bool, sqlx::Error> {
        let insert = self.db().sql(
            "INSERT INTO renditions (id, track_id, kind, quality, storage_uri, size_bytes, created_at, last_access_at)
             VALUES ($1, $2, $3, $4, $5, $6, {now}, {now})
             ON CONFLICT (track_id, kind, quality) DO NOTHING",
        );
        let done = sqlx::query(&insert)
            .bind(uuid::Uuid::now_v7().to_string())
            .bind(id.as_str())
            .bind(kind)
            .bind(quality)
            .bind(key)
            .bind(size as i64)
            .execute(self.db().pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn run_ffmpeg(
        &self,
        source: &std::path::Path,
        output: &std::path::Path,
        quality: Quality,
    ) -> Result<()> {
        let ffmpeg = &self.config().transcoding.ffmpeg;
        let _slot = self.cpu_slot().await;
        let result = tokio::process::Command::new(ffmpeg)
            .args(["-nostdin", "-v", "error", "-y", "-i"])
            .arg(source)
            .args(["-map", "0:a:0", "-vn", "-c:a", "libopus", "-b:a"])
            .arg(format!("{}k", quality.kbps()))
            .args(["-f", "ogg"])
            .arg(output)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|error| {
                Error::Unavailable(format!(
                    "cannot run the transcoder {}: {error}",
                    ffmpeg.display()
                ))
            })?;
        if !result.status.success() {
            let stderr = String::from_utf8_lossy(&result.stderr);
            return Err(Error::Internal(format!(
                "ffmpeg could not build the {} rendition: {}",
                quality.as_str(),
                stderr.trim()
            )));
        }
        Ok(())
    }
}

/// The `transcode_track` job.
pub(crate) async fn run_job(
    library: &Library,
    payload: &Value,
) -> std::result::Result<Value, JobError> {
    let track_id = crate::jobs::payload_track_id(payload)?;
    let qualities = payload
        .get("qualities")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(Quality::parse)
                .collect::<Result<Vec<_>>>()
        })
        .unwrap_or_else(|| Ok(Quality::ALL.to_vec()))
        .map_err(|_| JobError::permanent("the job names an unknown quality"))?;
    let with_hls = payload.get("hls").and_then(Value::as_bool) == Some(true);
    let built = async {
        let mut built: Vec<&str> = library
            .build_renditions(&track_id, &qualities)
            .await?
            .iter()
            .map(|quality| quality.as_str())
            .collect();
        if with_hls && library.build_hls(&track_id).await? {
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

impl Library {
    /// Transcodes a track to Opus at `quality` while it is read, starting `offset_seconds`
    /// in: for players that cannot wait for the cached rendition, and for seeking into a
    /// transcoded stream (OpenSubsonic `transcodeOffset`). The ffmpeg process ends when the
    /// stream is dropped. 503 [`Error::TranscoderUnavailable`] without ffmpeg.
    pub async fn live_transcode(
        &self,
        id: &TrackId,
        quality: Quality,
        offset_seconds: f64,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        if !offset_seconds.is_finite() || offset_seconds < 0.0 {
            return Err(Error::invalid(
                "timeOffset",
                "must be a non-negative number of seconds",
            ));
        }
        if !self.transcoder_ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let audio = self.track_audio(id).await?;
        let source = self.audio_as_local_file(&audio.key).await?;
        let mut child = tokio::process::Command::new(&self.config().transcoding.ffmpeg)
            .args(["-nostdin", "-v", "error", "-ss"])
            .arg(format!("{offset_seconds:.3}"))
            .arg("-i")
            .arg(&source.path)
            .args(["-map", "0:a:0", "-vn", "-c:a", "libopus", "-b:a"])
            .arg(format!("{}k", quality.kbps()))
            .args(["-f", "ogg", "pipe:1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| Error::Unavailable(format!("cannot run the transcoder: {error}")))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        // The stream owns the process and the source file: both live until it is dropped.
        let keep = (child, source);
        Ok(Box::pin(
            tokio_util::io::ReaderStream::with_capacity(stdout, 64 * 1024).map(move |chunk| {
                let _ = &keep;
                chunk
            }),
        ))
    }
}
