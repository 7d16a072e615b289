//! Fetching a placeholder's audio: the `materialize_track` job (`POST
//! /tracks/{id}/materialize`) and the `download_task` job (`/downloads`) do the same work.
//!
//! 1. The source downloads into a staging directory of its own, named after the track, under
//!    the data directory (a retry after a crash, even a `kill -9`, empties it first).
//! 2. The file is probed (it must be audio the library can read) and hashed; the blob is
//!    written atomically (`audio/{track_id}.{format}`).
//! 3. The same track row is filled in place: format, size, hash, the file's audio facts,
//!    `availability` `available`; the placeholder's title, artist and album stay, the file's
//!    tags fill what it lacks. Playlists, likes and history keep pointing at it.
//! 4. After the commit, enrichment is queued (best effort).
//!
//! A blob is written before the row points at it, and deleted when the row does not take it,
//! so no row ever points at a missing or half-written file. Both kinds share one dedup key per
//! track, so a materialization and a download of one track are one job. They retry by the
//! download policy (`DOWNLOAD_MAX_ATTEMPTS`, `DOWNLOAD_RETRY_*`); permanent failures (gone at
//! the source, refused, too large, not audio, cancelled) do not retry. The job stops only when no one wants it any more (every download of it
//! cancelled, no materialization: `downloads.rs`); it then stops within a second when
//! running: the source's process is killed and the staging directory removed.
//!
//! A staging directory outlives its job only when the process running it was killed: a
//! retry empties it, and when the job ended for good meanwhile (its last attempt killed), the
//! next fetch of any track removes it once it is a minute old and no live job wants it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{has_audio, DownloadRequest, Progress, Remote, SourceError};
use crate::catalog::writes::{self, StoredAudio};
use crate::config::RetryPolicy;
use crate::enrichment::{EnrichPayload, EnrichTrack};
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::probe::AudioFacts;
use crate::storage::layout;
use crate::{Config, Error, JobId, Result, TrackId};

/// How often a running fetch reports progress and looks for a cancellation.
const TICK: Duration = Duration::from_millis(500);
/// The reason a cancelled job ends with.
pub(super) const CANCELLED: &str = "cancelled by the user";

/// Payload of both fetch kinds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FetchPayload {
    /// The placeholder to fill.
    pub track_id: TrackId,
    /// The download that asked for it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_id: Option<String>,
}

/// A fetch of a placeholder's audio into storage, under the name of who asked for it:
/// [`MaterializeTrack`] or [`DownloadTask`]. One handler, one payload, one dedup key per
/// track: a second asker joins the live job. The name is how the job remembers that a
/// materialization wants it ([`crate::remote::Remote::materialize`] renames a download's job
/// it joins), so cancelling the downloads that share it does not stop it.
pub struct Fetch<Asker>(std::marker::PhantomData<Asker>);

/// Who asks for a [`Fetch`], which names its job.
pub trait Asker: Send + Sync + 'static {
    /// The job kind's stored name.
    const NAME: &'static str;
}

/// A materialization (`POST /tracks/{id}/materialize`, a stream of a placeholder).
pub struct ForPlayback;

impl Asker for ForPlayback {
    const NAME: &'static str = "materialize_track";
}

/// A download (`/downloads`).
pub struct ForDownload;

impl Asker for ForDownload {
    const NAME: &'static str = "download_task";
}

/// The `materialize_track` job: fetch a placeholder's audio now, because someone wants it.
pub type MaterializeTrack = Fetch<ForPlayback>;

/// The `download_task` job: fetch a remote item into the library, for `/downloads`.
pub type DownloadTask = Fetch<ForDownload>;

impl<A: Asker> JobKind for Fetch<A> {
    const NAME: &'static str = A::NAME;
    const POOL: Pool = Pool::General;
    type Payload = FetchPayload;
    type Service = Remote;

    fn dedup_key(payload: &FetchPayload) -> Option<String> {
        Some(dedup_key(&payload.track_id))
    }

    fn retry(config: &Config) -> Option<RetryPolicy> {
        Some(config.remote.download_retry)
    }

    async fn run(
        remote: &Remote,
        context: &JobContext,
        payload: FetchPayload,
    ) -> Result<Value, JobError> {
        remote.fetch(context, &payload.track_id).await
    }
}

/// One live fetch per track, whichever kind asked.
fn dedup_key(track: &TrackId) -> String {
    format!("{DEDUP_PREFIX}{track}")
}

/// What every fetch's dedup key starts with.
const DEDUP_PREFIX: &str = "fetch:";

/// A staging directory removed when dropped.
struct StagingDir(PathBuf);

