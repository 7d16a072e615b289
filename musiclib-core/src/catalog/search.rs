//! The library search (`GET /search/library`): case- and accent-insensitive substring match
//! over tracks, albums and artists. They are found in the search shelf (`shelf.rs`) when it
//! is current; otherwise the database is asked (tracks in the dialect's way
//! ([`crate::db::DatabaseKind::track_search`]): an FTS5 trigram index on SQLite, a pg_trgm
//! index on PostgreSQL).

use super::rows::{album_select, AlbumRow, ArtistRow, ARTIST_SELECT};
use super::Catalog;
use crate::db::like_pattern;
use crate::domain::{Album, Artist, Page, Track};
use crate::{Error, Result};

/// What the library search found.
#[derive(Debug, Clone, Default)]
pub struct LibrarySearch {
    /// Matching tracks.
    pub tracks: Vec<Track>,
    /// Matching albums.
    pub albums: Vec<Album>,
    /// Matching artists.
    pub artists: Vec<Artist>,
}

impl Catalog {
    /// Tracks, albums and artists containing `q` (case- and accent-insensitive), at most
    /// `limit` of each kind, shortest names first.
    pub async fn search_library(&self, q: &str, limit: i64) -> Result<LibrarySearch> {
        if q.is_empty() {
            return Err(Error::invalid("q", "must not be empty"));
        }
        if !(1..=Page::MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be between 1 and {}", Page::MAX_LIMIT),
            ));
        }
        let key = crate::text::name_key(q);
        if key.is_empty() {
            // Spaces or punctuation only: nothing to look for (search-as-you-type sends them).
            return Ok(LibrarySearch::default());
        }
        if let Some(shelves) = self.shelf.get(&self.db).await? {
            let limit = limit as usize;
            let owned = |ids: Vec<&str>| ids.into_iter().map(str::to_owned).collect::<Vec<_>>();
            let albums = owned(shelves.albums.find(&key, limit));
            let artists = owned(shelves.artists.find(&key, limit));
            let tracks = shelves.tracks.find(&key, limit);
            let (tracks, albums, artists) = futures::try_join!(
                self.tracks_in_order(&tracks),
                self.albums_in_order(&albums),
                self.artists_in_order(&artists)
            )?;
            return Ok(LibrarySearch {
                tracks,
                albums,
                artists,
            });
        }
        let pattern = like_pattern(&key);
        let pool = self.db.pool();
        // The matching ids are found and ordered first, and only the page's rows are read in
        // full (a row carries counts and a cover flag: computing them for every match would
        // cost more than the search).
        let tracks = self.search_track_ids(&key, limit);
        let albums = self
            .db
            .sql(&format!(
                "{} WHERE al.id IN (SELECT al.id FROM albums al WHERE al.title_key LIKE $1 ESCAPE '\\'
                   ORDER BY LENGTH(al.title_key), al.title_key, al.id LIMIT {limit})
                 ORDER BY LENGTH(al.title_key), al.title_key, al.id",
                album_select(self.db.kind())
            ))
            .bind(pattern.as_str())
            .fetch_all::<AlbumRow, _>(pool);
        let artists = self
            .db
            .sql(&format!(
                "{ARTIST_SELECT} WHERE ar.id IN (SELECT ar.id FROM artists ar WHERE ar.name_key LIKE $1 ESCAPE '\\'
                   ORDER BY LENGTH(ar.name_key), ar.name_key, ar.id LIMIT {limit})
                 ORDER BY LENGTH(ar.name_key), ar.name_key, ar.id"
            ))
            .bind(pattern.as_str())
            .fetch_all::<ArtistRow, _>(pool);
        let (track_ids, albums, artists) = futures::try_join!(tracks, albums, artists)?;
        let track_ids: Vec<&str> = track_ids.iter().map(String::as_str).collect();
        Ok(LibrarySearch {
            tracks: self.tracks_in_order(&track_ids).await?,
            albums: albums.into_iter().map(Album::from).collect(),
            artists: artists.into_iter().map(Artist::from).collect(),
        })
    }

    /// Whether the library search reads the tracks from memory (the shelf is current); asks
    /// for one to be read when not.
    #[cfg(feature = "test-support")]
    pub async fn search_shelf_is_current(&self) -> Result<bool> {
        Ok(self.shelf.get(&self.db).await?.is_some())
    }

    /// The ids of the `limit` tracks matching `key` with the shortest titles, in that order.
    async fn search_track_ids(&self, key: &str, limit: i64) -> Result<Vec<String>> {
        let order = "ORDER BY length(t.title), t.title, t.id";
        let (matching, argument) = self.db.kind().track_search(key);
        let pattern = like_pattern(key);
        // Most queries people type match many tracks: the shortest titles, read from an
        // index in this order (migration 0015), hold the page, and no other track needs
        // reading.
        let first: Vec<String> = self
            .db
            .sql(&format!(
                "SELECT t.id FROM (SELECT t.id, t.title, t.search_text FROM tracks t {order} LIMIT {WINDOW}) t
                 WHERE t.search_text LIKE $1 ESCAPE '\\' {order} LIMIT {limit}"
            ))
            .bind(pattern.as_str())
            .fetch_scalars(self.db.pool())
            .await?;
        if first.len() as i64 == limit {
            // Every later title sorts after the window: this is the page.
            return Ok(first);
        }
        if key.chars().count() >= SHORT_QUERY {
            // A trigram index finds the few matches; they are sorted.
            return self
                .db
                .sql(&format!(
                    "SELECT t.id FROM tracks t {matching} {order} LIMIT {limit}"
                ))
                .bind(argument)
                .fetch_scalars(self.db.pool())
                .await;
        }
        // One or two characters, which no trigram index serves, and rare (a letter few
        // titles have): every track is read and the matches sorted, in storage order (on
        // SQLite from the narrow `tracks_search_scan` index), never the title-order index
        // walk with a row read per step, which is slower than the plain scan.
        self.db
            .sql(&format!(
                "SELECT t.id FROM tracks t {matching} ORDER BY length(t.title) + 0, t.title, t.id LIMIT {limit}"
            ))
            .bind(argument)
            .fetch_scalars(self.db.pool())
            .await
    }
}

/// Queries shorter than this (characters) match no trigram index.
const SHORT_QUERY: usize = 3;

/// How many of the shortest titles a search looks through before it asks an index (or, for
/// a short query, reads every track).
const WINDOW: i64 = 2000;
