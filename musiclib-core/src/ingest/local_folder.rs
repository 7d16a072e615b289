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

use super::{title_from_file_name, Ingest, IN_MEMORY_LIMIT};
use crate::auth::Caller;
use crate::catalog::writes;
use crate::catalog::{insert_track, NewTrack, Resolver};
use crate::domain::{Availability, Source};
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::probe;
use crate::storage::layout;
use crate::{Error, JobId, Result, TrackId};

/// Rows inserted per transaction.
const BATCH: usize = 256;

/// Longest a stored file waits for its batch's commit: past it the batch is committed,
/// however small. Cleanup leaves alone blobs younger than `CLEANUP_GRACE_SECONDS`; a file's
/// row must land well within that, however slowly the rest of its batch is read.
const BATCH_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);
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
    /// The import folder, canonical: the file is opened by `relative` under it
    /// ([`crate::storage::open_inside`]), never by where the walk found it.
    root: Arc<Path>,
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

/// What the database knows of a walked file that was imported before.
#[derive(Debug, Clone, sqlx::FromRow)]
struct KnownFile {
    id: String,
    source_id: String,
    size_bytes: Option<i64>,
    source_mtime: Option<i64>,
    availability: String,
}

/// A known file whose size or modification time changed.
#[derive(Debug)]
struct Changed {
    id: TrackId,
    candidate: Candidate,
}

/// What a scan needs to tell a moved file from a new one.
#[derive(Debug)]
struct Moves {
    /// The folder (canonical).
    root: PathBuf,
    /// Whether any track came from the folder before this scan.
    possible: bool,
    /// Tracks already relinked by this scan (a vanished track is taken by one file).
    claimed: Mutex<HashSet<String>>,
}

/// A part of a scan's work, in the order the walk finds it: a new file to probe and store
/// (concurrently, [`CONCURRENCY`] at a time), or what the scan's own loop takes as it is.
enum Step {
    New(Candidate),
    Ready(Outcome),
}

/// What the scan's loop takes, in the order the walk found it.
enum Outcome {
    /// A walked batch's counts.
    Walked(WalkTally),
    /// A new file, stored, for the next insert batch.
    Prepared(Prepared),
    /// A known file to read again: changed, or back after it went missing (`true`). Read
    /// by the loop itself, between the imports: a re-read writes, and the imports in flight
    /// pause while it does (none holds a write).
    Reread(Changed, bool),
    /// A file that could not be imported.
    Failed { path: String, message: String },
    /// A database error: the scan stops.
    Fatal(Error),
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
    type Service = Ingest;

    /// One scan at a time.
    fn dedup_key(_payload: &ScanPayload) -> Option<String> {
        Some("scan:local_folder".into())
    }

