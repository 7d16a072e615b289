//! The catalogue: tracks, albums and artists, read with filters, sorting and paging, searched,
//! edited by hand, and resolved (artists and albums are found or created by normalised name
//! for every ingest and enrichment path).
//!
//! - [`query`]: filters and sort keys of the lists.
//! - `tracks`, `albums`, `artists`: reads of each noun; `album_lists`: the album lists of the
//!   legacy interface (newest, most played, starred…); `genres`.
//! - `search`: the library search; `shelf`: the names it searches, kept in memory.
//! - `edit`: manual edits ([`TrackPatch`], [`TrackMetadata`]) and the rules they check.
//! - `refresh`: a track re-read from its file (reindex, rescan of a changed file).
//! - `resolve`: [`Resolver`]; `rows`: row structs and their conversion into domain types.
//!
//! Deleting a track crosses services (playlists, renditions, storage) and is
//! [`crate::Library::delete_track`]; the catalogue's part of it is `lock_for_change` and
//! `delete_locked_track`.

mod album_lists;
mod albums;
mod artists;
mod edit;
mod folders;
mod genres;
mod keyset;
pub mod query;
mod refresh;
mod resolve;
pub(crate) mod rows;
mod search;
mod shelf;
mod tracks;
pub(crate) mod writes;

pub use album_lists::AlbumList;
pub use edit::{TrackMetadata, TrackPatch};
pub use folders::{Folder, FolderEntry, FolderLibrary};
pub use genres::Genre;
pub use keyset::Chunk;
pub use query::{parse_sort, AlbumFilter, AlbumSortKey, Sort, TrackFilter, TrackSortKey};
pub use search::LibrarySearch;
pub use tracks::ItemKind;

pub(crate) use keyset::MARK_STEP;
pub(crate) use refresh::{FileFacts, StoredFile};
pub(crate) use resolve::Resolver;
pub(crate) use rows::{
    album_select, AlbumRow, ArtistRow, TrackRow, ARTIST_SELECT, TRACK_FIELDS, TRACK_SELECT,
};
pub(crate) use tracks::{insert_track, lock_track, NewTrack};

use crate::db::{Db, Tx};
use crate::storage::Storage;
use crate::{AlbumId, Result};

/// The catalogue service.
#[derive(Clone, Debug)]
pub struct Catalog {
    db: Db,
    storage: Storage,
    /// Track counts by filter, with the sync clock they were taken at (`tracks.rs`).
    counts: std::sync::Arc<crate::cache::VersionedCache<String, i64, i64>>,
    /// Track, album and artist names in memory, for the library search (`shelf.rs`).
    shelf: std::sync::Arc<shelf::ShelfCache>,
    /// Known places in the keyset-sorted lists, for pages by offset (`keyset.rs`).
    places: std::sync::Arc<keyset::Places>,
    /// Albums as pages list them, at the sync clock they were read at (`albums.rs`).
    album_rows: std::sync::Arc<crate::cache::VersionedRows<String, crate::domain::Album>>,
    /// The folders tree, at the sync clock it was read at (`folders.rs`).
    folders: std::sync::Arc<crate::cache::VersionedCache<(), i64, std::sync::Arc<folders::Tree>>>,
}

/// An album deleted because it was left without tracks, whose cover blobs go after commit.
#[derive(Debug)]
pub(crate) struct DroppedCover {
    album: AlbumId,
    key: String,
}

#[cfg(feature = "test-support")]
impl Catalog {
    /// Whether no background walk of a list (its places, its order) is running.
    pub fn places_settled(&self) -> bool {
        self.places.walks_settled()
    }
}

impl Catalog {
    pub(crate) fn new(db: Db, storage: Storage) -> Catalog {
        Catalog {
            db,
            storage,
            counts: std::sync::Arc::new(crate::cache::VersionedCache::new(
                "track_counts",
                std::time::Duration::from_secs(600),
                1024,
            )),
            shelf: Default::default(),
            places: Default::default(),
            // 10,000 albums at 100,000 tracks: about 6 MB.
            album_rows: std::sync::Arc::new(crate::cache::VersionedRows::new("album_rows", 20_000)),
            folders: std::sync::Arc::new(crate::cache::VersionedCache::new(
                "folders",
                std::time::Duration::from_secs(600),
                1,
            )),
        }
    }

    /// The blob store the tracks' audio is in.
    pub(crate) fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Deletes an album left with no tracks, and an artist left with no tracks or albums.
    /// Returns the deleted album's cover, whose blobs go after commit
    /// ([`Catalog::remove_dropped_cover`]).
    pub(crate) async fn drop_orphans(
        &self,
        tx: &mut Tx,
        album_id: Option<&str>,
        artist_id: Option<&str>,
    ) -> Result<Option<DroppedCover>> {
        let mut dropped = None;
        if let Some(album_id) = album_id {
            let deleted: Option<(String, Option<String>)> = self
                .db
                .sql(
                    "DELETE FROM albums WHERE id = $1
                       AND NOT EXISTS (SELECT 1 FROM tracks WHERE album_id = $1)
                     RETURNING id, cover_uri",
                )
                .bind(album_id)
                .fetch_optional(&mut **tx)
                .await?;
            dropped = deleted.and_then(|(id, cover)| {
                cover.map(|key| DroppedCover {
                    album: AlbumId::from_db(id),
                    key,
                })
            });
        }
        if let Some(artist_id) = artist_id {
            self.db
                .sql(
                    "DELETE FROM artists WHERE id = $1
                       AND NOT EXISTS (SELECT 1 FROM tracks WHERE artist_id = $1)
                       AND NOT EXISTS (SELECT 1 FROM albums WHERE artist_id = $1)",
                )
                .bind(artist_id)
                .execute(&mut **tx)
                .await?;
        }
        Ok(dropped)
    }

    /// Removes the cover and thumbnails of an album [`Catalog::drop_orphans`] deleted (after
    /// commit: its row is gone, so no row points at a missing blob).
    pub(crate) async fn remove_dropped_cover(&self, dropped: Option<DroppedCover>) {
        if let Some(dropped) = dropped {
            self.storage
                .delete_album_cover(&dropped.album, &dropped.key)
                .await;
        }
    }
}
