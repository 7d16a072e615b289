//! The library search (`GET /search/library`): case- and accent-insensitive substring match
//! over tracks, albums and artists. How tracks are matched is the dialect's
//! ([`crate::db::DatabaseKind::track_search`]): an FTS5 trigram index on SQLite, a pg_trgm
//! index on PostgreSQL.

use super::rows::{AlbumRow, ArtistRow, TrackRow, ALBUM_SELECT, ARTIST_SELECT, TRACK_SELECT};
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
        let pattern = like_pattern(&key);
        let pool = self.db.pool();
        // The matching ids are found and ordered first, and only the page's rows are read in
        // full (a full row carries a cover subquery: computing it for every match would cost
        // more than the search).
        let order = "ORDER BY LENGTH(t.title), t.title, t.id";
        let (matching, tracks_arg) = self.db.kind().track_search(&key);
        let tracks = self
            .db
            .sql(&format!(
                "{TRACK_SELECT} WHERE t.id IN (SELECT t.id FROM tracks t {matching} {order} LIMIT {limit}) {order}"
            ))
            .bind(tracks_arg)
            .fetch_all::<TrackRow, _>(pool);
        let albums = self
            .db
            .sql(&format!(
                "{ALBUM_SELECT} WHERE al.title_key LIKE $1 ESCAPE '\\' ORDER BY LENGTH(al.title_key), al.title_key, al.id LIMIT {limit}"
            ))
            .bind(pattern.as_str())
            .fetch_all::<AlbumRow, _>(pool);
        let artists = self
            .db
            .sql(&format!(
                "{ARTIST_SELECT} WHERE ar.name_key LIKE $1 ESCAPE '\\' ORDER BY LENGTH(ar.name_key), ar.name_key, ar.id LIMIT {limit}"
            ))
            .bind(pattern.as_str())
            .fetch_all::<ArtistRow, _>(pool);
        let (tracks, albums, artists) = futures::try_join!(tracks, albums, artists)?;
        Ok(LibrarySearch {
            tracks: tracks.into_iter().map(Track::from).collect(),
            albums: albums.into_iter().map(Album::from).collect(),
            artists: artists.into_iter().map(Artist::from).collect(),
        })
    }
}