impl StagingDir {
    /// Empties (a crashed attempt's leftovers) and creates `path`.
    fn create(path: PathBuf) -> Result<StagingDir> {
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(Error::io(&path, error)),
        }
        std::fs::create_dir_all(&path).map_err(|error| Error::io(&path, error))?;
        Ok(StagingDir(path))
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a downloaded file is.
struct Stored {
    facts: AudioFacts,
    size: u64,
    sha256: String,
}

impl Remote {
    /// The work of both fetch kinds (module docs).
    pub(crate) async fn fetch(
        &self,
        context: &JobContext,
        track_id: &TrackId,
    ) -> Result<Value, JobError> {
        let Some(track) = self.catalog.find_track(track_id).await? else {
            return Err(JobError::permanent(format!("track {track_id} was deleted")));
        };
        if has_audio(&track) {
            return Ok(json!({"track_id": track_id, "already_available": true}));
        }
        let name = match track.source {
            crate::domain::Source::Remote => super::YTDLP,
            crate::domain::Source::Subsonic => super::SUBSONIC,
            other => {
                return Err(JobError::permanent(format!(
                    "track {track_id} comes from {other}, not from a remote source"
                )))
            }
        };
        let Some(source) = self.source(name).cloned() else {
            return Err(JobError::permanent(format!(
                "the {name} source is disabled: {}",
                super::disabled_reason(name)
            )));
        };
        self.sweep_staging(Some(track_id)).await;
        let staging = StagingDir::create(self.staging_of(track_id))?;
        let progress = Arc::new(Mutex::new(Progress::default()));
        let report = {
            let progress = progress.clone();
            move |now: Progress| *progress.lock().expect("progress") = now
        };
        let path = {
            let download = source.download(
                &track.source_id,
                DownloadRequest {
                    dir: &staging.0,
                    max_bytes: self.max_bytes,
                    progress: &report,
                },
            );
            tokio::pin!(download);
            let mut ticker = tokio::time::interval(TICK);
            let mut reported = None;
            loop {
                tokio::select! {
                    done = &mut download => break done,
                    _ = ticker.tick() => {
                        let now = *progress.lock().expect("progress");
                        if reported != Some(now) {
                            reported = Some(now);
                            context.progress(&progress_value(now)).await;
                        }
                        if self.abandoned(context.job_id()).await? {
                            // Dropping the download stops it (its process is killed).
                            return Err(JobError::permanent(CANCELLED));
                        }
                    }
                }
            }
        };
        let path = path.map_err(|error| fetch_error(name, &track.source_id, error))?;
        let last = *progress.lock().expect("progress");
        if let Ok(metadata) = std::fs::metadata(&path) {
            // The whole file arrived: say so, whatever the last tick saw.
            let size = metadata.len().max(last.bytes);
            context
                .progress(&progress_value(Progress {
                    bytes: size,
                    total: Some(last.total.unwrap_or(size).max(size)),
                }))
                .await;
        }
        let stored = self.check_file(&path).await?;
        if stored.size > self.max_bytes {
            return Err(JobError::permanent(format!(
                "the file is {} bytes, over the limit of {} (MAX_UPLOAD_BYTES)",
                stored.size, self.max_bytes
            )));
        }
        // A key of this fetch's own: a second fetch of the track (one whose lease was lost)
        // never overwrites the bytes the first one's row points at.
        let key = layout::audio_revision(track_id, stored.facts.format);
        self.storage.blobs().put_file(&key, &path).await?;
        drop(staging);
        let filled = self.fill(context, track_id, &key, &stored).await;
        if !matches!(filled, Ok(true)) {
            // Keep the blob only if the track points at it (a concurrent fetch that won).
            let current = self.catalog.find_track(track_id).await.ok().flatten();
            if current.is_none_or(|track| track.storage_uri != key) {
                self.storage.delete_unreferenced([key.clone()]).await;
            }
        }
        if !filled? {
            return Ok(json!({"track_id": track_id, "already_available": true}));
        }
        self.media.forget_track(track_id);
        self.jobs
            .enqueue_best_effort::<EnrichTrack>(
                [EnrichPayload {
                    track_id: track_id.clone(),
                }],
                None,
            )
            .await;
        tracing::info!(%track_id, source = name, size = stored.size, format = stored.facts.format, "remote track fetched");
        Ok(json!({
            "track_id": track_id,
            "size_bytes": stored.size,
            "format": stored.facts.format,
            "sha256": stored.sha256,
        }))
    }

