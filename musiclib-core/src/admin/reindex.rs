//! The `reindex_library` job (`POST /admin/reindex`): re-reads the tags and audio facts of
//! every stored file (`Catalog::refresh_from_file`: tags win where they have a value, a manual
//! edit is kept), then recomputes every search text and rebuilds the search index. Progress
//! is reported as it goes; a file that cannot be read is counted and named, never fatal.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::Catalog;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::TrackId;

/// How many unreadable files a report names (the count covers them all).
const MAX_REPORTED_ERRORS: usize = 20;

/// The `reindex_library` job.
#[derive(Debug)]
pub struct Reindex;

/// A reindex's input: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {}

/// What a reindex has done so far (its progress) and in the end (its result).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReindexReport {
    /// Tracks with a stored file, when the job started.
    pub total: i64,
    /// Files read so far.
    pub done: i64,
    /// Tracks whose catalogue fields changed.
    pub changed: i64,
    /// Files that could not be read.
    pub failed: i64,
    /// Search texts rebuilt differently (set at the end).
    pub search_texts_changed: u64,
    /// The first unreadable files and why.
    pub errors: Vec<ReindexError>,
}

/// A file a reindex could not read.
#[derive(Debug, Clone, Serialize)]
pub struct ReindexError {
    /// The track.
    pub track_id: String,
    /// Why.
    pub error: String,
}

impl JobKind for Reindex {
    const NAME: &'static str = "reindex_library";
    const POOL: Pool = Pool::General;
    type Payload = Payload;
    type Service = Catalog;

    /// One reindex at a time.
    fn dedup_key(_payload: &Payload) -> Option<String> {
        Some("reindex_library".into())
    }

    async fn run(
        catalog: &Catalog,
        context: &JobContext,
        _payload: Payload,
    ) -> Result<Value, JobError> {
        let report = reindex(catalog, context).await?;
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}

async fn reindex(catalog: &Catalog, context: &JobContext) -> crate::Result<ReindexReport> {
    let mut report = ReindexReport {
        total: catalog.count_with_audio().await?,
        ..Default::default()
    };
    context.progress(&to_value(&report)).await;
    let mut after = String::new();
    loop {
        let batch = catalog.tracks_with_audio_after(&after, 100).await?;
        let Some(last) = batch.last() else {
            break;
        };
        after = last.id.clone();
        for file in batch {
            let (id, key, source_id) = (file.id, file.storage_uri, file.source_id);
            let track = TrackId::from_db(id.clone());
            match reread(catalog, &track, &key, &source_id).await {
                Ok(changed) => report.changed += i64::from(changed),
                Err(error) => {
                    report.failed += 1;
                    if report.errors.len() < MAX_REPORTED_ERRORS {
                        report.errors.push(ReindexError {
                            track_id: id,
                            error,
                        });
                    }
                }
            }
            report.done += 1;
        }
        context.progress(&to_value(&report)).await;
    }
    report.search_texts_changed = catalog.rebuild_search_index().await?;
    Ok(report)
}

/// Re-reads one track's file; a readable reason when it cannot.
async fn reread(
    catalog: &Catalog,
    track: &TrackId,
    key: &str,
    source_id: &str,
) -> Result<bool, String> {
    let file = catalog
        .storage()
        .local_file(key)
        .await
        .map_err(|error| crate::error_chain(&error))?;
    let name = source_id.to_string();
    let path = file.path.clone();
    let facts = tokio::task::spawn_blocking(move || crate::probe::probe_file(&path, &name))
        .await
        .map_err(|error| format!("the reader stopped: {error}"))??;
    catalog
        .refresh_from_file(track, &facts, None)
        .await
        .map_err(|error| crate::error_chain(&error))
}

fn to_value(report: &ReindexReport) -> Value {
    serde_json::to_value(report).unwrap_or(Value::Null)
}
