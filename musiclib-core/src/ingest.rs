//! Getting tracks into the library: uploads and local-folder imports.
//!
//! Both paths share one shape: probe the file (tags and audio check, off the async runtime),
//! write the blob atomically, insert the row and resolve artist and album in a transaction
//! ([`crate::catalog`]'s `insert_track`), and enqueue enrichment after the commit. A row is
//! inserted only after its blob exists, and a blob whose insert fails is deleted, so no row
//! ever points at a missing blob.
//!
//! What a file is (lofty for tags, symphonia to check the audio is whole) is [`crate::probe`].
//! - `upload`: `POST /tracks/upload`.
//! - `local_folder`: the `scan_local_folder` job ([`ScanLocalFolder`]).

mod local_folder;
mod upload;

use std::path::PathBuf;

pub use local_folder::{ScanFileError, ScanLocalFolder, ScanReport};
pub use upload::UploadOutcome;

use crate::catalog::Catalog;
use crate::db::Db;
use crate::domain::Source;
use crate::enrichment::{EnrichPayload, EnrichTrack};
use crate::jobs::{JobState, Jobs, Registry};
use crate::media::Media;
use crate::storage::Storage;
use crate::{Result, TrackId, UserId};

/// Files of a folder import up to this size are read into memory once (hash, probe and
/// store from one buffer); larger ones are streamed from disk. Uploads are always probed in
/// staging, never read whole.
pub(crate) const IN_MEMORY_LIMIT: u64 = 64 * 1024 * 1024;

/// The ingest service.
#[derive(Clone, Debug)]
pub struct Ingest {
    db: Db,
    storage: Storage,
    jobs: Jobs,
    catalog: Catalog,
    /// Renditions and cached audio facts of a re-read file go stale.
    media: Media,
    max_upload_bytes: u64,
    /// The folder `scan_local_folder` imports (`LOCAL_MEDIA_IMPORT_PATH`).
    import_path: Option<PathBuf>,
}

/// A configured ingest source.
#[derive(Debug, Clone)]
pub struct SourceInfo {
    /// Which source.
    pub source: Source,
    /// Whether it can be used on this server.
    pub enabled: bool,
    /// Whether it can be scanned.
    pub scannable: bool,
    /// The folder of `local_folder`.
    pub path: Option<PathBuf>,
    /// Whether it can be searched (`GET /sources/{name}/search`): the enabled remote ones.
    pub searchable: bool,
    /// For an enabled remote source: whether it answers now.
    pub available: Option<bool>,
    /// Why it is disabled or unavailable, or what it is.
    pub detail: Option<String>,
    /// Tracks from it.
    pub track_count: i64,
}

/// State of the local-folder import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanStatus {
    /// Whether an import is queued or running.
    pub scanning: bool,
    /// Files seen by the running import, or tracks in the library when idle.
    pub count: i64,
}

impl Ingest {
    /// Registers the folder import's job kind.
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<ScanLocalFolder>(self.clone(), config);
    }

    pub(crate) fn new(
        db: Db,
        storage: Storage,
        jobs: Jobs,
        catalog: Catalog,
        media: Media,
        max_upload_bytes: u64,
        import_path: Option<PathBuf>,
    ) -> Ingest {
        Ingest {
            db,
            storage,
            jobs,
            catalog,
            media,
            max_upload_bytes,
            import_path,
        }
    }

    /// The largest upload accepted, in bytes (`MAX_UPLOAD_BYTES`).
    pub fn max_upload_bytes(&self) -> u64 {
        self.max_upload_bytes
    }

    /// The ingest sources (upload, the local folder) and their track counts; the remote ones
    /// are [`crate::remote::Remote::sources`].
    pub async fn sources(&self) -> Result<Vec<SourceInfo>> {
        let counts = self.catalog.count_by_source().await?;
        let count = |source: Source| {
            counts
                .iter()
                .find(|(name, _)| name == source.as_str())
                .map(|(_, count)| *count)
                .unwrap_or(0)
        };
        let folder = self.import_path.clone();
        Ok(vec![
            SourceInfo {
                source: Source::Upload,
                enabled: true,
                scannable: false,
                path: None,
                searchable: false,
                available: None,
                detail: None,
                track_count: count(Source::Upload),
            },
            SourceInfo {
                source: Source::LocalFolder,
                enabled: folder.is_some(),
                scannable: true,
                detail: folder
                    .is_none()
                    .then(|| "LOCAL_MEDIA_IMPORT_PATH is not set".to_string()),
                path: folder,
                searchable: false,
                available: None,
                track_count: count(Source::LocalFolder),
            },
        ])
    }

    /// Whether the local-folder import is queued or running, and how far it is.
    pub async fn scan_status(&self) -> Result<ScanStatus> {
        if let Some(job) = self.jobs.latest::<ScanLocalFolder>().await? {
            if matches!(job.state, JobState::Queued | JobState::Running) {
                let seen = job
                    .progress
                    .as_ref()
                    .and_then(|progress| progress.get("seen")?.as_i64())
                    .unwrap_or(0);
                return Ok(ScanStatus {
                    scanning: true,
                    count: seen,
                });
            }
        }
        Ok(ScanStatus {
            scanning: false,
            count: self.catalog.track_count().await?,
        })
    }

    /// Enqueues enrichment of new tracks (best effort: the spec's rule).
    async fn enqueue_enrichment(&self, tracks: Vec<TrackId>, by: Option<&UserId>) {
        self.jobs
            .enqueue_best_effort::<EnrichTrack>(
                tracks
                    .into_iter()
                    .map(|track_id| EnrichPayload { track_id }),
                by,
            )
            .await;
    }
}

/// The file name without its extension, for tracks whose tags have no title.
pub(crate) fn title_from_file_name(name: &str) -> String {
    let stem = std::path::Path::new(name)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = unicode_normalization::UnicodeNormalization::nfc(stem.trim()).collect::<String>();
    if stem.is_empty() {
        "Untitled".to_string()
    } else {
        stem
    }
}
