//! The search shelf: every track's search text, album title and artist name in memory, in
//! the order the library search returns them (shortest first), so any query, one letter
//! included, is one pass of a substring search over a few megabytes rather than a scan of
//! the tables.
//!
//! A shelf is read from the database the first time a search wants it and whenever the
//! tracks change, in the background: while it is being built, or when the tracks changed
//! since it was built, searches ask the database (`search.rs`), so a search never returns
//! an answer older than the data it was asked about. A track's change or deletion moves the
//! version a shelf is built at (the largest sync stamp of tracks and tombstones, two index
//! reads), which every replica sees. Albums and artists are created with the track that
//! names them, never renamed, and deleted when their last track goes, so the same version
//! covers them.
//!
//! The texts are kept in one buffer, each followed by a 0 byte, and the ids in another:
//! about 70 bytes a track (7 MB for 100,000 tracks, with their albums and artists).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use memchr::memmem;

use crate::db::Db;
use crate::Result;

/// The three shelves, as of one version of the tracks.
#[derive(Debug)]
pub(crate) struct Shelves {
    version: Version,
    /// Track search texts (title, artist, album), shortest title first.
    pub(crate) tracks: Shelf,
    /// Album title keys, shortest first.
    pub(crate) albums: Shelf,
    /// Artist name keys, shortest first.
    pub(crate) artists: Shelf,
}

/// Texts and ids, in search order.
#[derive(Debug, Default)]
pub(crate) struct Shelf {
    /// Every text, each followed by a 0 byte (a search key never holds one).
    text: Vec<u8>,
    /// Where each entry's 0 byte is in `text`.
    ends: Vec<u32>,
    /// Every id, back to back.
    ids: String,
    /// Where each entry's id ends in `ids`.
    id_ends: Vec<u32>,
}

/// What a shelf was built from: the largest sync stamp of the tracks and of the tombstones.
pub(crate) type Version = (Option<i64>, Option<i64>);

impl Shelf {
    /// The ids of the first `limit` entries whose text holds `key`, in order.
    pub(crate) fn find(&self, key: &str, limit: usize) -> Vec<&str> {
        let mut found = Vec::new();
        if key.is_empty() || key.contains('\0') {
            return found;
        }
        let finder = memmem::Finder::new(key.as_bytes());
        let mut from = 0;
        while found.len() < limit {
            let Some(at) = finder.find(&self.text[from..]) else {
                break;
            };
            let at = from + at;
            // The entry holding the match: the first whose end lies past it.
            let entry = self.ends.partition_point(|&end| (end as usize) < at);
            found.push(self.id(entry));
            from = self.ends[entry] as usize + 1;
        }
        found
    }

    fn id(&self, entry: usize) -> &str {
        let start = match entry {
            0 => 0,
            _ => self.id_ends[entry - 1] as usize,
        };
        &self.ids[start..self.id_ends[entry] as usize]
    }

