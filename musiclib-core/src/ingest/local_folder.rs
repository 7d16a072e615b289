//! Importing `LOCAL_MEDIA_IMPORT_PATH` (spec: Sources, local folder scan rules 1–5).
//!
//! Walk the folder without leaving it (a symlink is followed only when its target stays
//! inside), skip what is not audio, skip what is already imported (dedup on the relative
//! path), then probe and copy new files with bounded concurrency and insert them in batches.
//! A bad file is counted and reported; the others go on.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use futures::{stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{probe, title_from_file_name, Ingest, IN_MEMORY_LIMIT};
use crate::auth::Caller;
use crate::catalog::{insert_track, NewTrack, Resolver};
use crate::domain::Source;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::storage::layout;
use crate::{Error, JobId, Result, TrackId};

/// Rows inserted per transaction.
const BATCH: usize = 256;
/// Files probed and copied at once.
const CONCURRENCY: usize = 4;
/// Errors kept in a report (the counts are always complete).
const MAX_REPORTED_ERRORS: usize = 100;

/// Counts of a local-folder scan, also stored as the job's progress while it runs.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ScanReport {
    /// Files found (every file, audio or not).
    pub seen: u64,
    /// New tracks created.
    pub imported: u64,
    /// Files not imported on purpose: not audio, hidden, already imported, or a symlink
    /// leading out of the folder.
    pub skipped: u64,
    /// Of `skipped`: files imported by an earlier scan.
    pub already_imported: u64,
    /// Audio files that could not be imported (damaged, unreadable).
    pub failed: u64,
    /// Why files failed (the first 100).
    pub errors: Vec<ScanFileError>,
    /// Ids of the imported tracks are not listed; their enrichment jobs were queued.
    pub enrichment_jobs_queued: u64,
    /// Whether the walk has finished (false while the job runs).
    pub done: bool,
}

/// One file that failed to import.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ScanFileError {
    /// Path relative to the import folder.
    pub path: String,
    /// What went wrong.
    pub error: String,
}

impl ScanReport {
    fn fail(&mut self, path: &str, error: impl Into<String>) {
        self.failed += 1;
        if self.errors.len() < MAX_REPORTED_ERRORS {
            self.errors.push(ScanFileError {
                path: path.to_string(),
                error: error.into(),
            });
        }
    }
}

/// A file the walk found that is not imported yet.
#[derive(Debug)]
struct Candidate {
    absolute: PathBuf,
    relative: String,
    size: u64,
    mtime: Option<i64>,
}

/// A candidate whose blob is stored, ready for its row.
struct Prepared {
    track: NewTrack,
}

/// The `scan_local_folder` job: imports `LOCAL_MEDIA_IMPORT_PATH`.
#[derive(Debug)]
pub struct ScanLocalFolder;

/// A `scan_local_folder` job's input: none (the folder is the server's setting).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanPayload {}

impl JobKind for ScanLocalFolder {
    const NAME: &'static str = "scan_local_folder";
    const POOL: Pool = Pool::General;
    type Payload = ScanPayload;

    /// One scan at a time.
    fn dedup_key(_payload: &ScanPayload) -> Option<String> {
        Some("scan:local_folder".into())
    }

    async fn run(context: &JobContext, _payload: ScanPayload) -> Result<Value, JobError> {
        let (sender, mut receiver) = tokio::sync::watch::channel(ScanReport::default());
        let reporter_context = context.clone();
        let reporter = tokio::spawn(async move {
            while receiver.changed().await.is_ok() {
                let report = receiver.borrow_and_update().clone();
                reporter_context
                    .progress(&serde_json::to_value(&report).unwrap_or(Value::Null))
                    .await;
            }
        });
        let result = context
            .library()
            .ingest()
            .scan_local_folder(|report| {
                let _ = sender.send(report.clone());
            })
            .await;
        drop(sender);
        let _ = reporter.await;
        let report = result.map_err(JobError::from)?;
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}

impl Ingest {
    /// Queues an import of the local folder (admin only). At most one scan
    /// is queued or running at a time; asking again returns the live job.
    pub async fn start_local_scan(&self, caller: &Caller) -> Result<JobId> {
        caller.require_admin()?;
        self.import_root()?;
        self.jobs
            .enqueue::<ScanLocalFolder>(&ScanPayload {}, Some(&caller.user.id))
            .await
    }