    async fn run(
        ingest: &Ingest,
        context: &JobContext,
        _payload: ScanPayload,
    ) -> Result<Value, JobError> {
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
        let result = ingest
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
    ///
    /// The walk streams: it sends the files it finds in batches of [`WALK_BATCH`] and waits
    /// while the import catches up, so a scan holds a few batches of the folder at a time,
    /// whatever its size. Each batch is sorted against the database (new, unchanged, changed,
    /// back), new files are probed, stored and inserted, and a new file whose content is a
    /// known track's whose file is no longer in the folder is that track, moved. Once the walk
    /// is done, the known files no longer in the folder are marked missing, read from the
    /// database a page at a time.
    pub async fn scan_local_folder(
        &self,
        mut progress: impl FnMut(&ScanReport) + Send,
    ) -> Result<ScanReport> {
        let root = self.import_root()?;
        let root = root
            .canonicalize()
            .map_err(|error| Error::io(&root, error))?;
        let mut report = ScanReport::default();
        // With no track from the folder yet (a first import), no new file can be a moved one.
        let known_before: Option<String> = self
            .db
            .sql("SELECT id FROM tracks WHERE source = 'local_folder' LIMIT 1")
            .fetch_scalar_optional(self.db.pool())
            .await?;
        let moves = Arc::new(Moves {
            root: root.clone(),
            possible: known_before.is_some(),
            claimed: Mutex::new(HashSet::new()),
        });

        let (sender, receiver) = tokio::sync::mpsc::channel::<WalkBatch>(2);
        let walk_root = root.clone();
        let walking = tokio::task::spawn_blocking(move || walk(&walk_root, &sender));
        let batches = stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|batch| (batch, receiver))
        });
        // (The stages own their handles to the library: a future borrowing `self` in a
        // closure is not `Send` for every lifetime, as a job's future must be.)
        let sorter = self.clone();
        let steps = batches
            .then(move |batch| {
                let sorter = sorter.clone();
                async move {
                    match sorter.classify(batch).await {
                        Ok(steps) => steps,
                        Err(error) => vec![Step::Ready(Outcome::Fatal(error))],
                    }
                }
            })
            .flat_map(stream::iter);
        let importer = self.clone();
        let mut outcomes = std::pin::pin!(steps
            .map(move |step| {
                let importer = importer.clone();
                let moves = moves.clone();
                async move { importer.take_step(step, &moves).await }
            })
            .buffer_unordered(CONCURRENCY));
        let mut audio_files = 0;
        let mut batch: Vec<Prepared> = Vec::with_capacity(BATCH);
        // When the batch's first file was stored.
        let mut batch_started: Option<tokio::time::Instant> = None;
        loop {
            let deadline = batch_started.map(|started| started + BATCH_WINDOW);
            let outcome = tokio::select! {
                outcome = outcomes.next() => outcome,
                () = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => {
                    self.commit_batch(std::mem::take(&mut batch), &mut report).await?;
                    batch_started = None;
                    progress(&report);
                    continue;
                }
            };
            let Some(outcome) = outcome else {
                break;
            };
            match outcome {
                Outcome::Walked(tally) => {
                    report.seen += tally.seen;
                    report.skipped += tally.skipped;
                    report.already_imported += tally.already_imported;
                    audio_files += tally.audio_files;
                    for error in tally.errors {
                        report.fail(&error.path, error.error);
                    }
                    progress(&report);
                }
                Outcome::Prepared(ready) => {
                    batch_started.get_or_insert_with(tokio::time::Instant::now);
                    batch.push(ready);
                }
                Outcome::Reread(change, back) => {
                    let path = change.candidate.relative.clone();
                    let id = change.id.to_string();
                    match self.reread_changed(change).await {
                        // (The re-read made it available already, unless a concurrent
                        // change wrote the row in between.)
                        Ok(()) if back => {
                            self.set_availability(&[id], Availability::Available)
                                .await?;
                            report.restored += 1;
                        }
                        Ok(()) => report.changed += 1,
                        Err(message) => report.fail(&path, message),
                    }
                }
                Outcome::Failed { path, message } => report.fail(&path, message),
                Outcome::Fatal(error) => return Err(error),
            }
            if batch.len() >= BATCH {
                self.commit_batch(std::mem::take(&mut batch), &mut report)
                    .await?;
                batch_started = None;
                progress(&report);
            }
        }
        self.commit_batch(batch, &mut report).await?;
        walking.await.map_err(Error::task("folder walk"))?;

        // Known files that are not there any more. An empty folder while tracks are known
        // looks unmounted: then nothing is marked missing.
        if audio_files == 0 {
            let gone: i64 = self
                .db
                .sql(
                    "SELECT COUNT(*) FROM tracks
                     WHERE source = 'local_folder' AND availability <> 'missing'",
                )
                .fetch_scalar(self.db.pool())
                .await?;
            if gone > 0 {
                report.warning = Some(format!(
                    "the folder has no audio file while {gone} tracks were imported from it: is it unmounted? No track was marked missing"
                ));
            }
        } else {
            report.missing += self.mark_absent(&root).await?;
        }
        report.done = true;
        progress(&report);
        Ok(report)
    }

    /// Sorts a batch of walked files against what the database knows of them: new files,
    /// changed or returning ones to read again, and the counts of the rest.
    async fn classify(&self, batch: WalkBatch) -> Result<Vec<Step>> {
        let WalkBatch {
            files,
            seen,
            skipped,
            errors,
        } = batch;
        let mut known: HashMap<String, KnownFile> = HashMap::new();
        if !files.is_empty() {
            let mut sql = self.db.sql(
                "SELECT id, source_id, size_bytes, source_mtime, availability FROM tracks
                 WHERE source = 'local_folder' AND source_id",
            );
            sql.push_in(files.iter().map(|file| file.relative.as_str()));
            let rows: Vec<KnownFile> = sql.fetch_all(self.db.pool()).await?;
            known.extend(rows.into_iter().map(|row| (row.source_id.clone(), row)));
        }
        let mut tally = WalkTally {
            seen,
            skipped,
            already_imported: 0,
            audio_files: files.len() as u64,
            errors,
        };
        let mut steps = Vec::with_capacity(files.len() + 1);
        for candidate in files {
            let Some(known) = known.get(&candidate.relative) else {
                steps.push(Step::New(candidate));
                continue;
            };
            let same_size = known.size_bytes == Some(candidate.size as i64);
            // Tracks imported before modification times were kept have none: only a size
            // change tells then.
            let same_time = known.source_mtime.is_none() || known.source_mtime == candidate.mtime;
            // A missing file that is back is read again: its stored copy may be gone too,
            // when cleanup marked it, and it is available again only once stored.
            let back = known.availability == "missing";
            if same_size && same_time && !back {
                tally.skipped += 1;
                tally.already_imported += 1;
            } else {
                let id = TrackId::from_db(known.id.clone());
                steps.push(Step::Ready(Outcome::Reread(
                    Changed { id, candidate },
                    back,
                )));
            }
        }
        steps.insert(0, Step::Ready(Outcome::Walked(tally)));
        Ok(steps)
    }

    /// Carries out one step of a scan.
    async fn take_step(&self, step: Step, moves: &Moves) -> Outcome {
        match step {
            Step::Ready(outcome) => outcome,
            Step::New(candidate) => {
                let path = candidate.relative.clone();
                match self.prepare(candidate, moves).await {
                    Ok(ready) => Outcome::Prepared(ready),
                    Err(message) => Outcome::Failed { path, message },
                }
            }
        }
    }

    /// Marks missing the available local-folder tracks whose file is no longer in the folder
    /// (read a page at a time); returns how many.
    async fn mark_absent(&self, root: &Path) -> Result<u64> {
        const PAGE: i64 = 1000;
        let mut after = String::new();
        let mut marked = 0;
        loop {
            let mut sql = self.db.sql(
                "SELECT id, source_id FROM tracks
                 WHERE source = 'local_folder' AND availability <> 'missing' AND source_id > ",
            );
            sql.push_bind(after.as_str())
                .push(" ORDER BY source_id LIMIT ")
                .push_bind(PAGE);
            let rows: Vec<(String, String)> = sql.fetch_all(self.db.pool()).await?;
            let Some((_, last)) = rows.last() else {
                break;
            };
            after = last.clone();
            let full = rows.len() as i64 == PAGE;
            let root = root.to_path_buf();
            let gone: Vec<String> = tokio::task::spawn_blocking(move || {
                rows.into_iter()
                    .filter(|(_, path)| !in_folder(&root, path))
                    .map(|(id, _)| id)
                    .collect()
            })
            .await
            .map_err(Error::task("folder check"))?;
            marked += self.set_availability(&gone, Availability::Missing).await?;
            if !full {
                break;
            }
        }
        Ok(marked)
    }

    /// The known track whose content is `sha256` and whose file is no longer in the folder,
    /// if there is one no other file of this scan has taken: the file at hand is that track,
    /// moved.
    async fn vanished_track(
        &self,
        sha256: &str,
        moves: &Moves,
    ) -> std::result::Result<Option<TrackId>, String> {
        if !moves.possible {
            return Ok(None);
        }
        let rows: Vec<(String, String)> = self
            .db
            .sql(
                "SELECT id, source_id FROM tracks
                 WHERE content_sha256 = $1 AND source = 'local_folder' ORDER BY id",
            )
            .bind(sha256)
            .fetch_all(self.db.pool())
            .await
            .map_err(|error| crate::error_chain(&error))?;
        for (id, path) in rows {
            if in_folder(&moves.root, &path) {
                continue;
            }
            if moves
                .claimed
                .lock()
                .expect("not poisoned")
                .insert(id.clone())
            {
                return Ok(Some(TrackId::from_db(id)));
            }
        }
        Ok(None)
    }

    /// Stores a file's audio at `key` (atomically): the bytes already read, or the open
    /// file. An error is a per-file message for the report.
    async fn store_audio(&self, key: &str, content: Content) -> std::result::Result<(), String> {
        let blobs = self.storage.blobs();
        let stored = match content {
            Content::Bytes(bytes) => blobs.put_bytes(key, bytes).await,
            Content::File(opened, _) => blobs.put_file(key, opened.path()).await.map(drop),
        };
        stored.map_err(|error| format!("could not store the file: {}", crate::error_chain(&error)))
    }

    /// Sets the availability of local-folder tracks; returns how many changed.
    async fn set_availability(&self, ids: &[String], to: Availability) -> Result<u64> {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let only = writes::Only {
            source: Some(Source::LocalFolder),
            from: None,
        };
        writes::set_availability(&self.db, &ids, to, only).await
    }

    /// Reads a changed file again: its blob is replaced (atomically), the track refreshed
    /// from it (tags win, a manual edit is kept), its renditions dropped (they were made from
    /// the old audio). Errors are per-file messages for the report.
    async fn reread_changed(&self, change: Changed) -> std::result::Result<(), String> {
        let Changed { id, candidate } = change;
        let (root, relative) = (candidate.root.clone(), candidate.relative.clone());
        let (facts, sha256, content) =
            tokio::task::spawn_blocking(move || read_and_probe(&root, &relative))
                .await
                .map_err(|error| format!("probe task failed: {error}"))??;
        let current = self
            .catalog
            .get_track(&id)
            .await
            .map_err(|error| crate::error_chain(&error))?;
        // A new key: the track's row keeps pointing at its old bytes until it is refreshed to
        // the new ones, never at bytes that are not its own.
        let key = layout::audio_revision(&id, facts.format);
        let size = content.size();
        self.store_audio(&key, content).await?;
        let file = crate::catalog::FileFacts {
            size_bytes: size as i64,
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
        writes::point_at(&self.db, &mut tx, id, key, facts).await?;
        let keys = self.media.delete_renditions(&mut tx, id).await?;
        tx.commit().await?;
        Ok(keys)
    }

    /// Probes and stores one file, unless it is a vanished track's file under a new path.
    /// Errors are per-file messages for the report.
    async fn prepare(
        &self,
        candidate: Candidate,
        moves: &Moves,
    ) -> std::result::Result<Prepared, String> {
        let (root, relative) = (candidate.root.clone(), candidate.relative.clone());
        let (facts, sha256, content) =
            tokio::task::spawn_blocking(move || read_and_probe(&root, &relative))
                .await
                .map_err(|error| format!("probe task failed: {error}"))??;
        if let Some(id) = self.vanished_track(&sha256, moves).await? {
            return Ok(Prepared::Moved {
                id,
                relative: candidate.relative,
                mtime: candidate.mtime,
            });
        }
        let track_id = TrackId::new();
        let key = layout::audio(&track_id, facts.format);
        let size = content.size();
        self.store_audio(&key, content).await?;
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
            size_bytes: size as i64,
            sha256,
            mtime: candidate.mtime,
            added_by: None,
            fallback_title: title_from_file_name(&file_name),
        })))
    }

    /// Inserts a batch in one transaction, then enqueues its enrichment. When the batch
    /// fails for a reason of one of its files (a row the database refuses), its files are
    /// inserted one at a time, each in its own transaction, and only the bad one fails (its
    /// blob deleted): one bad file never stops a batch, on this run or the next. A database
    /// out of reach or out of space fails the scan, the batch's blobs deleted.
    async fn commit_batch(&self, batch: Vec<Prepared>, report: &mut ScanReport) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
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
        let (inserted, relinked) = match self.insert_batch(&moved, &batch).await {
            Ok(inserted) => (
                inserted.into_iter().map(Some).collect::<Vec<_>>(),
                moved.len() as u64,
            ),
            Err(error) if is_fatal(&error) => {
                let all: Vec<String> = batch.into_iter().map(|track| track.storage_uri).collect();
                self.storage.delete_unreferenced(all).await;
                return Err(error);
            }
            Err(error) => {
                tracing::warn!(error = %crate::error_chain(&error), files = batch.len() + moved.len(),
                    "a batch of the import failed; importing its files one at a time");
                let mut relinked = 0;
                for one in &moved {
                    match self.insert_batch(std::slice::from_ref(one), &[]).await {
                        Ok(_) => relinked += 1,
                        Err(error) if is_fatal(&error) => {
                            let all: Vec<String> =
                                batch.into_iter().map(|track| track.storage_uri).collect();
                            self.storage.delete_unreferenced(all).await;
                            return Err(error);
                        }
                        Err(error) => report.fail(&one.1, crate::error_chain(&error)),
                    }
                }
                let mut inserted = Vec::with_capacity(batch.len());
                for (at, track) in batch.iter().enumerate() {
                    match self.insert_batch(&[], std::slice::from_ref(track)).await {
                        Ok(one) => inserted.push(Some(one[0])),
                        Err(error) if is_fatal(&error) => {
                            let rest: Vec<String> = batch[at..]
                                .iter()
                                .map(|track| track.storage_uri.clone())
                                .collect();
                            self.storage.delete_unreferenced(rest).await;
                            return Err(error);
                        }
                        Err(error) => {
                            report.fail(
                                &track.source_id,
                                format!("could not be added: {}", crate::error_chain(&error)),
                            );
                            self.storage
                                .delete_unreferenced([track.storage_uri.clone()])
                                .await;
                            inserted.push(None);
                        }
                    }
                }
                (inserted, relinked)
            }
        };
        let mut imported = Vec::new();
        let mut duplicates = Vec::new();
        for (track, inserted) in batch.iter().zip(inserted) {
            match inserted {
                Some(true) => imported.push(track.id.clone()),
                // Imported meanwhile by a concurrent scan: drop this copy.
                Some(false) => duplicates.push(track.storage_uri.clone()),
                // Failed, counted, its blob deleted.
                None => {}
            }
        }
        report.relinked += relinked;
        report.imported += imported.len() as u64;
        report.skipped += duplicates.len() as u64;
        report.already_imported += duplicates.len() as u64;
        self.storage.delete_unreferenced(duplicates).await;
        report.enrichment_jobs_queued += imported.len() as u64;
        self.enqueue_enrichment(imported, None).await;
        Ok(())
    }

    /// Relinks `moved` and inserts `batch` in one transaction; whether each was inserted
    /// (false: a concurrent scan had it).
    async fn insert_batch(
        &self,
        moved: &[(TrackId, String, Option<i64>)],
        batch: &[NewTrack],
    ) -> Result<Vec<bool>> {
        let db = &self.db;
        let mut tx = db.begin().await?;
        for (id, relative, mtime) in moved {
            writes::relink(db, &mut tx, id, relative, *mtime).await?;
        }
        let mut resolver = Resolver::new(db.clone());
        let mut inserted = Vec::with_capacity(batch.len());
        for track in batch {
            inserted.push(insert_track(&mut tx, db, &mut resolver, track).await?);
        }
        tx.commit().await?;
        Ok(inserted)
    }
}