    /// How many entries the shelf holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

/// The current shelf of one process, and whether one is being built.
#[derive(Debug, Default)]
pub(crate) struct ShelfCache {
    current: Mutex<Option<Arc<Shelves>>>,
    building: AtomicBool,
}

impl ShelfCache {
    /// The shelf built at the tracks' current version, if there is one. Otherwise a build
    /// is started in the background (unless one is running) and `None` returned: the
    /// caller asks the database this time.
    pub(crate) async fn get(self: &Arc<Self>, db: &Db) -> Result<Option<Arc<Shelves>>> {
        let version = current_version(db).await?;
        let shelf = self.current.lock().expect("poisoned").clone();
        if let Some(shelf) = shelf.filter(|shelf| shelf.version == version) {
            crate::metrics::cache_lookup("search_shelf", true);
            return Ok(Some(shelf));
        }
        crate::metrics::cache_lookup("search_shelf", false);
        if !self.building.swap(true, Ordering::AcqRel) {
            let cache = Arc::clone(self);
            let db = db.clone();
            tokio::spawn(async move {
                match build(&db).await {
                    Ok(shelf) => *cache.current.lock().expect("poisoned") = Some(Arc::new(shelf)),
                    Err(error) => tracing::warn!(%error, "cannot build the search shelf"),
                }
                cache.building.store(false, Ordering::Release);
            });
        }
        Ok(None)
    }
}

async fn current_version(db: &Db) -> Result<Version> {
    db.sql(
        "SELECT (SELECT max(synced_at) FROM tracks) AS tracks, (SELECT max(synced_at) FROM tombstones) AS tombstones",
    )
    .fetch_optional::<(Option<i64>, Option<i64>), _>(db.pool())
    .await
    .map(Option::unwrap_or_default)
}

/// Reads every track's search text, album title and artist name in search order. The
/// version is read first: a change committed during the read moves it again, so the shelf
/// is at worst read once more.
async fn build(db: &Db) -> Result<Shelves> {
    let version = current_version(db).await?;
    Ok(Shelves {
        version,
        tracks: fill(
            db,
            "SELECT t.id, t.search_text FROM tracks t ORDER BY length(t.title), t.title, t.id",
        )
        .await?,
        albums: fill(
            db,
            "SELECT al.id, al.title_key FROM albums al ORDER BY LENGTH(al.title_key), al.title_key, al.id",
        )
        .await?,
        artists: fill(
            db,
            "SELECT ar.id, ar.name_key FROM artists ar ORDER BY LENGTH(ar.name_key), ar.name_key, ar.id",
        )
        .await?,
    })
}

/// A shelf of the (id, text) rows of `query`, in its order.
async fn fill(db: &Db, query: &str) -> Result<Shelf> {
    let mut shelf = Shelf::default();
    let mut rows = db.sql(query).fetch::<(String, String)>(db.pool());
    while let Some((id, text)) = rows.try_next().await? {
        // A text holding a 0 byte (none does: names are tag text) would end early.
        shelf.text.extend(text.bytes().map(|byte| byte.max(1)));
        shelf.ends.push(offset(shelf.text.len())?);
        shelf.text.push(0);
        shelf.ids.push_str(&id);
        shelf.id_ends.push(offset(shelf.ids.len())?);
    }
    shelf.text.shrink_to_fit();
    shelf.ends.shrink_to_fit();
    shelf.ids.shrink_to_fit();
    shelf.id_ends.shrink_to_fit();
    Ok(shelf)
}

fn offset(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| crate::Error::internal("the search shelf would pass 4 GB"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shelf(entries: &[(&str, &str)]) -> Shelf {
        let mut shelf = Shelf::default();
        for (id, text) in entries {
            shelf.text.extend_from_slice(text.as_bytes());
            shelf.ends.push(shelf.text.len() as u32);
            shelf.text.push(0);
            shelf.ids.push_str(id);
            shelf.id_ends.push(shelf.ids.len() as u32);
        }
        shelf
    }

    #[test]
    fn finds_each_entry_once_in_order_up_to_the_limit() {
        let shelf = shelf(&[("a", "ee"), ("b", "x"), ("c", "e\u{1f}e"), ("d", "le")]);
        assert_eq!(shelf.find("e", 10), ["a", "c", "d"]);
        assert_eq!(shelf.find("e", 2), ["a", "c"]);
        assert_eq!(shelf.find("x", 10), ["b"]);
        assert!(shelf.find("q", 10).is_empty());
        assert_eq!(shelf.len(), 4);
    }

    #[test]
    fn a_match_never_spans_two_entries() {
        let shelf = shelf(&[("a", "ab"), ("b", "cd")]);
        assert!(shelf.find("bc", 10).is_empty());
        assert!(shelf.find("b\0c", 10).is_empty());
        assert!(shelf.find("", 10).is_empty());
    }
}