    /// Probes and hashes a downloaded file (off the async runtime).
    async fn check_file(&self, path: &Path) -> Result<Stored, JobError> {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let size = std::fs::metadata(&path)
                .map_err(|error| JobError::from(Error::io(&path, error)))?
                .len();
            let facts = crate::probe::probe_file(&path, &name).map_err(|message| {
                JobError::permanent(format!(
                    "the downloaded file is not usable audio: {message}"
                ))
            })?;
            let sha256 = crate::storage::sha256_file(&path)?;
            Ok(Stored {
                facts,
                size,
                sha256,
            })
        })
        .await
        .map_err(|error| JobError::from(Error::task("probe")(error)))?
    }

    /// Fills the placeholder with the stored file. False when it is no placeholder any
    /// more (another fetch filled it). Fenced: a worker that lost the job's lease commits
    /// nothing.
    async fn fill(
        &self,
        context: &JobContext,
        track_id: &TrackId,
        key: &str,
        stored: &Stored,
    ) -> Result<bool, JobError> {
        let db = &self.db;
        let mut tx = db.begin().await?;
        context.fence(&mut tx).await?;
        let row = crate::catalog::lock_track(db, &mut tx, track_id).await?;
        if row.availability != "placeholder" {
            return Ok(false);
        }
        let audio = StoredAudio {
            key,
            facts: &stored.facts,
            size_bytes: stored.size as i64,
            sha256: &stored.sha256,
        };
        writes::fill_placeholder(db, &mut tx, track_id, audio).await?;
        tx.commit().await.map_err(crate::Error::from)?;
        Ok(true)
    }

    /// Whether no one wants this job's fetch any more (its downloads were cancelled, and no
    /// materialization asked for it: `downloads.rs`).
    async fn abandoned(&self, job: &JobId) -> Result<bool> {
        let Some(job) = self.jobs.get_many(&[job]).await?.remove(job) else {
            return Ok(false);
        };
        self.nobody_wants(self.db.pool(), &job).await
    }

    /// The staging directory of a track's fetch.
    fn staging_of(&self, track_id: &TrackId) -> PathBuf {
        self.storage.staging_dir().join(format!("fetch-{track_id}"))
    }

    /// Whether a live fetch job of the track exists.
    async fn fetch_live(&self, track_id: &TrackId) -> Result<bool> {
        self.jobs.live(&dedup_key(track_id)).await
    }

    /// Removes a track's staging directory when no live job would use it (best effort).
    pub(super) async fn remove_idle_staging(&self, track_id: &TrackId) {
        let path = self.staging_of(track_id);
        if path.exists() && matches!(self.fetch_live(track_id).await, Ok(false)) {
            if let Err(error) = std::fs::remove_dir_all(&path) {
                tracing::warn!(path = %path.display(), %error, "cannot remove a fetch's staging directory");
            }
        }
    }

    /// Removes the staging directories that fetches killed on their last attempt left (at
    /// least a minute old, no live job of their track), except `current`'s. Best effort; run
    /// by every fetch and by storage cleanup.
    pub(crate) async fn sweep_staging(&self, current: Option<&TrackId>) {
        const STALE: Duration = Duration::from_secs(60);
        let staging = self.storage.staging_dir().to_path_buf();
        let current = current.map(dedup_key);
        let listed = tokio::task::spawn_blocking(move || {
            let Ok(entries) = std::fs::read_dir(&staging) else {
                return Vec::new();
            };
            entries
                .flatten()
                .filter_map(|entry| {
                    let name = entry.file_name().into_string().ok()?;
                    let key =
                        dedup_key(&TrackId::from_db(name.strip_prefix("fetch-")?.to_string()));
                    let old = entry
                        .metadata()
                        .ok()?
                        .modified()
                        .ok()?
                        .elapsed()
                        .is_ok_and(|age| age >= STALE);
                    (old && entry.file_type().ok()?.is_dir() && Some(&key) != current.as_ref())
                        .then(|| (key, entry.path()))
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        if listed.is_empty() {
            return;
        }
        // The live fetches, read once.
        let live: HashSet<String> = match self.jobs.live_dedup_keys(DEDUP_PREFIX).await {
            Ok(keys) => keys.into_iter().collect(),
            Err(_) => return,
        };
        let stale: Vec<PathBuf> = listed
            .into_iter()
            .filter(|(key, _)| !live.contains(key))
            .map(|(_, path)| path)
            .collect();
        let _ = tokio::task::spawn_blocking(move || {
            for path in stale {
                if let Err(error) = std::fs::remove_dir_all(&path) {
                    tracing::warn!(path = %path.display(), %error, "cannot remove a fetch's staging directory");
                }
            }
        })
        .await;
    }
}

fn progress_value(progress: Progress) -> Value {
    json!({
        "bytes": progress.bytes,
        "total": progress.total,
        "percent": progress.total.filter(|total| *total > 0).map(|total| {
            ((progress.bytes as f64 / total as f64) * 100.0).min(100.0).round()
        }),
    })
}

/// A source's failure as the job's: temporary ones retry, the rest stay.
fn fetch_error(source: &str, source_id: &str, error: SourceError) -> JobError {
    let message = format!("{source} {source_id}: {}", error.message());
    if error.retryable() {
        JobError::retry(message)
    } else {
        JobError::permanent(message)
    }
}
