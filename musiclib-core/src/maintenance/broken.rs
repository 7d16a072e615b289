//! Broken files: the `check_files` job looks at every stored original (is it there, has it
//! the recorded size and SHA-256, does it decode to the end with ffmpeg) and records the
//! outcome per track in `file_checks`; `GET /storage/broken` lists the tracks whose last check
//! found a problem, with the reason and when. Decoding every file takes long: it is a job with
//! progress, never a request.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Maintenance;
use crate::auth::Caller;
use crate::catalog::{StoredFile, TrackRow, TRACK_SELECT};
use crate::domain::{Page, Paged, Track};
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::{JobId, Result, Timestamp};

/// What is wrong with a stored file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileProblem {
    /// The blob is not in storage.
    Missing,
    /// Its size differs from the recorded one.
    SizeMismatch,
    /// Its SHA-256 differs from the recorded one.
    HashMismatch,
    /// It does not decode to the end.
    DecodeFailed,
}

impl FileProblem {
    /// The wire (and stored) name.
    pub fn as_str(self) -> &'static str {
        match self {
            FileProblem::Missing => "missing",
            FileProblem::SizeMismatch => "size_mismatch",
            FileProblem::HashMismatch => "hash_mismatch",
            FileProblem::DecodeFailed => "decode_failed",
        }
    }

    fn parse(text: &str) -> Option<FileProblem> {
        [
            FileProblem::Missing,
            FileProblem::SizeMismatch,
            FileProblem::HashMismatch,
            FileProblem::DecodeFailed,
        ]
        .into_iter()
        .find(|problem| problem.as_str() == text)
    }
}

/// A track whose stored file the last check found broken.
#[derive(Debug, Clone)]
pub struct BrokenTrack {
    /// The track.
    pub track: Track,
    /// What is wrong.
    pub problem: FileProblem,
    /// Why, readably.
    pub reason: String,
    /// When it was checked.
    pub checked_at: Timestamp,
}

/// The `check_files` job.
#[derive(Debug)]
pub struct CheckFiles;

/// A file check's input: none (every stored file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckPayload {}

/// A file check's progress and result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// Tracks with a stored file when the job started.
    pub total: i64,
    /// Checked so far.
    pub checked: i64,
    /// Of those, broken.
    pub broken: i64,
    /// Whether files were decoded (false without ffmpeg: presence, size and hash only).
    pub decoded: bool,
}

impl JobKind for CheckFiles {
    const NAME: &'static str = "check_files";
    const POOL: Pool = Pool::General;
    type Payload = CheckPayload;
    type Service = Maintenance;

    /// One check at a time.
    fn dedup_key(_payload: &CheckPayload) -> Option<String> {
        Some("check_files".into())
    }

    async fn run(
        maintenance: &Maintenance,
        context: &JobContext,
        _payload: CheckPayload,
    ) -> Result<Value, JobError> {
        let report = check_all(maintenance, context).await?;
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}

#[derive(sqlx::FromRow)]
struct BrokenRow {
    #[sqlx(flatten)]
    track: TrackRow,
    problem: String,
    reason: Option<String>,
    checked_at: i64,
}

impl Maintenance {
    /// Admin only: starts a check of every stored file (job `check_files`); a check already
    /// queued or running is returned instead of a second one.
    pub async fn start_file_check(&self, caller: &Caller) -> Result<JobId> {
        caller.require_admin()?;
        self.jobs
            .enqueue::<CheckFiles>(&CheckPayload::default(), Some(&caller.user.id))
            .await
    }

    /// Tracks whose stored file the last check found broken, most recently checked first.
    /// For any signed-in user.
    pub async fn broken(&self, _caller: &Caller, page: Page) -> Result<Paged<BrokenTrack>> {
        let select = TRACK_SELECT.replacen(
            "FROM tracks t",
            ", f.problem, f.reason, f.checked_at FROM tracks t JOIN file_checks f ON f.track_id = t.id",
            1,
        );
        let mut filter = self.db.sql("");
        filter.push_condition().push("f.problem IS NOT NULL");
        let rows: Paged<BrokenRow> = filter
            .fetch_page::<BrokenRow, _>(
                self.db.pool(),
                "SELECT COUNT(*) FROM tracks t JOIN file_checks f ON f.track_id = t.id",
                &select,
                "f.checked_at DESC, t.id",
                page,
            )
            .await?;
        Ok(rows.map(|row| BrokenTrack {
            problem: FileProblem::parse(&row.problem).unwrap_or(FileProblem::DecodeFailed),
            reason: row.reason.unwrap_or_default(),
            checked_at: Timestamp::from_micros(row.checked_at),
            track: row.track.into(),
        }))
    }

