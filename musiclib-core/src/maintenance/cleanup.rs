//! The `cleanup_storage` job (`POST /storage/cleanup`): reconciles storage with the rows that
//! reference it, namespace by namespace of [`crate::storage::layout`].
//!
//! 1. Every referencing column is read, then every namespace listed (in that order: a blob
//!    is written before its row, so a row read first has its blob in the listing). A listing
//!    that fails stops the job before anything is deleted.
//! 2. It refuses to delete when the store looks unavailable: when a large share of the blobs
//!    rows reference are not listed (an unmounted disk, an emptied folder, a wrong bucket or
//!    prefix). Then nothing changes and the job's error says why.
//! 3. Otherwise: blobs no row references and older than `Config::cleanup_grace` are deleted
//!    (originals, covers, thumbnails outside the thumbnail cache, Opus and HLS renditions,
//!    playlist covers, abandoned staging files older than a day; a younger blob may belong to
//!    a write whose row is not committed yet), tracks whose original is gone are marked
//!    `missing` (never deleted), and
//!    cover sizes unknown to the statistics are filled in. A dry run reports the same without
//!    changing anything. A delete that fails stops the job: what is left stays for the next run.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Maintenance;
use crate::auth::Caller;
use crate::catalog::writes;
use crate::domain::Availability;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::storage::layout::{self, Namespace};
use crate::{JobId, Result};

/// Below this many referenced blobs the share rule is not applied alone: at least this many
/// must be gone too (a small library with one lost file is not an outage).
const MIN_GONE_FOR_REFUSAL: usize = 3;
/// The share of referenced blobs not found in storage above which cleanup refuses.
const MAX_GONE_SHARE: f64 = 0.5;
/// Staging files older than this are abandoned writes.
const STAGING_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How many keys a report names per namespace.
const SAMPLE_KEYS: usize = 20;

/// The `cleanup_storage` job.
#[derive(Debug)]
pub struct CleanupStorage;

/// A cleanup's input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupPayload {
    /// Report only; change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// What a cleanup found and did (its result).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CleanupReport {
    /// Whether it only reported.
    pub dry_run: bool,
    /// Blobs listed, per namespace.
    pub listed: HashMap<&'static str, u64>,
    /// Blobs younger than the grace period, per namespace: not judged this time (a write in
    /// progress stores its blob before its row).
    pub young: HashMap<&'static str, u64>,
    /// Blobs no row references, per namespace (deleted unless a dry run).
    pub orphans: HashMap<&'static str, u64>,
    /// Their bytes.
    pub orphan_bytes: u64,
    /// Some of their keys, per namespace.
    pub orphan_keys: HashMap<&'static str, Vec<String>>,
    /// Blobs deleted.
    pub deleted: u64,
    /// Tracks whose original is gone (marked `missing` unless a dry run).
    pub missing_tracks: u64,
    /// Cover sizes filled in for the statistics.
    pub cover_sizes_filled: u64,
}

impl JobKind for CleanupStorage {
    const NAME: &'static str = "cleanup_storage";
    const POOL: Pool = Pool::General;
    type Payload = CleanupPayload;
    type Service = Maintenance;

    /// One cleanup at a time (a dry run and a real one are different jobs).
    fn dedup_key(payload: &CleanupPayload) -> Option<String> {
        Some(format!("cleanup_storage:{}", payload.dry_run))
    }

