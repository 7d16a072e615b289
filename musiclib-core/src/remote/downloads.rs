//! Downloads (`/downloads`): what a user asked to fetch into the library, and how it goes.
//!
//! A download names a hit (source, source id). Creating one saves the hit as a placeholder
//! (when the library has no track for it) and queues a `download_task` job that fills that
//! track ([`super::fetch`]); the download carries the track's id from the start. Its state is
//! read from its job, so it never disagrees with what the worker did:
//!
//! | state | meaning |
//! |---|---|
//! | `queued` | waiting for a worker |
//! | `downloading` | a worker is fetching it (`bytes_downloaded`, `bytes_total`, `percent`) |
//! | `retrying` | an attempt failed and another follows at `next_retry_at` (`error` says why) |
//! | `completed` | the track has its audio |
//! | `failed` | attempts used up, or a failure no retry fixes (`error`) |
//! | `cancelled` | the user cancelled it |
//!
//! A hit the library already has with audio is answered at once as `completed`
//! (`already_in_library`), with no job. A second download of a hit whose download is still
//! live answers the live one.

use super::{fetch::FetchPayload, has_audio, DownloadTask, Remote};
use crate::auth::Caller;
use crate::domain::{Page, Paged};
use crate::jobs::{Job, JobKind, JobState};
use crate::{DownloadId, Error, JobId, Result, Timestamp, TrackId, UserId};

/// State of a download (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownloadState {
    /// Waiting for a worker.
    Queued,
    /// Being fetched.
    Downloading,
    /// Failed once, retrying at `next_retry_at`.
    Retrying,
    /// Done: the track has audio.
    Completed,
    /// Gave up.
    Failed,
    /// Cancelled by the user.
    Cancelled,
}

impl DownloadState {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DownloadState::Queued => "queued",
            DownloadState::Downloading => "downloading",
            DownloadState::Retrying => "retrying",
            DownloadState::Completed => "completed",
            DownloadState::Failed => "failed",
            DownloadState::Cancelled => "cancelled",
        }
    }

    /// Whether it can still change by itself.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            DownloadState::Queued | DownloadState::Downloading | DownloadState::Retrying
        )
    }
}

/// A download.
#[derive(Debug, Clone)]
pub struct Download {
    /// Id.
    pub id: DownloadId,
    /// Who asked.
    pub user_id: Option<UserId>,
    /// The track it fills (a placeholder until it completes).
    pub track_id: TrackId,
    /// The source.
    pub source: String,
    /// The item's id there.
    pub source_id: String,
    /// The job doing it (none when the library had it already).
    pub job_id: Option<JobId>,
    /// How it goes.
    pub state: DownloadState,
    /// Bytes fetched so far (by the running or last attempt).
    pub bytes_downloaded: Option<i64>,
    /// Bytes expected, when the source says.
    pub bytes_total: Option<i64>,
    /// Attempts started.
    pub attempts: i64,
    /// Attempts allowed.
    pub max_attempts: i64,
    /// When the next attempt starts (state `retrying`).
    pub next_retry_at: Option<Timestamp>,
    /// The last failure.
    pub error: Option<String>,
    /// Whether the library had the track with audio when it was asked for.
    pub already_in_library: bool,
    /// When it was asked for.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When it completed, failed or was cancelled.
    pub finished_at: Option<Timestamp>,
}

impl Download {
    /// Percent done, when the total is known.
    pub fn percent(&self) -> Option<f64> {
        if self.state == DownloadState::Completed {
            return Some(100.0);
        }
        match (self.bytes_downloaded, self.bytes_total) {
            (Some(done), Some(total)) if total > 0 => Some(
                ((done as f64 / total as f64) * 100.0)
                    .clamp(0.0, 100.0)
                    .round(),
            ),
            _ => None,
        }
    }
}

/// A new download as created.
#[derive(Debug, Clone)]
pub struct NewDownload {
    /// The download.
    pub download: Download,
    /// False when an existing one was answered (live, or the library had the track).
    pub created: bool,
}

