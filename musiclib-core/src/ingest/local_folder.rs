//! Importing `LOCAL_MEDIA_IMPORT_PATH` (spec: Sources, local folder scan rules 1–5).
//!
//! Walk the folder without leaving it (a symlink is followed only when its target stays
//! inside), skip what is not audio, skip what is already imported and unchanged (dedup on
//! the relative path; size and modification time tell a change), then probe and copy new
//! files with bounded concurrency and insert them in batches. A bad file is counted and
//! reported; the others go on.
//!
//! A rescan also follows what changed in the folder, as users of folder-based servers expect:
//! - a known file whose size or modification time changed is read again
//!   (`Catalog::refresh_from_file`: its tags win, a manual edit is kept; stale renditions
//!   go);
//! - a known file that is gone is marked `missing`, never deleted: its likes, plays and
//!   playlist entries stay, and the stored copy still plays;
//! - a new file with the content (SHA-256) of a vanished one is that track, moved: it is
//!   relinked to the new path instead of imported twice;
//! - a missing file that is back is `available` again.
//!
//! A folder with no audio file at all while tracks are known from it looks unmounted: nothing
//! is marked missing, and the report says why.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
    /// Known files whose size or modification time changed, read again.
    pub changed: u64,
    /// Known files gone from the folder, now marked `missing`.
    pub missing: u64,
    /// Vanished files found under a new path (same content), relinked to their tracks.
    pub relinked: u64,
    /// Missing files that are back.
    pub restored: u64,
    /// Why no file was marked missing although some are gone, when the folder looks
    /// unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
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

/// A candidate whose blob is stored, ready for its row; or a vanished track found again.
enum Prepared {
    /// A new track.
    New(Box<NewTrack>),
    /// The file of a vanished track, under a new path.
    Moved {
        id: TrackId,
        relative: String,
        mtime: Option<i64>,
    },
}

/// What a rescan compares of every imported file: its size and modification time. (Read for
/// every file on every scan, so kept to two numbers: the rest is read only for the few files
/// that changed or went.)
#[derive(Debug, Clone, Copy)]
struct Known {
    size: Option<i64>,
    mtime: Option<i64>,
}

/// The rest of what the database knows of an imported file.
#[derive(Debug, Clone, sqlx::FromRow)]
struct KnownTrack {
    id: String,
    source_id: String,
    content_sha256: Option<String>,
    availability: String,
}

/// A known file whose size or modification time changed.
#[derive(Debug)]
struct Changed {
    id: TrackId,
    candidate: Candidate,
}