    async fn run(
        maintenance: &Maintenance,
        context: &JobContext,
        payload: CleanupPayload,
    ) -> Result<Value, JobError> {
        let report = cleanup(maintenance, context, payload.dry_run).await?;
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}

impl Maintenance {
    /// Admin only: starts a storage cleanup (job `cleanup_storage`), or a dry run of one.
    pub async fn start_cleanup(&self, caller: &Caller, dry_run: bool) -> Result<JobId> {
        caller.require_admin()?;
        self.jobs
            .enqueue::<CleanupStorage>(&CleanupPayload { dry_run }, Some(&caller.user.id))
            .await
    }
}

/// What rows reference.
struct Referenced {
    /// `tracks.storage_uri` → track id.
    audio: HashMap<String, String>,
    /// Tracks already marked `missing`: their originals are wanted (should they come back)
    /// but not counted again when judging whether storage looks unavailable.
    already_missing: HashSet<String>,
    /// `albums.cover_uri` → album id.
    covers: HashMap<String, String>,
    /// `playlists.cover_uri`.
    playlist_covers: HashSet<String>,
    /// Opus rendition keys.
    opus: HashSet<String>,
    /// HLS build prefixes (`renditions/{track}/hls/{build}/`).
    hls: HashSet<String>,
    /// Cached thumbnails (`thumbnails.storage_uri`).
    thumbnails: HashSet<String>,
    /// Downloaded episodes and channel images.
    podcasts: HashSet<String>,
    /// `users.avatar_uri`.
    avatars: HashSet<String>,
}

async fn referenced(maintenance: &Maintenance) -> Result<Referenced> {
    let db = &maintenance.db;
    let pool = db.pool();
    let audio: Vec<(String, String, String)> = db
        .sql("SELECT storage_uri, id, availability FROM tracks WHERE storage_uri <> ''")
        .fetch_all(pool)
        .await?;
    let already_missing = audio
        .iter()
        .filter(|(_, _, availability)| availability == "missing")
        .map(|(key, _, _)| key.clone())
        .collect();
    let audio = audio.into_iter().map(|(key, id, _)| (key, id)).collect();
    let covers: Vec<(String, String)> = db
        .sql("SELECT cover_uri, id FROM albums WHERE cover_uri IS NOT NULL")
        .fetch_all(pool)
        .await?;
    let playlist_covers: Vec<String> = db
        .sql("SELECT cover_uri FROM playlists WHERE cover_uri IS NOT NULL")
        .fetch_scalars(pool)
        .await?;
    let thumbnails: Vec<String> = db
        .sql("SELECT storage_uri FROM thumbnails")
        .fetch_scalars(pool)
        .await?;
    let mut podcasts: Vec<String> = db
        .sql("SELECT storage_uri FROM podcast_episodes WHERE storage_uri IS NOT NULL")
        .fetch_scalars(pool)
        .await?;
    let images: Vec<String> = db
        .sql("SELECT image_uri FROM podcast_channels WHERE image_uri IS NOT NULL")
        .fetch_scalars(pool)
        .await?;
    podcasts.extend(images);
    let avatars: Vec<String> = db
        .sql("SELECT avatar_uri FROM users WHERE avatar_uri IS NOT NULL")
        .fetch_scalars(pool)
        .await?;
    let renditions: Vec<(String, String)> = db
        .sql("SELECT kind, storage_uri FROM renditions")
        .fetch_all(pool)
        .await?;
    let mut opus = HashSet::new();
    let mut hls = HashSet::new();
    for (kind, key) in renditions {
        if kind == "hls" {
            // The row names the build's playlist or its prefix: keep the prefix.
            let prefix = match key.rfind('/') {
                Some(slash) => key[..=slash].to_string(),
                None => key,
            };
            hls.insert(prefix);
        } else {
            opus.insert(key);
        }
    }
    Ok(Referenced {
        audio,
        already_missing,
        covers: covers.into_iter().collect(),
        playlist_covers: playlist_covers.into_iter().collect(),
        opus,
        hls,
        thumbnails: thumbnails.into_iter().collect(),
        podcasts: podcasts.into_iter().collect(),
        avatars: avatars.into_iter().collect(),
    })
}

/// Whether a listed blob is wanted by a row.
fn wanted(namespace: Namespace, key: &str, refs: &Referenced) -> bool {
    match namespace {
        Namespace::Audio => refs.audio.contains_key(key),
        Namespace::Covers => refs.covers.contains_key(key),
        // A thumbnail outside the cache's rows (made before it had any, or left by a crash
        // between the blob and its row) is not counted by its bound: it goes.
        Namespace::Thumbnails => refs.thumbnails.contains(key),
        Namespace::PlaylistCovers => refs.playlist_covers.contains(key),
        Namespace::OpusRenditions => refs.opus.contains(key),
        Namespace::HlsRenditions => refs
            .hls
            .iter()
            .any(|prefix| key.starts_with(prefix.as_str())),
        Namespace::Podcasts => refs.podcasts.contains(key),
        Namespace::Avatars => refs.avatars.contains(key),
        Namespace::Staging => true,
    }
}

async fn cleanup(
    maintenance: &Maintenance,
    context: &JobContext,
    dry_run: bool,
) -> Result<CleanupReport, JobError> {
    let storage = &maintenance.storage;
    let blobs = storage.blobs();
    let mut report = CleanupReport {
        dry_run,
        ..Default::default()
    };
    // 1. Read the references, then list everything (a failure stops here, before any
    // change).
    let refs = referenced(maintenance).await?;
    let mut listed = Vec::new();
    for prefix in ["audio/", "covers/", "playlist-covers/", "renditions/"] {
        let blobs_under = blobs.list_meta(prefix).await.map_err(|error| {
            JobError::permanent(format!(
                "refused: storage cannot be listed ({}); nothing was deleted",
                crate::error_chain(&error)
            ))
        })?;
        listed.extend(blobs_under);
    }
    let present: HashSet<&str> = listed.iter().map(|blob| blob.key.as_str()).collect();

    // 2. Refuse when the store looks unavailable. Tracks already marked missing are not
    // counted: one lost disk must not make every later cleanup refuse.
    let referenced_total = refs.audio.len() - refs.already_missing.len()
        + refs.covers.len()
        + refs.playlist_covers.len()
        + refs.opus.len();
    let gone_audio: Vec<&String> = refs
        .audio
        .keys()
        .filter(|key| !present.contains(key.as_str()) && !refs.already_missing.contains(*key))
        .collect();
    let gone = gone_audio.len()
        + refs
            .covers
            .keys()
            .filter(|key| !present.contains(key.as_str()))
            .count()
        + refs
            .playlist_covers
            .iter()
            .filter(|key| !present.contains(key.as_str()))
            .count()
        + refs
            .opus
            .iter()
            .filter(|key| !present.contains(key.as_str()))
            .count();
    let all_gone = gone > 0 && gone == referenced_total;
    let most_gone =
        gone >= MIN_GONE_FOR_REFUSAL && gone as f64 > referenced_total as f64 * MAX_GONE_SHARE;
    if all_gone || most_gone {
        return Err(JobError::permanent(format!(
            "refused: {gone} of the {referenced_total} files the library references are not in storage \
             (an unmounted disk, an emptied folder, a wrong bucket?); nothing was deleted"
        )));
    }

    // 3. Orphans, namespace by namespace.
    let grace = maintenance.cleanup_grace;
    let now = std::time::SystemTime::now();
    let mut orphans = Vec::new();
    for blob in &listed {
        let Some(namespace) = layout::namespace_of(&blob.key) else {
            continue;
        };
        let name = namespace_name(namespace);
        *report.listed.entry(name).or_default() += 1;
        let young = now
            .duration_since(blob.modified)
            .map_or(true, |age| age < grace);
        if young {
            // Possibly a write whose row is not committed yet: left for a later run.
            *report.young.entry(name).or_default() += 1;
            continue;
        }
        if !wanted(namespace, &blob.key, &refs) {
            *report.orphans.entry(name).or_default() += 1;
            report.orphan_bytes += blob.size;
            let sample = report.orphan_keys.entry(name).or_default();
            if sample.len() < SAMPLE_KEYS {
                sample.push(blob.key.clone());
            }
            orphans.push(blob.key.clone());
        }
    }
    // Abandoned staging files (local storage).
    let stale_staging = stale_staging_files(maintenance);
    if !stale_staging.is_empty() {
        report.orphans.insert("staging", stale_staging.len() as u64);
        report.orphan_keys.insert(
            "staging",
            stale_staging
                .iter()
                .take(SAMPLE_KEYS)
                .map(|path| path.display().to_string())
                .collect(),
        );
    }
    report.missing_tracks = gone_audio.len() as u64;
    context
        .progress(&serde_json::to_value(&report).unwrap_or(Value::Null))
        .await;
    if dry_run {
        return Ok(report);
    }

    // 4. Changes: tracks whose audio is gone, cover sizes, then deletions.
    let missing_ids: Vec<&str> = gone_audio
        .iter()
        .filter_map(|key| refs.audio.get(*key).map(String::as_str))
        .collect();
    maintenance.mark_missing(&missing_ids).await?;
    let sizes: HashMap<&str, u64> = listed
        .iter()
        .map(|blob| (blob.key.as_str(), blob.size))
        .collect();
    report.cover_sizes_filled = maintenance.fill_cover_sizes(&sizes).await?;
    for key in orphans {
        // Re-checked just before deleting: a row written since the listing keeps its blob.
        if maintenance.is_referenced(&key).await? {
            continue;
        }
        blobs.delete_tree(&key).await.map_err(|error| {
            JobError::retry(format!(
                "stopped after {} deletions: {}",
                report.deleted,
                crate::error_chain(&error)
            ))
        })?;
        report.deleted += 1;
    }
    for path in stale_staging {
        if std::fs::remove_file(&path).is_ok() {
            report.deleted += 1;
        }
    }
    maintenance.remote.sweep_staging(None).await;
    Ok(report)
}

fn namespace_name(namespace: Namespace) -> &'static str {
    match namespace {
        Namespace::Audio => "originals",
        Namespace::Covers => "covers",
        Namespace::Thumbnails => "thumbnails",
        Namespace::OpusRenditions => "opus_renditions",
        Namespace::HlsRenditions => "hls_renditions",
        Namespace::PlaylistCovers => "playlist_covers",
        Namespace::Podcasts => "podcasts",
        Namespace::Avatars => "avatars",
        Namespace::Staging => "staging",
    }
}

