//! Workers: claim a job, run its handler while renewing the lease, record the outcome; and
//! the pools a process runs.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use super::registry::{Pool, Registry};
use super::{Job, JobError, Jobs};
use crate::JobId;

/// What one [`Worker::run_once`] step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Ran this job (whatever its result).
    Ran(JobId),
    /// No job was ready.
    Empty,
}

/// A job worker. Several may run in one process and in many processes.
#[derive(Debug, Clone)]
pub struct Worker {
    registry: Arc<Registry>,
    id: String,
    pool: Pool,
    /// The kinds this worker claims (all when empty).
    kinds: Vec<&'static str>,
}

/// What a running handler can report through.
#[derive(Debug, Clone)]
pub struct JobContext {
    jobs: Jobs,
    job_id: JobId,
    worker_id: String,
}

impl JobContext {
    /// Stores progress on the job (and renews its lease).
    pub async fn progress(&self, progress: &Value) {
        let lease = self.jobs.config().lease;
        if let Err(error) = self
            .jobs
            .queue()
            .heartbeat(&self.job_id, &self.worker_id, lease, Some(progress))
            .await
        {
            tracing::warn!(job_id = %self.job_id, error = %crate::error_chain(&error), "could not store job progress");
        }
    }

    /// The job's id.
    pub fn job_id(&self) -> &JobId {
        &self.job_id
    }

    /// Fails unless this worker still holds the job (its lease not run out, nobody else
    /// running it): a handler asks before an effect outside the database that must not
    /// happen twice (sending plays to a scrobbling service).
    pub(crate) async fn ensure_lease(&self) -> Result<(), JobError> {
        let held = self
            .jobs
            .queue()
            .holds(&self.job_id, &self.worker_id)
            .await?;
        if held {
            Ok(())
        } else {
            Err(lost_lease())
        }
    }

    /// Fences a write: inside the write's transaction, locks the job's row and fails unless
    /// this worker still holds it, so a worker whose lease was lost (another took the job
    /// over) never commits what the job writes. The job's row stays locked until the
    /// transaction ends: no other worker can claim it in between.
    pub(crate) async fn fence(&self, tx: &mut crate::db::Tx) -> Result<(), JobError> {
        let db = self.jobs.db();
        let held: Option<i64> = db
            .sql(&format!(
                "SELECT 1 FROM jobs WHERE id = $1 AND worker_id = $2 AND state = 'running'
                 AND lease_until > {{now}}{}",
                db.lock("jobs")
            ))
            .bind(&self.job_id)
            .bind(self.worker_id.as_str())
            .fetch_scalar_optional(&mut **tx)
            .await?;
        match held {
            Some(_) => Ok(()),
            None => Err(lost_lease()),
        }
    }
}

fn lost_lease() -> JobError {
    JobError::retry("this worker lost the job's lease (another worker runs it now); stopped")
}

impl Worker {
    /// A general worker named `name` (unique per process; the process id and a random
    /// suffix are added): it runs jobs of every kind.
    pub fn new(registry: &Arc<Registry>, name: &str) -> Worker {
        Worker::for_pool(registry, name, Pool::General)
    }

    /// A worker of `pool`, which takes only that pool's kinds ([`Pool`]).
    pub fn for_pool(registry: &Arc<Registry>, name: &str, pool: Pool) -> Worker {
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
        Worker {
            registry: registry.clone(),
            id: format!("{name}-{}-{suffix}", std::process::id()),
            pool,
            kinds: registry.kinds().pool_kinds(pool),
        }
    }

    fn jobs(&self) -> &Jobs {
        self.registry.jobs()
    }

    /// This worker's id, as stored on the jobs it holds.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Claims and runs at most one job. First, jobs whose worker died on their last attempt
    /// fail for good, and their kinds record the crash.
    pub async fn run_once(&self) -> crate::Result<Outcome> {
        let lease = self.jobs().config().lease;
        for job in self.jobs().queue().fail_abandoned().await? {
            tracing::warn!(job_id = %job.id, kind = %job.kind, attempts = job.attempts, "job failed: its worker stopped responding on the last attempt");
            self.registry.abandoned(&job).await;
        }
        let Some(job) = self
            .jobs()
            .queue()
            .claim(&self.id, lease, &self.kinds)
            .await?
        else {
            return Ok(Outcome::Empty);
        };
        let job_id = job.id.clone();
        // The span wraps the future (never `enter()` across an await: the guard would stay
        // on whichever thread resumes, and every later job's span would nest inside it).
        let span =
            tracing::info_span!("job", job_id = %job.id, kind = %job.kind, attempt = job.attempts);
        self.finish(job).instrument(span).await?;
        Ok(Outcome::Ran(job_id))
    }