const DOWNLOAD_SELECT: &str =
    "SELECT d.id, d.user_id, d.track_id, d.source, d.source_id, d.job_id, d.state,
        d.error, d.created_at, d.updated_at
    FROM downloads d";

#[derive(sqlx::FromRow)]
struct DownloadRow {
    id: String,
    user_id: Option<String>,
    track_id: String,
    source: String,
    source_id: String,
    job_id: Option<String>,
    state: String,
    error: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl DownloadRow {
    /// The download, with what its job (when it still exists) says of its progress.
    fn with_job(self, job: Option<&Job>) -> Download {
        let row = self;
        let progress_of = |name: &str| job.and_then(|job| job.progress.as_ref()?[name].as_i64());
        let attempts = job.map_or(0, |job| job.attempts);
        let already_in_library = row.job_id.is_none() && row.state == "completed";
        let state = match (row.state.as_str(), job.map(|job| job.state)) {
            ("cancelled", _) => DownloadState::Cancelled,
            ("completed", _) => DownloadState::Completed,
            (_, Some(JobState::Succeeded)) => DownloadState::Completed,
            (_, Some(JobState::Failed)) => DownloadState::Failed,
            (_, Some(JobState::Running)) => DownloadState::Downloading,
            (_, Some(JobState::Queued)) if attempts > 0 => DownloadState::Retrying,
            (_, Some(JobState::Queued)) => DownloadState::Queued,
            // Its job is gone (purged): it did not complete.
            (_, None) => DownloadState::Failed,
        };
        let job_updated_at = job.map(|job| job.updated_at);
        let finished_at = match state {
            DownloadState::Completed | DownloadState::Failed => {
                job.and_then(|job| job.finished_at).or(job_updated_at)
            }
            DownloadState::Cancelled => Some(Timestamp::from_micros(row.updated_at)),
            _ => None,
        };
        let error = match state {
            DownloadState::Completed => None,
            DownloadState::Cancelled => row.error,
            _ => job.and_then(|job| job.error.clone()).or(row.error),
        };
        let updated_at = Timestamp::from_micros(row.updated_at);
        Download {
            id: DownloadId::from_db(row.id),
            user_id: row.user_id.map(UserId::from_db),
            track_id: TrackId::from_db(row.track_id),
            source: row.source,
            source_id: row.source_id,
            job_id: row.job_id.map(JobId::from_db),
            state,
            bytes_downloaded: progress_of("bytes"),
            bytes_total: progress_of("total"),
            attempts,
            max_attempts: job.map_or(0, |job| job.max_attempts),
            next_retry_at: (state == DownloadState::Retrying)
                .then(|| job.map(|job| job.run_at))
                .flatten(),
            error,
            already_in_library,
            created_at: Timestamp::from_micros(row.created_at),
            updated_at: job_updated_at.map_or(updated_at, |job| job.max(updated_at)),
            finished_at,
        }
    }
}

impl Remote {
    /// Creates a download of a hit (`POST /downloads`). Any signed-in user. A hit the library
    /// has with audio answers a `completed` download at once; a hit with a live download of
    /// this user answers that one; a hit the source says is over `MAX_UPLOAD_BYTES` is
    /// refused before anything is stored.
    pub async fn create_download(
        &self,
        caller: &Caller,
        source: &str,
        source_id: &str,
    ) -> Result<NewDownload> {
        let remote_source = self.enabled_source(source, "source")?.clone();
        remote_source
            .check_id(source_id)
            .map_err(|message| Error::invalid("source_id", message))?;
        let existing = self.find_track(source, source_id).await?;
        let track = match existing {
            Some(track) if has_audio(&track) => {
                let id = self
                    .insert_download(caller, &track.id, source, source_id, "completed")
                    .await?;
                return Ok(NewDownload {
                    download: self.download_row(&id).await?,
                    created: false,
                });
            }
            Some(track) => track,
            None => {
                let hit = self.metadata(remote_source.as_ref(), source_id).await?;
                if let Some(size) = hit.size_bytes.filter(|size| *size as u64 > self.max_bytes) {
                    return Err(Error::TooLargeItem(format!(
                        "{source} {source_id} is {size} bytes, over the limit of {} (MAX_UPLOAD_BYTES)",
                        self.max_bytes
                    )));
                }
                self.save(caller, source, source_id).await?.track
            }
        };
        // The job first (one live fetch per track: a live one is answered), then, in one
        // transaction holding the track's lock, this user's live download of the track or a
        // new row born with its job: concurrent requests make one download and one job.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let id = DownloadId::new();
            let payload = FetchPayload {
                track_id: track.id.clone(),
                download_id: Some(id.to_string()),
            };
            let job = self
                .jobs
                .enqueue::<DownloadTask>(&payload, Some(&caller.user.id))
                .await?;
            let db = &self.db;
            let mut tx = db.begin().await?;
            crate::catalog::lock_track(db, &mut tx, &track.id).await?;
            let active: Vec<(String, String)> = db
                .sql(
                    "SELECT id, job_id FROM downloads
                     WHERE user_id = $1 AND track_id = $2 AND state = 'active' AND job_id IS NOT NULL
                     ORDER BY created_at DESC",
                )
                .bind(&caller.user.id)
                .bind(&track.id)
                .fetch_all(&mut *tx)
                .await?;
            let mut live = None;
            for (download, job) in active {
                let job = self.jobs.lock(&mut tx, &JobId::from_db(job)).await?;
                if job.is_some_and(|job| matches!(job.state, JobState::Queued | JobState::Running))
                {
                    live = Some(download);
                    break;
                }
            }
            if let Some(live) = live {
                tx.commit().await?;
                return Ok(NewDownload {
                    download: self.download_row(&DownloadId::from_db(live)).await?,
                    created: false,
                });
            }
            // Locked, so a cancellation deciding whether anyone still uses it waits for us.
            let state = self.jobs.lock(&mut tx, &job).await?.map(|job| job.state);
            if state.is_none_or(|state| state == JobState::Failed) && attempt < 3 {
                // The live job answered ended in between (its last download was cancelled):
                // queue a fresh one.
                tx.rollback().await?;
                continue;
            }
            db.sql(
                "INSERT INTO downloads (id, user_id, track_id, source, source_id, state, job_id, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, 'active', $6, {now}, {now})",
            )
            .bind(&id)
            .bind(&caller.user.id)
            .bind(&track.id)
            .bind(source)
            .bind(source_id)
            .bind(&job)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            tracing::info!(download_id = %id, track_id = %track.id, %job, source, source_id, "download queued");
            return Ok(NewDownload {
                download: self.download_row(&id).await?,
                created: true,
            });
        }
    }