/// Files in the local staging folders older than a day: writes that never finished. (The
/// folders of abandoned downloads are the remote sources' to sweep: `Remote::sweep_staging`.)
fn stale_staging_files(maintenance: &Maintenance) -> Vec<std::path::PathBuf> {
    let storage = &maintenance.storage;
    let mut folders = vec![storage.staging_dir().to_path_buf()];
    if let Some(root) = storage.local_root() {
        folders.push(root.join(".staging"));
    }
    let now = std::time::SystemTime::now();
    let mut stale = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .ok()
                .filter(|meta| meta.is_file())
                .and_then(|meta| meta.modified().ok())
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age > STAGING_MAX_AGE);
            if old {
                stale.push(entry.path());
            }
        }
    }
    stale
}

impl Maintenance {
    /// Marks tracks whose original is gone as `missing` (never deletes them).
    async fn mark_missing(&self, ids: &[&str]) -> Result<()> {
        let only = writes::Only {
            source: None,
            from: Some(Availability::Available),
        };
        writes::set_availability(&self.db, ids, Availability::Missing, only).await?;
        Ok(())
    }

    /// Fills in cover sizes the statistics do not know yet, from the listing.
    async fn fill_cover_sizes(&self, sizes: &HashMap<&str, u64>) -> Result<u64> {
        let mut filled = 0;
        for table in ["albums", "playlists"] {
            let unknown: Vec<(String, String)> = self
                .db
                .sql(&format!(
                    "SELECT id, cover_uri FROM {table} WHERE cover_uri IS NOT NULL AND cover_size_bytes IS NULL"
                ))
                .fetch_all(self.db.pool())
                .await?;
            for (id, key) in unknown {
                if let Some(size) = sizes.get(key.as_str()) {
                    filled += self
                        .db
                        .sql(&format!(
                            "UPDATE {table} SET cover_size_bytes = $2 WHERE id = $1 AND cover_uri = $3"
                        ))
                        .bind(id.as_str())
                        .bind(*size as i64)
                        .bind(key.as_str())
                        .execute(self.db.pool())
                        .await?;
                }
            }
        }
        Ok(filled)
    }

    /// Whether a row references `key` now (a last look before deleting it).
    async fn is_referenced(&self, key: &str) -> Result<bool> {
        let hls_prefix = key
            .find("/hls/")
            .and_then(|start| {
                let rest = &key[start + 5..];
                rest.find('/')
                    .map(|end| key[..start + 5 + end + 1].to_string())
            })
            .unwrap_or_default();
        let count: i64 = self
            .db
            .sql(
                "SELECT (SELECT COUNT(*) FROM tracks WHERE storage_uri = $1)
                      + (SELECT COUNT(*) FROM albums WHERE cover_uri = $1)
                      + (SELECT COUNT(*) FROM playlists WHERE cover_uri = $1)
                      + (SELECT COUNT(*) FROM renditions WHERE storage_uri = $1
                             OR ($2 <> '' AND storage_uri LIKE $2 || '%'))",
            )
            .bind(key)
            .bind(hls_prefix)
            .fetch_scalar(self.db.pool())
            .await?;
        Ok(count > 0)
    }
}
