//! The job queue: a table of jobs claimed with leases.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{Job, JobState, NewJob};
use crate::db::{Backend, Db};
use crate::{Error, JobId, Result, Timestamp, UserId};

/// Storage of jobs. [`SqlQueue`] is the real one; tests substitute a failing queue to check
/// how callers behave when the queue is down.
#[async_trait]
pub trait JobQueue: Send + Sync + std::fmt::Debug {
    /// Adds a job. A job whose dedup key matches a live job is not added twice: the live
    /// job's id is returned instead.
    async fn enqueue(&self, job: NewJob) -> Result<JobId>;
    /// Adds several jobs in one transaction.
    async fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<()>;
    /// Leases the next ready job (queued and due, or running with an expired lease).
    async fn claim(&self, worker_id: &str, lease: Duration) -> Result<Option<Job>> {
        self.claim_of(worker_id, lease, &[]).await
    }
    /// As [`JobQueue::claim`], among jobs of `kinds` only (all kinds when empty).
    async fn claim_of(
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
}

/// The database-backed queue.
#[derive(Debug, Clone)]
pub struct SqlQueue {
    db: Db,
    max_attempts: u32,
}

impl SqlQueue {
    /// A queue in `db`; new jobs get `max_attempts` attempts.
    pub fn new(db: Db, max_attempts: u32) -> SqlQueue {
        SqlQueue { db, max_attempts }
    }
}

const JOB_COLUMNS: &str =
    "id, kind, payload, state, attempts, max_attempts, progress, result, error, created_by,
    run_at, created_at, updated_at, finished_at";

#[derive(sqlx::FromRow)]
struct JobRow {
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
    async fn insert(
        &self,
        executor: &mut sqlx::AnyConnection,
        job: &NewJob,
    ) -> std::result::Result<JobId, sqlx::Error> {
        let id = JobId::new();
        let query = self.db.sql(
            "INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_at, dedup_key, created_by,
                               created_at, updated_at)
             VALUES ($1, $2, $3, 'queued', 0, $4, {now}, $5, $6, {now}, {now})",
        );
        sqlx::query(&query)
            .bind(id.as_str())
            .bind(job.kind)
            .bind(job.payload.to_string())
            .bind(self.max_attempts as i64)
            .bind(job.dedup_key.as_deref())
            .bind(job.created_by.as_ref().map(|user| user.to_string()))
            .execute(executor)
            .await?;
        Ok(id)
    }
}

