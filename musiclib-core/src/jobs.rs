//! Background jobs: a durable queue in the database, typed job kinds, and the workers that
//! drain it.
//!
//! - [`registry`]: every job kind, each a type implementing [`JobKind`] next to the service
//!   it belongs to (its stored name, payload, dedup key, pool and handler) and registered by
//!   that service, and the periodic tasks, registered the same way.
//! - `queue`: the jobs table: enqueue, claim with a lease, heartbeat, complete, fail.
//! - `worker`: [`Worker`] claims, runs and records one job at a time; [`spawn_workers`]
//!   starts a process's pools.
//!
//! A job is claimed with a lease; the worker renews it while the handler runs, so a job whose
//! worker died is claimed again once its lease runs out. Failures retry with exponential
//! backoff until `max_attempts`, then the job stays `failed` with its error.

pub mod registry;

mod list;
mod queue;
mod shared;
mod worker;

use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokio::sync::Notify;

pub use list::JobFilter;
pub use registry::{JobKind, Kinds, Pool, Registry};
pub use worker::{spawn_workers, JobContext, Outcome, Worker, WorkerPlan};

pub use crate::metrics::{JobCounts, KindStats};
pub(crate) use queue::{JobQueue, NewJob, SqlQueue};

use crate::auth::Caller;
use crate::config::{JobsConfig, RetryPolicy};
use crate::db::Db;
use crate::{Error, JobId, Result, Timestamp, UserId};

/// Enrichment-only workers a server runs by default besides its general ones: enough that two
/// full AcoustID batches (20 fingerprints each) can be waiting while another is in flight.
pub const DEFAULT_ENRICH_CONCURRENCY: usize = 40;

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

    /// A state by its stored spelling, `None` for any other text (input to check).
    pub fn from_name(text: &str) -> Option<JobState> {
        [
            JobState::Queued,
            JobState::Running,
            JobState::Succeeded,
            JobState::Failed,
        ]
        .into_iter()
        .find(|state| state.as_str() == text)
    }

    pub(crate) fn parse(text: &str) -> JobState {
        match text {
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "failed" => JobState::Failed,
            _ => JobState::Queued,
        }
    }
}

/// A job as stored.
#[derive(Debug, Clone)]
pub struct Job {
    /// Id.
    pub id: JobId,
    /// Its kind's stored name ([`JobKind::NAME`]).
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

impl From<Error> for JobError {
    fn from(error: Error) -> JobError {
        use crate::ErrorKind;
        // A full disk may be freed: worth another attempt, as a dependency that was down.
        let retryable = matches!(
            error.kind(),
            ErrorKind::Unavailable | ErrorKind::InsufficientStorage | ErrorKind::Internal
        );
        JobError {
            message: crate::error_chain(&error),
            retryable,
        }
    }
}

/// The jobs service: enqueueing typed jobs, reading them back, waking this process's workers.
#[derive(Clone, Debug)]
pub struct Jobs {
    queue: Arc<dyn JobQueue>,
    /// Wakes this process's idle workers after an in-process enqueue.
    wake: Arc<Notify>,
    config: JobsConfig,
    /// The database the queue is in (for fencing a job's writes).
    db: Db,
    /// Every kind's name, pool and retries, once the services have registered them
    /// ([`Jobs::install`]; the handlers stay in the [`Registry`], which holds `Jobs`).
    kinds: Arc<OnceLock<Kinds>>,
}

impl Jobs {
    pub(crate) fn new(queue: Arc<dyn JobQueue>, db: Db, config: JobsConfig) -> Jobs {
        Jobs {
            queue,
            wake: Arc::new(Notify::new()),
            config,
            db,
            kinds: Arc::default(),
        }
    }

    /// Installs the kinds the services registered; once, when the library opens.
    pub(crate) fn install(&self, kinds: Kinds) {
        if self.kinds.set(kinds).is_err() {
            panic!("the job kinds are installed once");
        }
    }

    /// Every kind this server runs.
    pub fn kinds(&self) -> &Kinds {
        self.kinds
            .get()
            .expect("the job kinds are installed when the library opens")
    }