/// Whether a failed write is the database's trouble (out of reach, out of space), not a
/// file's: then the scan stops.
fn is_fatal(error: &Error) -> bool {
    matches!(
        error.kind(),
        crate::ErrorKind::Unavailable | crate::ErrorKind::InsufficientStorage
    )
}

/// What a file read for import holds: its bytes (small files), or the open file and its
/// size.
enum Content {
    Bytes(bytes::Bytes),
    File(crate::storage::FolderFile, u64),
}

impl Content {
    fn size(&self) -> u64 {
        match self {
            Content::Bytes(bytes) => bytes.len() as u64,
            Content::File(_, size) => *size,
        }
    }
}

/// Opens a file of the folder once ([`crate::storage::open_inside`]: inside it, a regular
/// file) and reads what is opened: hash, probe, and for small files the bytes to store; a
/// large file stays open, to be stored from the same open file.
fn read_and_probe(
    root: &Path,
    relative: &str,
) -> std::result::Result<(probe::AudioFacts, String, Content), String> {
    use std::io::Read;
    let opened = crate::storage::open_inside(root, Path::new(relative))
        .map_err(|error| format!("cannot read the file: {error}"))?;
    let size = opened
        .file()
        .metadata()
        .map_err(|error| format!("cannot read the file: {error}"))?
        .len();
    if size == 0 {
        return Err("the file is empty".into());
    }
    if size <= IN_MEMORY_LIMIT {
        let mut bytes = Vec::with_capacity(size as usize);
        opened
            .file()
            .take(IN_MEMORY_LIMIT)
            .read_to_end(&mut bytes)
            .map_err(|error| format!("cannot read the file: {error}"))?;
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let bytes = bytes::Bytes::from(bytes);
        let facts = probe::probe_shared(&bytes, relative)?;
        Ok((facts, sha256, Content::Bytes(bytes)))
    } else {
        let sha256 = crate::storage::sha256_file(opened.path())
            .map_err(|error| format!("cannot read the file: {}", crate::error_chain(&error)))?;
        let facts = probe::probe_file(opened.path(), relative)?;
        Ok((facts, sha256, Content::File(opened, size)))
    }
}