/// Vanished tracks by content hash, taken by the first new file with that content.
type Vanished = Arc<Mutex<HashMap<String, Vec<TrackId>>>>;

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

        // The walk (file system) and what the database knows, side by side.
        let walk_root = root.clone();
        let walking = tokio::task::spawn_blocking(move || walk(&walk_root));
        let loading = async {
            let rows: Vec<(String, Option<i64>, Option<i64>)> = self
                .db
                .sql(
                    "SELECT source_id, size_bytes, source_mtime FROM tracks
                     WHERE source = 'local_folder'",
                )
                .fetch_all(self.db.pool())
                .await?;
            let missing: Vec<String> = self
                .db
                .sql(
                    "SELECT source_id FROM tracks
                     WHERE source = 'local_folder' AND availability = 'missing'",
                )
                .fetch_scalars(self.db.pool())
                .await?;
            Ok::<_, Error>((rows, missing))
        };
        let (walked, loaded) = tokio::join!(walking, loading);
        let (files, walk_report) = walked.map_err(Error::task("folder walk"))?;
        let (rows, missing) = loaded?;
        let known: HashMap<String, Known> = rows
            .into_iter()
            .map(|(path, size, mtime)| (path, Known { size, mtime }))
            .collect();
        let missing_before: HashSet<String> = missing.into_iter().collect();
        let walked = classify(files, &known, &missing_before, walk_report);
        let Walked {
            candidates,
            changed: changed_paths,
            present,
            audio_files,
            report: walk_report,
        } = walked;
        report.seen = walk_report.seen;
        report.skipped = walk_report.skipped;
        report.already_imported = walk_report.already_imported;
        for error in walk_report.errors {
            report.fail(&error.path, error.error);
        }
        progress(&report);

        // Known files that are not there any more (tracks already missing may still turn up
        // under a new path). An empty folder while tracks are known looks unmounted: then
        // nothing is marked missing.
        let absent_paths: Vec<&str> = known
            .keys()
            .filter(|path| !present.contains(*path))
            .map(String::as_str)
            .collect();
        let changed_lookup: Vec<&str> = changed_paths
            .iter()
            .map(|candidate| candidate.relative.as_str())
            .collect();
        let back_paths: Vec<&str> = present
            .iter()
            .filter(|path| missing_before.contains(*path))
            .map(String::as_str)
            .collect();
        let details = self
            .known_tracks(
                absent_paths
                    .iter()
                    .chain(&changed_lookup)
                    .chain(&back_paths),
            )
            .await?;
        let absent: Vec<&KnownTrack> = absent_paths
            .iter()
            .filter_map(|path| details.get(*path))
            .collect();
        let gone = absent
            .iter()
            .filter(|known| known.availability != "missing")
            .count();
        let folder_looks_unavailable = audio_files == 0 && gone > 0;
        let vanished: Vanished = Arc::new(Mutex::new(HashMap::new()));
        if folder_looks_unavailable {
            report.warning = Some(format!(
                "the folder has no audio file while {gone} tracks were imported from it: is it unmounted? No track was marked missing"
            ));
        } else {
            let mut by_hash = vanished.lock().expect("not poisoned");
            for known in &absent {
                if let Some(sha) = known.content_sha256.as_ref().filter(|sha| !sha.is_empty()) {
                    by_hash
                        .entry(sha.clone())
                        .or_default()
                        .push(TrackId::from_db(known.id.clone()));
                }
            }
        }
        // Changed files are read again; so are missing files that are back (their stored
        // copy may be gone too, when cleanup marked them), which are available again only
        // once that read has stored them.
        let back_set: HashSet<&str> = back_paths.iter().copied().collect();
        let changed = changed_paths.into_iter().filter_map(|candidate| {
            let id = TrackId::from_db(details.get(&candidate.relative)?.id.clone());
            Some(Changed { id, candidate })
        });
        let mut back = Vec::new();
        for change in changed {
            let relative = change.candidate.relative.clone();
            let id = change.id.clone();
            match self.reread_changed(change).await {
                Ok(()) if back_set.contains(relative.as_str()) => back.push(id.to_string()),
                Ok(()) => report.changed += 1,
                Err(message) => report.fail(&relative, message),
            }
        }
        // (A re-read may already have made them available.)
        self.set_availability(&back, "available").await?;
        report.restored += back.len() as u64;
        progress(&report);

        let mut prepared = stream::iter(candidates)
            .map(|candidate| {
                let library = self.clone();
                let vanished = vanished.clone();
                async move {
                    let relative = candidate.relative.clone();
                    (relative, library.prepare(candidate, &vanished).await)
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

        // Whatever vanished and was not found under a new path is missing.
        if !folder_looks_unavailable {
            let still_vanished: HashSet<String> = vanished
                .lock()
                .expect("not poisoned")
                .values()
                .flatten()
                .map(|id| id.to_string())
                .collect();
            // Absent and not relinked (a track without a hash cannot be found again).
            let missing: Vec<String> = absent
                .iter()
                .filter(|known| known.availability != "missing")
                .filter(|known| {
                    known.content_sha256.as_ref().is_none_or(String::is_empty)
                        || still_vanished.contains(&known.id)
                })
                .map(|known| known.id.clone())
                .collect();
            report.missing += self.set_availability(&missing, "missing").await?;
        }
        report.done = true;
        progress(&report);
        Ok(report)
    }

    /// Id, hash and availability of the local-folder tracks at `paths`, by path.
    async fn known_tracks<'a>(
        &self,
        paths: impl Iterator<Item = &'a &'a str>,
    ) -> Result<HashMap<String, KnownTrack>> {
        let paths: Vec<&str> = paths.copied().collect();
        let mut tracks = HashMap::new();
        for chunk in paths.chunks(500) {
            let mut sql = self.db.sql(
                "SELECT id, source_id, content_sha256, availability FROM tracks
                 WHERE source = 'local_folder' AND source_id IN (",
            );
            sql.push_list(chunk.iter().copied()).push(")");
            let rows: Vec<KnownTrack> = sql.fetch_all(self.db.pool()).await?;
            tracks.extend(rows.into_iter().map(|row| (row.source_id.clone(), row)));
        }
        Ok(tracks)
    }

    /// Stores a file's audio at `key` (atomically): the bytes already read, or the file.
    /// An error is a per-file message for the report.
    async fn store_audio(
        &self,
        key: &str,
        bytes: Option<Vec<u8>>,
        path: &Path,
    ) -> std::result::Result<(), String> {
        let blobs = self.storage.blobs();
        let stored = match bytes {
            Some(bytes) => blobs.put_bytes(key, bytes.into()).await,
            None => blobs.put_file(key, path).await.map(drop),
        };
        stored.map_err(|error| format!("could not store the file: {}", crate::error_chain(&error)))
    }

    /// Sets the availability of local-folder tracks; returns how many changed.
    async fn set_availability(&self, ids: &[String], availability: &str) -> Result<u64> {
        let mut changed = 0;
        for chunk in ids.chunks(500) {
            let mut sql = self.db.sql("UPDATE tracks SET availability = ");
            sql.push_bind(availability)
                .push(", updated_at = {now} WHERE source = 'local_folder' AND availability <> ")
                .push_bind(availability)
                .push(" AND id IN (")
                .push_list(chunk.iter().map(String::as_str))
                .push(")");
            changed += sql.execute(self.db.pool()).await?;
        }
        Ok(changed)
    }

    /// Reads a changed file again: its blob is replaced (atomically), the track refreshed
    /// from it (tags win, a manual edit is kept), its renditions dropped (they were made from
    /// the old audio). Errors are per-file messages for the report.
    async fn reread_changed(&self, change: Changed) -> std::result::Result<(), String> {
        let Changed { id, candidate } = change;
        let absolute = candidate.absolute.clone();
        let size = candidate.size;
        let (facts, sha256, bytes) =
            tokio::task::spawn_blocking(move || read_and_probe(&absolute, size))
                .await
                .map_err(|error| format!("probe task failed: {error}"))??;
        let current = self
            .catalog
            .get_track(&id)
            .await
            .map_err(|error| crate::error_chain(&error))?;
        let key = layout::audio(&id, facts.format);
        self.store_audio(&key, bytes, &candidate.absolute).await?;
        let file = crate::catalog::FileFacts {
            size_bytes: candidate.size as i64,
            sha256,
            mtime: candidate.mtime,
        };
        let outcome = async {
            let rendition_keys = self
                .catalog_and_media_refresh(&id, &facts, &file, &key)
                .await?;
            Ok::<_, Error>(rendition_keys)
        }
        .await;
        let rendition_keys = match outcome {
            Ok(keys) => keys,
            Err(error) => {
                if key != current.storage_uri {
                    self.storage.delete_unreferenced([key]).await;
                }
                return Err(crate::error_chain(&error));
            }
        };
        self.media.forget_track(&id);
        let mut stale = rendition_keys;
        if key != current.storage_uri {
            // Another format: the old blob is no longer referenced.
            stale.push(current.storage_uri);
        }
        self.storage.delete_unreferenced(stale).await;
        Ok(())
    }

    /// The database part of a re-read: the track's fields and blob key, and its renditions'
    /// rows (whose keys are returned, to delete after commit).
    async fn catalog_and_media_refresh(
        &self,
        id: &TrackId,
        facts: &probe::AudioFacts,
        file: &crate::catalog::FileFacts,
        key: &str,
    ) -> Result<Vec<String>> {
        self.catalog
            .refresh_from_file(id, facts, Some(file))
            .await?;
        let mut tx = self.db.begin().await?;
        self.db
            .sql(
                "UPDATE tracks SET storage_uri = $2, format = $3, mime_type = $4,
                     availability = 'available', updated_at = {now} WHERE id = $1",
            )
            .bind(id)
            .bind(key)
            .bind(facts.format)
            .bind(facts.mime_type)
            .execute(&mut *tx)
            .await?;
        let keys = self.media.delete_renditions(&mut tx, id).await?;
        tx.commit().await?;
        Ok(keys)
    }

    /// Probes and stores one file, unless it is a vanished track's file under a new path.
    /// Errors are per-file messages for the report.
    async fn prepare(
        &self,
        candidate: Candidate,
        vanished: &Vanished,
    ) -> std::result::Result<Prepared, String> {
        let absolute = candidate.absolute.clone();
        let size = candidate.size;
        let (facts, sha256, bytes) =
            tokio::task::spawn_blocking(move || read_and_probe(&absolute, size))
                .await
                .map_err(|error| format!("probe task failed: {error}"))??;
        let moved = vanished
            .lock()
            .expect("not poisoned")
            .get_mut(&sha256)
            .and_then(Vec::pop);
        if let Some(id) = moved {
            return Ok(Prepared::Moved {
                id,
                relative: candidate.relative,
                mtime: candidate.mtime,
            });
        }
        let track_id = TrackId::new();
        let key = layout::audio(&track_id, facts.format);
        self.store_audio(&key, bytes, &candidate.absolute).await?;
        let file_name = Path::new(&candidate.relative)
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Prepared::New(Box::new(NewTrack {
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
        })))
    }

    /// Inserts a batch in one transaction, then enqueues its enrichment. On a database error
    /// the batch's blobs are deleted before the error is returned.
    async fn commit_batch(&self, batch: Vec<Prepared>, report: &mut ScanReport) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let db = &self.db;
        let mut moved = Vec::new();
        let batch: Vec<NewTrack> = batch
            .into_iter()
            .filter_map(|prepared| match prepared {
                Prepared::New(track) => Some(*track),
                Prepared::Moved {
                    id,
                    relative,
                    mtime,
                } => {
                    moved.push((id, relative, mtime));
                    None
                }
            })
            .collect();
        let result: Result<Vec<bool>> = async {
            let mut tx = db.begin().await?;
            for (id, relative, mtime) in &moved {
                db.sql(
                    "UPDATE tracks SET source_id = $2, source_mtime = $3, availability = 'available',
                         updated_at = {now} WHERE id = $1",
                )
                .bind(id)
                .bind(relative.as_str())
                .bind(*mtime)
                .execute(&mut *tx)
                .await?;
            }
            let mut resolver = Resolver::new(db.clone());
            let mut inserted = Vec::with_capacity(batch.len());
            for track in &batch {
                inserted.push(insert_track(&mut tx, db, &mut resolver, track).await?);
            }
            tx.commit().await?;
            Ok(inserted)
        }
        .await;
        let inserted = match result {
            Ok(inserted) => inserted,
            Err(error) => {
                self.storage
                    .delete_unreferenced(batch.into_iter().map(|track| track.storage_uri))
                    .await;
                return Err(error);
            }
        };
        let mut imported = Vec::new();
        let mut duplicates = Vec::new();
        for (track, inserted) in batch.into_iter().zip(inserted) {
            if inserted {
                imported.push(track.id);
            } else {
                // Imported meanwhile by a concurrent scan: drop this copy.
                duplicates.push(track.storage_uri);
            }
        }
        report.relinked += moved.len() as u64;
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
        let sha256 = crate::storage::sha256_file(path)
            .map_err(|error| format!("cannot read the file: {}", crate::error_chain(&error)))?;
        let facts = probe::probe_path(path)?;
        Ok((facts, sha256, None))
    }
}

