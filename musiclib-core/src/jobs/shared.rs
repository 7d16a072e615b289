//! What services that share a job between several askers (a remote fetch that downloads
//! and materializations join) may read and change of it, so that the `jobs` table is read
//! and written here only.

use std::collections::HashMap;

use super::queue::{JobRow, JOB_COLUMNS};
use super::{Job, JobKind, JobState, Jobs};
use crate::db::{Tx, CHUNK};
use crate::{JobId, Result};

/// The states of a job that may still run.
const LIVE: &str = "state IN ('queued', 'running')";

/// The jobs background analyses (a track's sound, its loudness) give way to: imports and
/// enrichment.
const IMPORT_KINDS: &[&str] = &[
    "scan_local_folder",
    "enrich_task",
    "materialize_track",
    "download_task",
];

impl Jobs {
    /// The jobs of `ids` that exist, by id (one query per 500).
    pub(crate) async fn get_many(&self, ids: &[&JobId]) -> Result<HashMap<JobId, Job>> {
        let db = self.db();
        let mut jobs = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(CHUNK) {
            let mut select = db.sql(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id IN ("));
            select
                .push_list(chunk.iter().map(|id| id.as_str()))
                .push(")");
            for row in select.fetch_all::<JobRow, _>(db.pool()).await? {
                let job = Job::from(row);
                jobs.insert(job.id.clone(), job);
            }
        }
        Ok(jobs)
    }

    /// A job read inside `tx` with its row locked until `tx` ends: whoever joins or stops it
    /// meanwhile waits. `None` when it is gone.
    pub(crate) async fn lock(&self, tx: &mut Tx, id: &JobId) -> Result<Option<Job>> {
        let db = self.db();
        Ok(db
            .sql(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs j WHERE j.id = $1{}",
                db.lock("j")
            ))
            .bind(id)
            .fetch_optional::<JobRow, _>(&mut **tx)
            .await?
            .map(Job::from))
    }

    /// Fails a queued job with `error` inside `tx` (nobody wants it any more: it never
    /// runs). False when it is not queued.
    pub(crate) async fn fail_queued(&self, tx: &mut Tx, id: &JobId, error: &str) -> Result<bool> {
        let db = self.db();
        let failed = db
            .sql(
                "UPDATE jobs SET state = $2, error = $3, finished_at = {now}, updated_at = {now}
                 WHERE id = $1 AND state = $4",
            )
            .bind(id)
            .bind(JobState::Failed.as_str())
            .bind(error)
            .bind(JobState::Queued.as_str())
            .execute(&mut **tx)
            .await?;
        Ok(failed == 1)
    }

    /// Makes a live job of kind `From` a job of kind `To`: two kinds of one payload whose
    /// name records who asked (a fetch a materialization joined). False when it is no live
    /// `From`.
    pub(crate) async fn rekind<From, To>(&self, id: &JobId) -> Result<bool>
    where
        From: JobKind,
        To: JobKind<Payload = From::Payload>,
    {
        let db = self.db();
        let changed = db
            .sql(&format!(
                "UPDATE jobs SET kind = $2, updated_at = {{now}} WHERE id = $1 AND kind = $3 AND {LIVE}"
            ))
            .bind(id)
            .bind(To::NAME)
            .bind(From::NAME)
            .execute(db.pool())
            .await?;
        Ok(changed == 1)
    }

    /// Whether a job with `dedup_key` is queued or running.
    pub(crate) async fn live(&self, dedup_key: &str) -> Result<bool> {
        let db = self.db();
        let count: i64 = db
            .sql(&format!(
                "SELECT COUNT(*) FROM jobs WHERE dedup_key = $1 AND {LIVE}"
            ))
            .bind(dedup_key)
            .fetch_scalar(db.pool())
            .await?;
        Ok(count > 0)
    }

    /// The dedup keys starting with `prefix` (which has no `%` or `_`) of the jobs queued
    /// or running.
    pub(crate) async fn live_dedup_keys(&self, prefix: &str) -> Result<Vec<String>> {
        debug_assert!(!prefix.contains(['%', '_']), "a LIKE prefix: {prefix}");
        let db = self.db();
        db.sql(&format!(
            "SELECT dedup_key FROM jobs WHERE dedup_key LIKE $1 AND {LIVE}"
        ))
        .bind(format!("{prefix}%"))
        .fetch_all::<(String,), _>(db.pool())
        .await
        .map(|rows| rows.into_iter().map(|(key,)| key).collect())
    }

    /// How many jobs of `kinds` are queued or running.
    pub(crate) async fn count_live(&self, kinds: &[&str]) -> Result<i64> {
        let db = self.db();
        let mut select = db.sql(&format!(
            "SELECT COUNT(*) FROM jobs WHERE {LIVE} AND kind IN ("
        ));
        select.push_list(kinds.iter().copied()).push(")");
        select.fetch_scalar(db.pool()).await
    }

    /// Whether imports or enrichment are queued or running ([`IMPORT_KINDS`]): a background
    /// analysis stops before its next track when they are. True when the queue cannot say.
    pub(crate) async fn imports_waiting(&self) -> bool {
        self.count_live(IMPORT_KINDS)
            .await
            .map_or(true, |count| count > 0)
    }
}