    /// Records one track's check (a problem and why, or none).
    async fn record_check(
        &self,
        track: &str,
        outcome: Option<(FileProblem, String)>,
    ) -> Result<()> {
        let (problem, reason) = match &outcome {
            Some((problem, reason)) => (Some(problem.as_str()), Some(reason.as_str())),
            None => (None, None),
        };
        let upsert = self
            .db
            .kind()
            .upsert("track_id", &["checked_at", "problem", "reason"]);
        self.db
            .sql(&format!(
                "INSERT INTO file_checks (track_id, checked_at, problem, reason)
                 SELECT $1, {{now}}, $2, $3 WHERE EXISTS (SELECT 1 FROM tracks WHERE id = $1)
                 {upsert}"
            ))
            .bind(track)
            .bind(problem)
            .bind(reason)
            .execute(self.db.pool())
            .await?;
        Ok(())
    }
}

async fn check_all(maintenance: &Maintenance, context: &JobContext) -> Result<CheckReport> {
    let catalog = &maintenance.catalog;
    let decoded = maintenance.media.transcoder_ready().await;
    let mut report = CheckReport {
        total: catalog.count_with_audio().await?,
        decoded,
        ..Default::default()
    };
    context.progress(&to_value(&report)).await;
    let mut after = String::new();
    loop {
        let batch = catalog.tracks_with_audio_after(&after, 50).await?;
        let Some(last) = batch.last() else {
            break;
        };
        after = last.id.clone();
        for file in batch {
            let outcome = check_one(maintenance, &file, decoded).await?;
            report.broken += i64::from(outcome.is_some());
            report.checked += 1;
            maintenance.record_check(&file.id, outcome).await?;
        }
        context.progress(&to_value(&report)).await;
    }
    Ok(report)
}

/// Checks one stored file: `None` when whole. Storage errors other than absence fail the job
/// (retried): a store that does not answer says nothing about the files.
async fn check_one(
    maintenance: &Maintenance,
    recorded: &StoredFile,
    decode: bool,
) -> Result<Option<(FileProblem, String)>> {
    let key = recorded.storage_uri.as_str();
    let Some(meta) = maintenance.storage.blobs().head(key).await? else {
        return Ok(Some((
            FileProblem::Missing,
            format!("the stored file {key} is not in storage"),
        )));
    };
    if let Some(size) = recorded.size_bytes.filter(|size| *size > 0) {
        if meta.size != size as u64 {
            return Ok(Some((
                FileProblem::SizeMismatch,
                format!(
                    "the stored file has {} bytes, {size} were recorded",
                    meta.size
                ),
            )));
        }
    }
    let file = maintenance.storage.local_file(key).await?;
    let path = file.path.clone();
    let digest = tokio::task::spawn_blocking(move || crate::storage::sha256_file(&path))
        .await
        .map_err(crate::Error::task("file hash"))??;
    if let Some(expected) = recorded
        .content_sha256
        .as_deref()
        .filter(|sha| !sha.is_empty())
    {
        if digest != expected {
            return Ok(Some((
                FileProblem::HashMismatch,
                "the stored file's SHA-256 differs from the one recorded at import".into(),
            )));
        }
    }
    if decode {
        if let Some(complaint) = maintenance.media.decode_check(&file.path).await? {
            return Ok(Some((
                FileProblem::DecodeFailed,
                format!("the audio does not decode to the end: {complaint}"),
            )));
        }
    }
    Ok(None)
}

fn to_value(report: &CheckReport) -> Value {
    serde_json::to_value(report).unwrap_or(Value::Null)
}