    fn import_root(&self) -> Result<PathBuf> {
        let root = self.import_path.clone().ok_or_else(|| {
            Error::Unavailable("no local folder is configured (set LOCAL_MEDIA_IMPORT_PATH)".into())
        })?;
        if !root.is_dir() {
            return Err(Error::Unavailable(format!(
                "the local folder {} does not exist or is not a directory",
                root.display()
            )));
        }
        Ok(root)
    }

    /// Runs a local-folder import now, calling `progress` after every batch.
    pub async fn scan_local_folder(
        &self,
        mut progress: impl FnMut(&ScanReport) + Send,
    ) -> Result<ScanReport> {
        let root = self.import_root()?;
        let root = root
            .canonicalize()
            .map_err(|error| Error::io(&root, error))?;
        let mut report = ScanReport::default();

        let known: HashSet<String> = self
            .db
            .sql("SELECT source_id FROM tracks WHERE source = 'local_folder'")
            .fetch_scalars(self.db.pool())
            .await?
            .into_iter()
            .collect();
        let walk_root = root.clone();
        let (candidates, walk_report) =
            tokio::task::spawn_blocking(move || walk(&walk_root, &known))
                .await
                .map_err(Error::task("folder walk"))?;
        report.seen = walk_report.seen;
        report.skipped = walk_report.skipped;
        report.already_imported = walk_report.already_imported;
        for error in walk_report.errors {
            report.fail(&error.path, error.error);
        }
        progress(&report);

        let mut prepared = stream::iter(candidates)
            .map(|candidate| {
                let library = self.clone();
                async move {
                    let relative = candidate.relative.clone();
                    (relative, library.prepare(candidate).await)
                }
            })
            .buffer_unordered(CONCURRENCY);
        let mut batch: Vec<Prepared> = Vec::with_capacity(BATCH);
        while let Some((relative, result)) = prepared.next().await {
            match result {
                Ok(ready) => batch.push(ready),
                Err(message) => report.fail(&relative, message),
            }
            if batch.len() >= BATCH {
                self.commit_batch(std::mem::take(&mut batch), &mut report)
                    .await?;
                progress(&report);
            }
        }
        self.commit_batch(batch, &mut report).await?;
        report.done = true;
        progress(&report);
        Ok(report)
    }

    /// Probes and stores one file. Errors are per-file messages for the report.
    async fn prepare(&self, candidate: Candidate) -> std::result::Result<Prepared, String> {
        let absolute = candidate.absolute.clone();
        let size = candidate.size;
        let (facts, sha256, bytes) =
            tokio::task::spawn_blocking(move || read_and_probe(&absolute, size))
                .await
                .map_err(|error| format!("probe task failed: {error}"))??;
        let track_id = TrackId::new();
        let key = layout::audio(&track_id, facts.format);
        let stored = match bytes {
            Some(bytes) => self.storage.blobs().put_bytes(&key, bytes.into()).await,
            None => self
                .storage
                .blobs()
                .put_file(&key, &candidate.absolute)
                .await
                .map(|_| ()),
        };
        stored
            .map_err(|error| format!("could not store the file: {}", crate::error_chain(&error)))?;
        let file_name = Path::new(&candidate.relative)
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Prepared {
            track: NewTrack {
                id: track_id,
                facts,
                storage_uri: key,
                source: Source::LocalFolder,
                source_id: candidate.relative,
                size_bytes: candidate.size as i64,
                sha256,
                mtime: candidate.mtime,
                added_by: None,
                fallback_title: title_from_file_name(&file_name),
            },
        })
    }

    /// Inserts a batch in one transaction, then enqueues its enrichment. On a database error
    /// the batch's blobs are deleted before the error is returned.
    async fn commit_batch(&self, batch: Vec<Prepared>, report: &mut ScanReport) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let db = &self.db;
        let result: Result<Vec<bool>> = async {
            let mut tx = db.begin().await?;
            let mut resolver = Resolver::new(db.clone());
            let mut inserted = Vec::with_capacity(batch.len());
            for prepared in &batch {
                inserted.push(insert_track(&mut tx, db, &mut resolver, &prepared.track).await?);
            }
            tx.commit().await?;
            Ok(inserted)
        }
        .await;
        let inserted = match result {
            Ok(inserted) => inserted,
            Err(error) => {
                self.storage
                    .delete_unreferenced(
                        batch.into_iter().map(|prepared| prepared.track.storage_uri),
                    )
                    .await;
                return Err(error);
            }
        };
        let mut imported = Vec::new();
        let mut duplicates = Vec::new();
        for (prepared, inserted) in batch.into_iter().zip(inserted) {
            if inserted {
                imported.push(prepared.track.id);
            } else {
                // Imported meanwhile by a concurrent scan: drop this copy.
                duplicates.push(prepared.track.storage_uri);
            }
        }
        report.imported += imported.len() as u64;
        report.skipped += duplicates.len() as u64;
        report.already_imported += duplicates.len() as u64;
        self.storage.delete_unreferenced(duplicates).await;
        report.enrichment_jobs_queued += imported.len() as u64;
        self.enqueue_enrichment(imported, None).await;
        Ok(())
    }
}