    async fn finish(&self, job: Job) -> crate::Result<()> {
        tracing::info!("job started");
        let started = std::time::Instant::now();
        let result = self.run_with_heartbeat(job.clone()).await;
        crate::metrics::job_run(&job.kind, result.is_ok(), started);
        let queue = self.jobs().queue();
        match result {
            Ok(value) => {
                tracing::info!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "job succeeded"
                );
                queue.complete(&job.id, &self.id, &value).await?;
            }
            Err(error) => {
                let retry_in = error
                    .retryable
                    .then(|| self.backoff(&job.kind, job.attempts));
                tracing::warn!(error = %error.message, retry_in_s = retry_in.map(|d| d.as_secs()), "job failed");
                queue
                    .fail(&job.id, &self.id, &error.message, retry_in)
                    .await?;
            }
        }
        Ok(())
    }

    /// Delay before attempt `attempts + 1` of a job of `kind`: base × 2^(attempts − 1), capped.
    fn backoff(&self, kind: &str, attempts: i64) -> Duration {
        let policy = self.jobs().retry_policy(kind);
        let exponent = attempts.clamp(1, 20) as u32 - 1;
        policy
            .base
            .saturating_mul(2u32.saturating_pow(exponent))
            .min(policy.max)
    }

    /// Runs the handler in its own task (a panic becomes a failed attempt) while a sibling
    /// task renews the lease. A lost lease stops the handler at once: another worker has
    /// taken the job over (its lease ran out while this one was stalled), and two handlers
    /// of one job would send its effects twice. So does a lease that cannot be renewed (the
    /// database out of reach) for as long as it lasts: by then it has surely run out.
    async fn run_with_heartbeat(&self, job: Job) -> Result<Value, JobError> {
        let job_id = job.id.clone();
        let context = JobContext {
            jobs: self.jobs().clone(),
            job_id: job.id.clone(),
            worker_id: self.id.clone(),
        };
        let registry = self.registry.clone();
        let mut handler =
            tokio::spawn(async move { registry.run(&context, &job).await }.in_current_span());
        let lease = self.jobs().config().lease;
        let mut ticker = tokio::time::interval((lease / 3).max(Duration::from_millis(100)));
        ticker.tick().await;
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::select! {
                joined = &mut handler => {
                    return match joined {
                        Ok(result) => result,
                        Err(error) if error.is_panic() => {
                            Err(JobError::retry(format!("the job crashed: {}", panic_message(error))))
                        }
                        Err(error) => Err(JobError::retry(format!("the job was cancelled: {error}"))),
                    };
                }
                _ = ticker.tick() => {
                    let lost = match self.jobs().queue().heartbeat(&job_id, &self.id, lease, None).await {
                        Ok(true) => {
                            renewed = tokio::time::Instant::now();
                            false
                        }
                        Ok(false) => true,
                        Err(error) => {
                            tracing::warn!(%job_id, error = %crate::error_chain(&error), "heartbeat failed");
                            renewed.elapsed() >= lease
                        }
                    };
                    if lost {
                        tracing::warn!(%job_id, "lost the lease of a running job: stopping it");
                        handler.abort();
                        let _ = (&mut handler).await;
                        return Err(lost_lease());
                    }
                }
            }
        }
    }

    /// Runs jobs until `shutdown` resolves. Idle, it sleeps until woken by an in-process
    /// enqueue or for the poll interval (for enqueues by other processes). A worker that finds
    /// work after being idle wakes its idle siblings, so a pool of specialised workers (which
    /// poll five times less often) follows a burst of jobs at once.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let base = self.jobs().config().poll_interval;
        let poll = match self.pool {
            Pool::General => base,
            _ => base * 5,
        };
        let mut was_idle = true;
        loop {
            let idle = match self.run_once().await {
                Ok(Outcome::Ran(_)) => false,
                Ok(Outcome::Empty) => true,
                Err(error) => {
                    tracing::warn!(worker = %self.id, error = %crate::error_chain(&error), "job queue unavailable");
                    true
                }
            };
            if was_idle && !idle {
                self.jobs().wake_workers();
            }
            was_idle = idle;
            if idle {
                tokio::select! {
                    _ = &mut shutdown => return,
                    _ = self.jobs().workers_woken() => {}
                    _ = tokio::time::sleep(poll) => {}
                }
            } else if futures::poll!(&mut shutdown).is_ready() {
                return;
            }
        }
    }
}

fn panic_message(error: tokio::task::JoinError) -> String {
    let payload = error.into_panic();
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic".to_string()
    }
}

/// How many workers of each pool a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerPlan {
    /// General workers (`WORKER_CONCURRENCY`).
    pub general: usize,
    /// Workers of the network pool (`ENRICH_CONCURRENCY`).
    pub network: usize,
}

/// Starts the workers of `plan`, and with them the periodic tasks the services registered
/// (re-enqueueing plays still waiting to be scrobbled, the recommendations' sweep); each stops
/// when the future `shutdown()` returns resolves.
pub fn spawn_workers<F>(
    registry: &Arc<Registry>,
    plan: WorkerPlan,
    shutdown: impl Fn() -> F,
) -> Vec<tokio::task::JoinHandle<()>>
where
    F: Future<Output = ()> + Send + 'static,
{
    let general = (0..plan.general).map(|index| Worker::new(registry, &format!("worker{index}")));
    let network = (0..plan.network)
        .map(|index| Worker::for_pool(registry, &format!("network{index}"), Pool::Network));
    let mut tasks: Vec<_> = general
        .chain(network)
        .map(|worker| tokio::spawn(worker.run(shutdown())))
        .collect();
    if !tasks.is_empty() {
        for (name, task) in registry.periodic_tasks() {
            tracing::debug!(task = name, "periodic task started");
            tasks.push(tokio::spawn(task(Box::pin(shutdown()))));
        }
    }
    tasks
}
