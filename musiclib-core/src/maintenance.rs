//! Running the library: what it holds and what needs care (spec: "Storage, settings, admin").
//!
//! - `stats.rs`: library statistics (`GET /storage`): counts, footprint, playtime,
//!   breakdowns, top genres, the volume's capacity.
//! - `missing.rs`: tracks lacking metadata (`GET /storage/missing-metadata`).

mod missing;
mod stats;

pub use missing::{MetadataField, MissingMetadata};
pub use stats::{Breakdown, DiskUsage, Footprint, GenreCount, LibraryStats, TOP_GENRES};

use crate::db::Db;
use crate::storage::Storage;

/// The maintenance service.
#[derive(Clone, Debug)]
pub struct Maintenance {
    db: Db,
    storage: Storage,
}

impl Maintenance {
    pub(crate) fn new(db: Db, storage: Storage) -> Maintenance {
        Maintenance { db, storage }
    }
}