/// Reads a file once: hash, probe, and (small files) the bytes to store.
fn read_and_probe(
    path: &Path,
    size: u64,
) -> std::result::Result<(probe::AudioFacts, String, Option<Vec<u8>>), String> {
    let name = path.to_string_lossy();
    if size == 0 {
        return Err("the file is empty".into());
    }
    if size <= IN_MEMORY_LIMIT {
        let bytes =
            std::fs::read(path).map_err(|error| format!("cannot read the file: {error}"))?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let facts = probe::probe_bytes(&bytes, &name)?;
        Ok((facts, sha256, Some(bytes)))
    } else {
        let mut file =
            std::fs::File::open(path).map_err(|error| format!("cannot read the file: {error}"))?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let read = std::io::Read::read(&mut file, &mut buffer)
                .map_err(|error| format!("cannot read the file: {error}"))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        let facts = probe::probe_path(path)?;
        Ok((facts, hex::encode(hasher.finalize()), None))
    }
}

#[derive(Default)]
struct WalkReport {
    seen: u64,
    skipped: u64,
    already_imported: u64,
    errors: Vec<ScanFileError>,
}

/// Walks `root` (canonical), returning new audio files and the counts of the rest.
fn walk(root: &Path, known: &HashSet<String>) -> (Vec<Candidate>, WalkReport) {
    let mut report = WalkReport::default();
    let mut candidates = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    // Hidden folders (".git", ".Trash") are not music.
    let walker = walker.filter_entry(|entry| {
        entry.depth() == 0 || !(entry.file_type().is_dir() && is_hidden(entry.file_name()))
    });
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error
                    .path()
                    .and_then(|path| path.strip_prefix(root).ok())
                    .map(|path| path.to_string_lossy().into_owned())
                    .unwrap_or_default();
                report.errors.push(ScanFileError {
                    path,
                    error: format!("cannot read: {error}"),
                });
                continue;
            }
        };
        let file_type = entry.file_type();
        if file_type.is_dir() {
            continue;
        }
        report.seen += 1;
        let Ok(relative_path) = entry.path().strip_prefix(root) else {
            report.skipped += 1;
            continue;
        };
        let Some(relative) = relative_path.to_str().map(str::to_string) else {
            report.errors.push(ScanFileError {
                path: relative_path.to_string_lossy().into_owned(),
                error: "the file name is not valid UTF-8".into(),
            });
            continue;
        };
        if is_hidden(entry.file_name()) || !probe::has_audio_extension(entry.path()) {
            report.skipped += 1;
            continue;
        }
        // A symlink is imported only when it resolves to a file inside the folder.
        let absolute = if file_type.is_symlink() {
            match entry.path().canonicalize() {
                Ok(target) if target.starts_with(root) && target.is_file() => target,
                _ => {
                    report.skipped += 1;
                    continue;
                }
            }
        } else {
            entry.path().to_path_buf()
        };
        if known.contains(&relative) {
            report.skipped += 1;
            report.already_imported += 1;
            continue;
        }
        let metadata = match std::fs::metadata(&absolute) {
            Ok(metadata) => metadata,
            Err(error) => {
                report.errors.push(ScanFileError {
                    path: relative,
                    error: format!("cannot read: {error}"),
                });
                continue;
            }
        };
        let mtime = metadata
            .modified()
            .ok()
            .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|duration| duration.as_micros() as i64);
        candidates.push(Candidate {
            absolute,
            relative,
            size: metadata.len(),
            mtime,
        });
    }
    (candidates, report)
}

fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .map(|name| name.starts_with('.'))
        .unwrap_or(false)
}