    /// A weak reference to what every clone of this handle shares: gone once no service, no
    /// worker and no task holds the queue.
    #[cfg(feature = "test-support")]
    pub(crate) fn weak_handle(&self) -> std::sync::Weak<Notify> {
        Arc::downgrade(&self.wake)
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// The retry policy of jobs of `kind`: its own, or the queue's.
    pub(crate) fn retry_policy(&self, kind: &str) -> RetryPolicy {
        self.kinds().retry_of(kind).unwrap_or(RetryPolicy {
            max_attempts: self.config.max_attempts,
            base: self.config.retry_base,
            max: self.config.retry_max,
        })
    }

    /// A job its caller may see (their own; an admin, any). Another user's
    /// job is not found, so job ids reveal nothing.
    pub async fn get(&self, caller: &Caller, id: &JobId) -> Result<Job> {
        let job = self.queue.get(id).await?;
        if caller.may_see_job(job.created_by.as_ref()) {
            Ok(job)
        } else {
            Err(Error::not_found("job", id))
        }
    }

    /// Enqueues a job of kind `K` and wakes the in-process workers. A live job with the same
    /// dedup key is returned instead of a second one. Fails with
    /// [`Error::QueueUnavailable`] when the queue cannot take it.
    pub(crate) async fn enqueue<K: JobKind>(
        &self,
        payload: &K::Payload,
        created_by: Option<&UserId>,
    ) -> Result<JobId> {
        let mut job = NewJob::of::<K>(payload, created_by)?;
        job.max_attempts = self
            .kinds()
            .retry_of(K::NAME)
            .map(|policy| policy.max_attempts);
        let id = self
            .queue
            .enqueue(job)
            .await
            .map_err(|error| Error::QueueUnavailable(Box::new(error)))?;
        self.wake_workers();
        Ok(id)
    }

    /// Enqueues jobs of kind `K` in one transaction, best effort (the spec's rule for
    /// enrichment after an import): a failure is logged, never returned.
    pub(crate) async fn enqueue_best_effort<K: JobKind>(
        &self,
        payloads: impl IntoIterator<Item = K::Payload>,
        created_by: Option<&UserId>,
    ) {
        let jobs: Result<Vec<NewJob>> = payloads
            .into_iter()
            .map(|payload| NewJob::of::<K>(&payload, created_by))
            .collect();
        let jobs = match jobs {
            Ok(jobs) if jobs.is_empty() => return,
            Ok(jobs) => jobs,
            Err(error) => {
                tracing::warn!(kind = K::NAME, error = %crate::error_chain(&error), "could not build jobs");
                return;
            }
        };
        let count = jobs.len();
        match self.queue.enqueue_many(jobs).await {
            Ok(()) => self.wake_workers(),
            Err(error) => {
                tracing::warn!(kind = K::NAME, count, error = %crate::error_chain(&error), "could not enqueue jobs")
            }
        }
    }

    /// How many jobs are in each state (for admins' service report).
    pub(crate) async fn counts(&self) -> Result<JobCounts> {
        self.queue.counts().await
    }

    /// Jobs of every kind by state, with the queue depth, read now (every kind this server
    /// runs is listed, at zero when it has no job). For the operators' metrics: users reach it
    /// through `Admin::metrics`, which asks for an admin.
    pub(crate) async fn stats(&self) -> Result<Vec<KindStats>> {
        self.queue.stats(&self.kinds().names()).await
    }

    /// The most recent job of kind `K`, if any.
    pub(crate) async fn latest<K: JobKind>(&self) -> Result<Option<Job>> {
        self.queue.latest(K::NAME).await
    }

    pub(crate) fn queue(&self) -> &Arc<dyn JobQueue> {
        &self.queue
    }

    pub(crate) fn config(&self) -> &JobsConfig {
        &self.config
    }

    pub(crate) fn wake_workers(&self) {
        self.wake.notify_waiters();
    }

    pub(crate) async fn workers_woken(&self) {
        self.wake.notified().await
    }
}