#[derive(Default)]
struct WalkReport {
    seen: u64,
    skipped: u64,
    already_imported: u64,
    errors: Vec<ScanFileError>,
}

/// What a walk found.
struct Walked {
    /// Audio files not imported yet.
    candidates: Vec<Candidate>,
    /// Imported files whose size or modification time changed.
    changed: Vec<Candidate>,
    /// Relative paths of the imported files found (changed or not).
    present: HashSet<String>,
    /// Audio files found in all.
    audio_files: u64,
    report: WalkReport,
}

/// Walks `root` (canonical): every audio file with its size and modification time, and the
/// counts of the rest.
fn walk(root: &Path) -> (Vec<Candidate>, WalkReport) {
    let mut report = WalkReport::default();
    let mut candidates = Vec::new();
    let mut found: Vec<(PathBuf, String)> = Vec::new();
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
        found.push((absolute, relative));
    }
    // Stat the files on every core: on a warm cache a stat costs more than reading the
    // directories, and a rescan stats every file to see what changed.
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = found.len().div_ceil(threads).max(1);
    let stats: Vec<Vec<Result<Candidate, ScanFileError>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = found
            .chunks(chunk)
            .map(|files| scope.spawn(move || files.iter().map(stat).collect()))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or_default())
            .collect()
    });
    for result in stats.into_iter().flatten() {
        match result {
            Ok(candidate) => candidates.push(candidate),
            Err(error) => report.errors.push(error),
        }
    }
    (candidates, report)
}

