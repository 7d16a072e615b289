//! The job queue: a table of jobs claimed with leases.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{Job, JobKind, JobState};
use crate::db::Db;
use crate::metrics::{JobCounts, KindStats};
use crate::{Error, JobId, Result, Timestamp, UserId};

/// A job to enqueue, its kind already checked by [`NewJob::of`].
#[derive(Debug, Clone)]
pub(crate) struct NewJob {
    pub(crate) kind: &'static str,
    pub(crate) payload: Value,
    pub(crate) dedup_key: Option<String>,
    pub(crate) created_by: Option<UserId>,
    /// Attempts allowed, when the kind has its own retry policy (else the queue's default).
    pub(crate) max_attempts: Option<u32>,
}

impl NewJob {
    /// A job of kind `K`.
    pub(crate) fn of<K: JobKind>(
        payload: &K::Payload,
        created_by: Option<&UserId>,
    ) -> Result<NewJob> {
        Ok(NewJob {
            kind: K::NAME,
            payload: serde_json::to_value(payload).map_err(|error| {
                Error::internal_with(format!("cannot store a {} payload", K::NAME), error)
            })?,
            dedup_key: K::dedup_key(payload),
            created_by: created_by.cloned(),
            max_attempts: None,
        })
    }
}

/// Storage of jobs. [`SqlQueue`] is the real one; tests substitute a failing queue to check
/// how callers behave when the queue is down.
#[async_trait]
pub(crate) trait JobQueue: Send + Sync + std::fmt::Debug {
    /// Adds a job. A job whose dedup key matches a live job is not added twice: the live
    /// job's id is returned instead.
    async fn enqueue(&self, job: NewJob) -> Result<JobId>;
    /// Adds several jobs in one transaction (skipping those a live job already covers).
    async fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<()>;
    /// Fails for good the jobs whose worker stopped responding (their lease ran out) during
    /// their last attempt, and returns them, so their kinds can record the crash where the
    /// handler would have. A worker calls it before [`JobQueue::claim`].
    async fn fail_abandoned(&self) -> Result<Vec<Job>>;
    /// Leases the next ready job (queued and due, or running with an expired lease) among
    /// jobs of `kinds` (all kinds when empty).
    async fn claim(
        &self,
        worker_id: &str,
        lease: Duration,
        kinds: &[&'static str],
    ) -> Result<Option<Job>>;
    /// Renews the lease and stores progress. `false` when the worker no longer holds the job.
    async fn heartbeat(
        &self,
        id: &JobId,
        worker_id: &str,
        lease: Duration,
        progress: Option<&Value>,
    ) -> Result<bool>;
    /// Whether `worker_id` still holds job `id`: it is running, leased to that worker, and its
    /// lease has not run out.
    async fn holds(&self, id: &JobId, worker_id: &str) -> Result<bool>;
    /// Marks a job succeeded.
    async fn complete(&self, id: &JobId, worker_id: &str, result: &Value) -> Result<()>;
    /// Records a failed attempt: queued again after `retry_in`, or failed for good when `None`
    /// or when its attempts are used up.
    async fn fail(
        &self,
        id: &JobId,
        worker_id: &str,
        error: &str,
        retry_in: Option<Duration>,
    ) -> Result<()>;
    /// Reads a job.
    async fn get(&self, id: &JobId) -> Result<Job>;
    /// The most recently created job of `kind`.
    async fn latest(&self, kind: &str) -> Result<Option<Job>>;
    /// How many jobs are in each state.
    async fn counts(&self) -> Result<JobCounts>;
    /// How many jobs of each kind are in each state, and how many queued ones are due.
    async fn stats(&self, kinds: &[&'static str]) -> Result<Vec<KindStats>>;
}

/// The database-backed queue.
#[derive(Debug, Clone)]
pub(crate) struct SqlQueue {
    db: Db,
    max_attempts: u32,
}

impl SqlQueue {
    /// A queue in `db`; new jobs get `max_attempts` attempts.
    pub(crate) fn new(db: Db, max_attempts: u32) -> SqlQueue {
        SqlQueue { db, max_attempts }
    }
}

/// Why a job whose worker died on its last attempt failed.
pub(crate) const ABANDONED: &str = "the worker running it stopped responding";

pub(super) const JOB_COLUMNS: &str =
    "id, kind, payload, state, attempts, max_attempts, progress, result, error, created_by,
    run_at, created_at, updated_at, finished_at";

#[derive(sqlx::FromRow)]
pub(super) struct JobRow {
    id: String,
    kind: String,
    payload: String,
    state: String,
    attempts: i64,
    max_attempts: i64,
    progress: Option<String>,
    result: Option<String>,
    error: Option<String>,
    created_by: Option<String>,
    run_at: i64,
    created_at: i64,
    updated_at: i64,
    finished_at: Option<i64>,
}

impl From<JobRow> for Job {
    fn from(row: JobRow) -> Job {
        let json = |text: Option<String>| text.and_then(|text| serde_json::from_str(&text).ok());
        Job {
            id: JobId::from_db(row.id),
            kind: row.kind,
            payload: serde_json::from_str(&row.payload).unwrap_or(Value::Null),
            state: JobState::parse(&row.state),
            attempts: row.attempts,
            max_attempts: row.max_attempts,
            progress: json(row.progress),
            result: json(row.result),
            error: row.error,
            created_by: row.created_by.map(UserId::from_db),
            run_at: Timestamp::from_micros(row.run_at),
            created_at: Timestamp::from_micros(row.created_at),
            updated_at: Timestamp::from_micros(row.updated_at),
            finished_at: row.finished_at.map(Timestamp::from_micros),
        }
    }
}

fn micros(duration: Duration) -> i64 {
    duration.as_micros().min(i64::MAX as u128) as i64
}

impl SqlQueue {
    async fn insert(&self, conn: &mut sqlx::AnyConnection, job: &NewJob) -> Result<JobId> {
        let id = JobId::new();
        self.db
            .sql(
                "INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_at, dedup_key, created_by,
                                   created_at, updated_at)
                 VALUES ($1, $2, $3, 'queued', 0, $4, {now}, $5, $6, {now}, {now})",
            )
            .bind(&id)
            .bind(job.kind)
            .bind(job.payload.to_string())
            .bind(i64::from(job.max_attempts.unwrap_or(self.max_attempts)))
            .bind(job.dedup_key.as_deref())
            .bind(job.created_by.as_ref())
            .execute(conn)
            .await?;
        Ok(id)
    }
}

#[async_trait]
impl JobQueue for SqlQueue {
    async fn enqueue(&self, job: NewJob) -> Result<JobId> {
        let mut conn = self.db.pool().acquire().await?;
        match self.insert(&mut conn, &job).await {
            Ok(id) => Ok(id),
            Err(error) if error.is_unique_violation() => {
                let live: Option<String> = self
                    .db
                    .sql("SELECT id FROM jobs WHERE dedup_key = $1 AND state IN ('queued', 'running')")
                    .bind(job.dedup_key.as_deref())
                    .fetch_scalar_optional(&mut *conn)
                    .await?;
                match live {
                    Some(id) => Ok(JobId::from_db(id)),
                    // It finished between the insert and the read: enqueue again.
                    None => self.insert(&mut conn, &job).await,
                }
            }
            Err(error) => Err(error),
        }
    }

    async fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<()> {
        let mut tx = self.db.begin().await?;
        for job in &jobs {
            // A dedup clash means the same work is already live: skip it.
            self.db.sql("SAVEPOINT enqueue").execute(&mut *tx).await?;
            match self.insert(&mut tx, job).await {
                Ok(_) => {
                    self.db
                        .sql("RELEASE SAVEPOINT enqueue")
                        .execute(&mut *tx)
                        .await?;
                }
                Err(error) if error.is_unique_violation() => {
                    self.db
                        .sql("ROLLBACK TO SAVEPOINT enqueue")
                        .execute(&mut *tx)
                        .await?;
                }
                Err(error) => return Err(error),
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn fail_abandoned(&self) -> Result<Vec<Job>> {
        // Each row is returned to one caller only: the update locks it (PostgreSQL) or
        // holds the database's write lock (SQLite).
        let rows: Vec<JobRow> = self
            .db
            .sql(&format!(
                "UPDATE jobs SET state = 'failed', lease_until = NULL, finished_at = {{now}}, updated_at = {{now}},
                     error = COALESCE(error || '; ', '') || '{ABANDONED}'
                 WHERE state = 'running' AND lease_until < {{now}} AND attempts >= max_attempts
                 RETURNING {JOB_COLUMNS}"
            ))
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(Job::from).collect())
    }

    async fn claim(
        &self,
        worker_id: &str,
        lease: Duration,
        kinds: &[&'static str],
    ) -> Result<Option<Job>> {
        let mut claim = self.db.sql(
            "UPDATE jobs SET state = 'running', attempts = attempts + 1, worker_id = $1,
                 lease_until = {now} + $2, updated_at = {now}
             WHERE id = (
                 SELECT id FROM jobs
                 WHERE ((state = 'queued' AND run_at <= {now}) OR (state = 'running' AND lease_until < {now}))
                   AND attempts < max_attempts",
        );
        claim = claim.bind(worker_id).bind(micros(lease));
        if !kinds.is_empty() {
            claim
                .push(" AND kind IN (")
                .push_list(kinds.iter().copied())
                .push(")");
        }
        claim
            .push(" ORDER BY run_at, id LIMIT 1")
            .push(self.db.kind().skip_locked())
            .push(&format!(") RETURNING {JOB_COLUMNS}"));
        let row: Option<JobRow> = claim.fetch_optional(self.db.pool()).await?;
        Ok(row.map(Job::from))
    }

    async fn heartbeat(
        &self,
        id: &JobId,
        worker_id: &str,
        lease: Duration,
        progress: Option<&Value>,
    ) -> Result<bool> {
        let changed = self
            .db
            .sql(
                "UPDATE jobs SET lease_until = {now} + $3, progress = COALESCE($4, progress), updated_at = {now}
                 WHERE id = $1 AND worker_id = $2 AND state = 'running'",
            )
            .bind(id)
            .bind(worker_id)
            .bind(micros(lease))
            .bind(progress.map(|progress| progress.to_string()))
            .execute(self.db.pool())
            .await?;
        Ok(changed == 1)
    }

    async fn holds(&self, id: &JobId, worker_id: &str) -> Result<bool> {
        let held: Option<i64> = self
            .db
            .sql(
                "SELECT 1 FROM jobs WHERE id = $1 AND worker_id = $2 AND state = 'running'
                 AND lease_until > {now}",
            )
            .bind(id)
            .bind(worker_id)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        Ok(held.is_some())
    }

    async fn complete(&self, id: &JobId, worker_id: &str, result: &Value) -> Result<()> {
        self.db
            .sql(
                "UPDATE jobs SET state = 'succeeded', result = $3, lease_until = NULL, error = NULL,
                     finished_at = {now}, updated_at = {now}
                 WHERE id = $1 AND worker_id = $2 AND state = 'running'",
            )
            .bind(id)
            .bind(worker_id)
            .bind(result.to_string())
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    async fn fail(
        &self,
        id: &JobId,
        worker_id: &str,
        error: &str,
        retry_in: Option<Duration>,
    ) -> Result<()> {
        self.db
            .sql(
                "UPDATE jobs SET
                     state = CASE WHEN $4 = 1 AND attempts < max_attempts THEN 'queued' ELSE 'failed' END,
                     finished_at = CASE WHEN $4 = 1 AND attempts < max_attempts THEN NULL ELSE {now} END,
                     run_at = {now} + $5, error = $3, lease_until = NULL, updated_at = {now}
                 WHERE id = $1 AND worker_id = $2 AND state = 'running'",
            )
            .bind(id)
            .bind(worker_id)
            .bind(error)
            .bind(retry_in.is_some())
            .bind(micros(retry_in.unwrap_or_default()))
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    async fn get(&self, id: &JobId) -> Result<Job> {
        self.db
            .sql(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"))
            .bind(id)
            .fetch_optional::<JobRow, _>(self.db.pool())
            .await?
            .map(Job::from)
            .ok_or_else(|| Error::not_found("job", id))
    }

    async fn counts(&self) -> Result<JobCounts> {
        let rows: Vec<(String, i64)> = self
            .db
            .sql("SELECT state, COUNT(*) FROM jobs GROUP BY state")
            .fetch_all(self.db.pool())
            .await?;
        let mut counts = JobCounts::default();
        for (state, count) in rows {
            match state.as_str() {
                "queued" => counts.queued = count,
                "running" => counts.running = count,
                "succeeded" => counts.succeeded = count,
                "failed" => counts.failed = count,
                _ => {}
            }
        }
        Ok(counts)
    }

    async fn stats(&self, kinds: &[&'static str]) -> Result<Vec<KindStats>> {
        let rows: Vec<(String, String, i64, i64)> = self
            .db
            .sql(
                "SELECT kind, state, COUNT(*), COUNT(CASE WHEN run_at <= {now} THEN 1 END)
                 FROM jobs GROUP BY kind, state",
            )
            .fetch_all(self.db.pool())
            .await?;
        // Every kind this server runs, at zero when it has no job, so no series vanishes.
        let mut stats: Vec<KindStats> = kinds
            .iter()
            .map(|kind| KindStats {
                kind: kind.to_string(),
                ..KindStats::default()
            })
            .collect();
        for (kind, state, count, due) in rows {
            let index = match stats.iter().position(|stat| stat.kind == kind) {
                Some(index) => index,
                None => {
                    stats.push(KindStats {
                        kind,
                        ..KindStats::default()
                    });
                    stats.len() - 1
                }
            };
            let stat = &mut stats[index];
            match JobState::parse(&state) {
                JobState::Queued => {
                    stat.counts.queued = count;
                    stat.ready = due;
                }
                JobState::Running => stat.counts.running = count,
                JobState::Succeeded => stat.counts.succeeded = count,
                JobState::Failed => stat.counts.failed = count,
            }
        }
        Ok(stats)
    }

    async fn latest(&self, kind: &str) -> Result<Option<Job>> {
        let row: Option<JobRow> = self
            .db
            .sql(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE kind = $1 ORDER BY created_at DESC, id DESC LIMIT 1"
            ))
            .bind(kind)
            .fetch_optional(self.db.pool())
            .await?;
        Ok(row.map(Job::from))
    }
}