    /// A download the library answered at once (`completed`, no job).
    async fn insert_download(
        &self,
        caller: &Caller,
        track: &TrackId,
        source: &str,
        source_id: &str,
        state: &str,
    ) -> Result<DownloadId> {
        let id = DownloadId::new();
        self.db
            .sql(
                "INSERT INTO downloads (id, user_id, track_id, source, source_id, state, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, {now}, {now})",
            )
            .bind(&id)
            .bind(&caller.user.id)
            .bind(track)
            .bind(source)
            .bind(source_id)
            .bind(state)
            .execute(self.db.pool())
            .await?;
        Ok(id)
    }

    async fn download_row(&self, id: &DownloadId) -> Result<Download> {
        let row = self
            .db
            .sql(&format!("{DOWNLOAD_SELECT} WHERE d.id = $1"))
            .bind(id)
            .fetch_optional::<DownloadRow, _>(self.db.pool())
            .await?
            .ok_or_else(|| Error::not_found("download", id))?;
        Ok(self.with_jobs(vec![row]).await?.remove(0))
    }

    /// Downloads with what their jobs say (read in one query).
    async fn with_jobs(&self, rows: Vec<DownloadRow>) -> Result<Vec<Download>> {
        let ids: Vec<JobId> = rows
            .iter()
            .filter_map(|row| row.job_id.clone().map(JobId::from_db))
            .collect();
        let jobs = self.jobs.get_many(&ids.iter().collect::<Vec<_>>()).await?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let job = row
                    .job_id
                    .clone()
                    .and_then(|id| jobs.get(&JobId::from_db(id)));
                row.with_job(job)
            })
            .collect())
    }

    /// The caller's downloads, newest first (`GET /downloads`).
    pub async fn downloads(&self, caller: &Caller, page: Page) -> Result<Paged<Download>> {
        let total: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM downloads WHERE user_id = $1")
            .bind(&caller.user.id)
            .fetch_scalar(self.db.pool())
            .await?;
        let rows: Vec<DownloadRow> = self
            .db
            .sql(&format!(
                "{DOWNLOAD_SELECT} WHERE d.user_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT {} OFFSET {}",
                page.limit(),
                page.offset()
            ))
            .bind(&caller.user.id)
            .fetch_all(self.db.pool())
            .await?;
        Ok(Paged {
            items: self.with_jobs(rows).await?,
            total,
            page,
        })
    }

    /// One download: the caller's own, or any for an admin; another user's is not found.
    pub async fn download(&self, caller: &Caller, id: &DownloadId) -> Result<Download> {
        let download = self.download_row(id).await?;
        if caller.may_see_download(download.user_id.as_ref()) {
            Ok(download)
        } else {
            Err(Error::not_found("download", id))
        }
    }

    /// Cancels a live download (`POST /downloads/{id}/cancel`). The job fetching it is
    /// shared by everyone who wants the track, so it stops only when nobody else does: no
    /// other download of it is live and no materialization asked for it (the job is still a
    /// `download_task`, see [`Remote::materialize`]). Then a queued job never runs and a
    /// running one stops within a second (its process killed); either way its staging
    /// directory goes. Otherwise only this download is cancelled and the fetch goes on for
    /// the others. The placeholder stays. A finished download is a conflict.
    pub async fn cancel_download(&self, caller: &Caller, id: &DownloadId) -> Result<Download> {
        let download = self.download(caller, id).await?;
        if !download.state.is_live() {
            return Err(Error::Conflict(format!(
                "download {id} is {} already",
                download.state.as_str()
            )));
        }
        let db = &self.db;
        let mut tx = db.begin().await?;
        // Whoever joins the job meanwhile (a download, a materialization) waits for us.
        let job = match &download.job_id {
            Some(job) => self.jobs.lock(&mut tx, job).await?,
            None => None,
        };
        db.sql(
            "UPDATE downloads SET state = 'cancelled', error = $2, updated_at = {now}
             WHERE id = $1 AND state = 'active'",
        )
        .bind(id)
        .bind(super::fetch::CANCELLED)
        .execute(&mut *tx)
        .await?;
        let mut stopped = false;
        if let Some(job) = &job {
            // A running job sees the same condition (`Remote::abandoned`) and stops itself.
            if self.nobody_wants(&mut *tx, job).await? {
                stopped = self
                    .jobs
                    .fail_queued(&mut tx, &job.id, super::fetch::CANCELLED)
                    .await?;
            }
        }
        tx.commit().await?;
        if stopped {
            // An attempt killed earlier may have left files (a running one cleans up itself).
            self.remove_idle_staging(&download.track_id).await;
        }
        tracing::info!(download_id = %id, job_stopped = stopped, "download cancelled");
        self.download_row(id).await
    }
}

impl Remote {
    /// Whether no one wants a fetch job any more: a `download_task` (no materialization
    /// joined it, see [`Remote::materialize`]) with a cancelled download and no live one.
    pub(super) async fn nobody_wants<'c, E>(&self, executor: E, job: &Job) -> Result<bool>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        if job.kind != DownloadTask::NAME {
            return Ok(false);
        }
        let (cancelled, active): (i64, i64) = self
            .db
            .sql(
                "SELECT COALESCE(SUM(CASE WHEN state = 'cancelled' THEN 1 ELSE 0 END), 0),
                        COALESCE(SUM(CASE WHEN state = 'active' THEN 1 ELSE 0 END), 0)
                 FROM downloads WHERE job_id = $1",
            )
            .bind(&job.id)
            .fetch_optional(executor)
            .await?
            .unwrap_or_default();
        Ok(cancelled > 0 && active == 0)
    }
}
