//! Background jobs: a durable queue in the database and the workers that drain it.
//!
//! A job is claimed with a lease; the worker renews the lease while it runs, so a job whose
//! worker died is claimed again once its lease runs out. Failures retry with exponential
//! backoff until `max_attempts`, then the job stays `failed` with its error. On PostgreSQL,
//! claiming uses `FOR UPDATE SKIP LOCKED`, so several workers never run one job at once.

mod queue;
mod worker;

use serde_json::Value;

use crate::{JobId, Result, Timestamp, UserId};

pub use queue::{JobQueue, SqlQueue};
pub use worker::{JobContext, Outcome, Worker};

/// Enrichment-only workers a server runs by default besides its general ones: enough that two
/// full AcoustID batches (20 fingerprints each) can be waiting while another is in flight.
pub const DEFAULT_ENRICH_CONCURRENCY: usize = 40;

/// The `track_id` of a job's payload (enrichment, transcoding): a job without a valid one
/// fails for good.
pub(crate) fn payload_track_id(
    payload: &serde_json::Value,
) -> std::result::Result<crate::TrackId, JobError> {
    payload
        .get("track_id")
        .and_then(serde_json::Value::as_str)
        .and_then(|id| crate::TrackId::parse(id).ok())
        .ok_or_else(|| JobError::permanent("the job has no valid track_id"))
}

/// Job kinds, as stored and as shown by `GET /jobs/{id}`.
pub mod kind {
    /// Enrich one track's metadata.
    pub const ENRICH: &str = "enrich_task";
    /// Import the local folder.
    pub const SCAN_LOCAL_FOLDER: &str = "scan_local_folder";
    /// Download a remote track.
    pub const DOWNLOAD: &str = "download_task";
    /// Fetch the audio of a placeholder track.
    pub const MATERIALIZE: &str = "materialize_track";
    /// Build a track's renditions.
    pub const TRANSCODE: &str = "transcode_track";
    /// Reconcile storage with the catalogue.
    pub const CLEANUP: &str = "cleanup_storage";
}

/// Lifecycle of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting to run (also between retries).
    Queued,
    /// Leased to a worker.
    Running,
    /// Finished.
    Succeeded,
    /// Gave up; `error` says why.
    Failed,
}

impl JobState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
        }
    }

    fn parse(text: &str) -> JobState {
        match text {
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "failed" => JobState::Failed,
            _ => JobState::Queued,
        }
    }
}

/// A job to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// One of [`kind`].
    pub kind: &'static str,
    /// Kind-specific input.
    pub payload: Value,
    /// At most one queued or running job per key; enqueueing a duplicate returns the live one.
    pub dedup_key: Option<String>,
    /// Who asked for it.
    pub created_by: Option<UserId>,
}

impl NewJob {
    /// A job of `kind` with `payload`.
    pub fn new(kind: &'static str, payload: Value) -> NewJob {
        NewJob {
            kind,
            payload,
            dedup_key: None,
            created_by: None,
        }
    }

    /// Sets the dedup key.
    pub fn dedup(mut self, key: impl Into<String>) -> NewJob {
        self.dedup_key = Some(key.into());
        self
    }

    /// Records who asked for it.
    pub fn by(mut self, user: &UserId) -> NewJob {
        self.created_by = Some(user.clone());
        self
    }
}

/// A job as stored.
#[derive(Debug, Clone)]
pub struct Job {
    /// Id.
    pub id: JobId,
    /// One of [`kind`].
    pub kind: String,
    /// Kind-specific input.
    pub payload: Value,
    /// Lifecycle state.
    pub state: JobState,
    /// Attempts started so far.
    pub attempts: i64,
    /// Attempts allowed.
    pub max_attempts: i64,
    /// Progress reported by the running worker.
    pub progress: Option<Value>,
    /// Output of a finished job.
    pub result: Option<Value>,
    /// Last error.
    pub error: Option<String>,
    /// Who asked for it.
    pub created_by: Option<UserId>,
    /// Earliest time of the next attempt.
    pub run_at: Timestamp,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When it succeeded or finally failed.
    pub finished_at: Option<Timestamp>,
}

/// How a job handler failed.
#[derive(Debug)]
pub struct JobError {
    /// Readable reason, kept on the job.
    pub message: String,
    /// Whether another attempt may succeed.
    pub retryable: bool,
}

impl JobError {
    /// A failure worth retrying (a dependency was down).
    pub fn retry(message: impl Into<String>) -> JobError {
        JobError {
            message: message.into(),
            retryable: true,
        }
    }

    /// A failure no retry can fix (bad payload, unknown kind).
    pub fn permanent(message: impl Into<String>) -> JobError {
        JobError {
            message: message.into(),
            retryable: false,
        }
    }
}

impl From<crate::Error> for JobError {
    fn from(error: crate::Error) -> JobError {
        use crate::ErrorKind;
        let retryable = matches!(error.kind(), ErrorKind::Unavailable | ErrorKind::Internal);
        JobError {
            message: crate::error_chain(&error),
            retryable,
        }
    }
}

/// Job reads and enqueues.
impl crate::Library {
    /// `GET /jobs/{id}`.
    pub async fn get_job(&self, id: &JobId) -> Result<Job> {
        self.queue().get(id).await
    }

    /// Enqueues a job and wakes the in-process worker. Fails with
    /// [`crate::Error::QueueUnavailable`] when the queue cannot take it.
    pub async fn enqueue(&self, job: NewJob) -> Result<JobId> {
        let id = self
            .queue()
            .enqueue(job)
            .await
            .map_err(|error| crate::Error::QueueUnavailable(Box::new(error)))?;
        self.wake_workers();
        Ok(id)
    }

    /// Enqueues several jobs in one statement batch (best effort: a failure is logged).
    pub(crate) async fn enqueue_best_effort(&self, jobs: Vec<NewJob>) {
        if jobs.is_empty() {
            return;
        }
        let count = jobs.len();
        match self.queue().enqueue_many(jobs).await {
            Ok(()) => self.wake_workers(),
            Err(error) => {
                tracing::warn!(count, error = %crate::error_chain(&error), "could not enqueue jobs")
            }
        }
    }
}
