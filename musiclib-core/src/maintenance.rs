//! Running the library: what it holds and what needs care (spec: "Storage, settings, admin").
//!
//! - `stats.rs`: library statistics (`GET /storage`): counts, footprint, playtime,
//!   breakdowns, top genres, the volume's capacity.
//! - `missing.rs`: tracks lacking metadata (`GET /storage/missing-metadata`).
//! - `duplicates.rs`: tracks that are the same recording (`GET /storage/duplicates`).
//! - `cleanup.rs`: the `cleanup_storage` job (orphan blobs, vanished originals, with a refusal
//!   when the store looks unavailable).
//! - `broken.rs`: the `check_files` job and the tracks whose stored file is broken
//!   (`GET /storage/broken`).

mod broken;
mod cleanup;
mod duplicates;
mod missing;
mod stats;

pub use broken::{BrokenTrack, CheckFiles, CheckReport, FileProblem};
pub use cleanup::{CleanupPayload, CleanupReport, CleanupStorage};
pub use duplicates::{DuplicateGroup, DuplicateReason, SAME_AUDIO};
pub use missing::{MetadataField, MissingMetadata};
pub use stats::{Breakdown, DiskUsage, Footprint, GenreCount, LibraryStats, TOP_GENRES};

use crate::catalog::Catalog;
use crate::db::Db;
use crate::jobs::{Jobs, Registry};
use crate::media::Media;
use crate::remote::Remote;
use crate::storage::Storage;

/// The maintenance service.
#[derive(Clone, Debug)]
pub struct Maintenance {
    db: Db,
    storage: Storage,
    catalog: Catalog,
    jobs: Jobs,
    /// The file check decodes with its transcoder.
    media: Media,
    /// Cleanup sweeps the remote sources' staging too.
    remote: Remote,
    /// How old an unreferenced blob must be before cleanup deletes it
    /// (`CLEANUP_GRACE_SECONDS`).
    cleanup_grace: std::time::Duration,
}

impl Maintenance {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        db: Db,
        storage: Storage,
        catalog: Catalog,
        jobs: Jobs,
        media: Media,
        remote: Remote,
        cleanup_grace: std::time::Duration,
    ) -> Maintenance {
        Maintenance {
            db,
            storage,
            catalog,
            jobs,
            media,
            remote,
            cleanup_grace,
        }
    }

    /// Registers the storage upkeep's job kinds.
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<CleanupStorage>(self.clone(), config);
        registry.kind::<CheckFiles>(self.clone(), config);
    }
}