#[async_trait]
impl JobQueue for SqlQueue {
    async fn enqueue(&self, job: NewJob) -> Result<JobId> {
        let mut conn = self.db.pool().acquire().await?;
        match self.insert(&mut *conn, &job).await {
            Ok(id) => Ok(id),
            Err(error) if crate::db::is_unique_violation(&error) => {
                let live: Option<String> = sqlx::query_scalar(
                    "SELECT id FROM jobs WHERE dedup_key = $1 AND state IN ('queued', 'running')",
                )
                .bind(job.dedup_key.as_deref())
                .fetch_optional(&mut *conn)
                .await?;
                match live {
                    Some(id) => Ok(JobId::from_db(id)),
                    // It finished between the insert and the read: enqueue again.
                    None => Ok(self.insert(&mut *conn, &job).await?),
                }
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn enqueue_many(&self, jobs: Vec<NewJob>) -> Result<()> {
        let mut tx = self.db.begin().await?;
        for job in &jobs {
            // A dedup clash means the same work is already live: skip it.
            let result = sqlx::query("SAVEPOINT enqueue").execute(&mut *tx).await;
            result?;
            match self.insert(&mut *tx, job).await {
                Ok(_) => {
                    sqlx::query("RELEASE SAVEPOINT enqueue")
                        .execute(&mut *tx)
                        .await?;
                }
                Err(error) if crate::db::is_unique_violation(&error) => {
                    sqlx::query("ROLLBACK TO SAVEPOINT enqueue")
                        .execute(&mut *tx)
                        .await?;
                }
                Err(error) => return Err(error.into()),
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn claim_of(
        &self,
        worker_id: &str,
        lease: Duration,
        kinds: &[&'static str],
    ) -> Result<Option<Job>> {
        // Jobs whose last worker died after using up every attempt fail for good.
        let expire = self.db.sql(
            "UPDATE jobs SET state = 'failed', lease_until = NULL, finished_at = {now}, updated_at = {now},
                 error = COALESCE(error || '; ', '') || 'the worker running it stopped responding'
             WHERE state = 'running' AND lease_until < {now} AND attempts >= max_attempts",
        );
        sqlx::query(&expire).execute(self.db.pool()).await?;
        let lock = match self.db.backend() {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            // SQLite runs one writer at a time; the UPDATE is atomic on its own.
            Backend::Sqlite => "",
        };
        // Kinds are the handlers' constants, bound as parameters $3, $4, …
        let kind_filter = if kinds.is_empty() {
            String::new()
        } else {
            let params: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 3)).collect();
            format!(" AND kind IN ({})", params.join(", "))
        };
        let query = self.db.sql(&format!(
            "UPDATE jobs SET state = 'running', attempts = attempts + 1, worker_id = $1,
                 lease_until = {{now}} + $2, updated_at = {{now}}
             WHERE id = (
                 SELECT id FROM jobs
                 WHERE ((state = 'queued' AND run_at <= {{now}}) OR (state = 'running' AND lease_until < {{now}}))
                   AND attempts < max_attempts{kind_filter}
                 ORDER BY run_at, id LIMIT 1{lock})
             RETURNING {JOB_COLUMNS}"
        ));
        let mut claim = sqlx::query_as::<_, JobRow>(&query)
            .bind(worker_id)
            .bind(micros(lease));
        for kind in kinds {
            claim = claim.bind(*kind);
        }
        let row = claim.fetch_optional(self.db.pool()).await?;
        Ok(row.map(Job::from))
    }

    async fn heartbeat(
        &self,
        id: &JobId,
        worker_id: &str,
        lease: Duration,
        progress: Option<&Value>,
    ) -> Result<bool> {
        let query = self.db.sql(
            "UPDATE jobs SET lease_until = {now} + $3, progress = COALESCE($4, progress), updated_at = {now}
             WHERE id = $1 AND worker_id = $2 AND state = 'running'",
        );
        let done = sqlx::query(&query)
            .bind(id.as_str())
            .bind(worker_id)
            .bind(micros(lease))
            .bind(progress.map(|progress| progress.to_string()))
            .execute(self.db.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn complete(&self, id: &JobId, worker_id: &str, result: &Value) -> Result<()> {
        let query = self.db.sql(
            "UPDATE jobs SET state = 'succeeded', result = $3, lease_until = NULL, error = NULL,
                 finished_at = {now}, updated_at = {now}
             WHERE id = $1 AND worker_id = $2 AND state = 'running'",
        );
        sqlx::query(&query)
            .bind(id.as_str())
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
        let query = self.db.sql(
            "UPDATE jobs SET
                 state = CASE WHEN $4 = 1 AND attempts < max_attempts THEN 'queued' ELSE 'failed' END,
                 finished_at = CASE WHEN $4 = 1 AND attempts < max_attempts THEN NULL ELSE {now} END,
                 run_at = {now} + $5, error = $3, lease_until = NULL, updated_at = {now}
             WHERE id = $1 AND worker_id = $2 AND state = 'running'",
        );
        sqlx::query(&query)
            .bind(id.as_str())
            .bind(worker_id)
            .bind(error)
            .bind(retry_in.is_some() as i64)
            .bind(micros(retry_in.unwrap_or_default()))
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    async fn get(&self, id: &JobId) -> Result<Job> {
        let query = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1");
        sqlx::query_as::<_, JobRow>(&query)
            .bind(id.as_str())
            .fetch_optional(self.db.pool())
            .await?
            .map(Job::from)
            .ok_or_else(|| Error::not_found("job", id))
    }
}