/// A found file with its size and modification time.
fn stat((absolute, relative): &(PathBuf, String)) -> Result<Candidate, ScanFileError> {
    let metadata = std::fs::metadata(absolute).map_err(|error| ScanFileError {
        path: relative.clone(),
        error: format!("cannot read: {error}"),
    })?;
    let mtime = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|duration| duration.as_micros() as i64);
    Ok(Candidate {
        absolute: absolute.clone(),
        relative: relative.clone(),
        size: metadata.len(),
        mtime,
    })
}

/// Sorts the audio files a walk found into new, changed and unchanged known ones.
fn classify(
    files: Vec<Candidate>,
    known: &HashMap<String, Known>,
    missing: &HashSet<String>,
    mut report: WalkReport,
) -> Walked {
    let mut candidates = Vec::new();
    let mut changed = Vec::new();
    let mut present = HashSet::new();
    let audio_files = files.len() as u64;
    for candidate in files {
        match known.get(&candidate.relative) {
            None => candidates.push(candidate),
            Some(known) => {
                present.insert(candidate.relative.clone());
                let same_size = known.size == Some(candidate.size as i64);
                // Tracks imported before modification times were kept have none: only a
                // size change tells then.
                let same_time = known.mtime.is_none() || known.mtime == candidate.mtime;
                if same_size && same_time && !missing.contains(&candidate.relative) {
                    report.skipped += 1;
                    report.already_imported += 1;
                } else {
                    changed.push(candidate);
                }
            }
        }
    }
    Walked {
        candidates,
        changed,
        present,
        audio_files,
        report,
    }
}

fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .map(|name| name.starts_with('.'))
        .unwrap_or(false)
}