/// Files the walk sends at once (of any kind: the audio files among them are fewer). A scan
/// holds a few batches at most: one being walked, two waiting, one being sorted and imported.
const WALK_BATCH: usize = 512;

/// A batch of the walk: audio files with their size and modification time, and the counts of
/// the rest.
#[derive(Debug, Default)]
struct WalkBatch {
    files: Vec<Candidate>,
    seen: u64,
    skipped: u64,
    errors: Vec<ScanFileError>,
}

/// A walked batch's counts, once sorted against the database.
struct WalkTally {
    seen: u64,
    skipped: u64,
    already_imported: u64,
    audio_files: u64,
    errors: Vec<ScanFileError>,
}

/// Walks `root` (canonical), sending every audio file with its size and modification time,
/// and the counts of the rest, in batches; stops early when nobody listens any more.
fn walk(root: &Path, sender: &tokio::sync::mpsc::Sender<WalkBatch>) {
    let mut batch = WalkBatch::default();
    let mut found: Vec<(PathBuf, String)> = Vec::with_capacity(WALK_BATCH);
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    // Hidden folders (".git", ".Trash") are not music.
    let walker = walker.filter_entry(|entry| {
        entry.depth() == 0 || !(entry.file_type().is_dir() && is_hidden(entry.file_name()))
    });
    for entry in walker {
        if batch.seen as usize + batch.errors.len() >= WALK_BATCH {
            stat_all(root, &mut found, &mut batch);
            if sender.blocking_send(std::mem::take(&mut batch)).is_err() {
                return;
            }
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error
                    .path()
                    .and_then(|path| path.strip_prefix(root).ok())
                    .map(|path| path.to_string_lossy().into_owned())
                    .unwrap_or_default();
                batch.errors.push(ScanFileError {
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
        batch.seen += 1;
        let Ok(relative_path) = entry.path().strip_prefix(root) else {
            batch.skipped += 1;
            continue;
        };
        let Some(relative) = relative_path.to_str().map(str::to_string) else {
            batch.errors.push(ScanFileError {
                path: relative_path.to_string_lossy().into_owned(),
                error: "the file name is not valid UTF-8".into(),
            });
            continue;
        };
        if is_hidden(entry.file_name()) || !probe::has_audio_extension(entry.path()) {
            batch.skipped += 1;
            continue;
        }
        // A symlink is imported only when it resolves to a file inside the folder.
        let absolute = if file_type.is_symlink() {
            match entry.path().canonicalize() {
                Ok(target) if target.starts_with(root) && target.is_file() => target,
                _ => {
                    batch.skipped += 1;
                    continue;
                }
            }
        } else {
            entry.path().to_path_buf()
        };
        found.push((absolute, relative));
    }
    stat_all(root, &mut found, &mut batch);
    let _ = sender.blocking_send(batch);
}

/// Stats the found files into `batch`, on every core: on a warm cache a stat costs more than
/// reading the directories, and a rescan stats every file to see what changed.
fn stat_all(root: &Path, found: &mut Vec<(PathBuf, String)>, batch: &mut WalkBatch) {
    let root: Arc<Path> = Arc::from(root);
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = found.len().div_ceil(threads).max(1);
    let stats: Vec<Vec<Result<Candidate, ScanFileError>>> = std::thread::scope(|scope| {
        let workers: Vec<_> = found
            .chunks(chunk)
            .map(|files| {
                let root = root.clone();
                scope.spawn(move || files.iter().map(|found| stat(&root, found)).collect())
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or_default())
            .collect()
    });
    found.clear();
    for result in stats.into_iter().flatten() {
        match result {
            Ok(candidate) => batch.files.push(candidate),
            Err(error) => batch.errors.push(error),
        }
    }
}

/// A found file with its size and modification time.
fn stat(
    root: &Arc<Path>,
    (absolute, relative): &(PathBuf, String),
) -> Result<Candidate, ScanFileError> {
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
        root: root.clone(),
        relative: relative.clone(),
        size: metadata.len(),
        mtime,
    })
}

/// Whether a walk of `root` would find an audio file at `relative`: no hidden part on the
/// way, and a file there (a symlink's target inside the folder).
fn in_folder(root: &Path, relative: &str) -> bool {
    let relative = Path::new(relative);
    let plain = relative.components().all(|part| match part {
        std::path::Component::Normal(name) => !is_hidden(name),
        _ => false,
    });
    if !plain || !probe::has_audio_extension(relative) {
        return false;
    }
    let path = root.join(relative);
    match std::fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.file_type().is_symlink() => path
            .canonicalize()
            .is_ok_and(|target| target.starts_with(root) && target.is_file()),
        Ok(metadata) => metadata.is_file(),
        Err(_) => false,
    }
}

fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .map(|name| name.starts_with('.'))
        .unwrap_or(false)
}
