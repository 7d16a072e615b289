//! Recommendations: tracks to play next, from metadata heuristics (shared artist or genre,
//! play counts, random playable filler). The legacy interface's random, top and similar songs
//! use them today; the stateless radio feed (`POST /radio`) is built from the same signals.

use crate::catalog::{Catalog, ItemKind, TrackRow, TRACK_SELECT};
use crate::db::Db;
use crate::domain::Track;
use crate::{Error, Result};

/// The recommendations service.
#[derive(Clone, Debug)]
pub struct Recommend {
    db: Db,
    catalog: Catalog,
}

impl Recommend {
    pub(crate) fn new(db: Db, catalog: Catalog) -> Recommend {
        Recommend { db, catalog }
    }

    /// Up to `count` playable tracks in random order, optionally of a genre and years.
    pub async fn random_tracks(
        &self,
        genre: Option<&str>,
        from_year: Option<i64>,
        to_year: Option<i64>,
        count: i64,
    ) -> Result<Vec<Track>> {
        let mut select = self.db.sql(TRACK_SELECT);
        select.push_condition().push("t.availability = 'available'");
        if let Some(genre) = genre.map(str::trim).filter(|genre| !genre.is_empty()) {
            select
                .push_condition()
                .push("LOWER(t.genre) = ")
                .push_bind(genre.to_lowercase());
        }
        if let Some(from) = from_year {
            select.push_condition().push("t.year >= ").push_bind(from);
        }
        if let Some(to) = to_year {
            select.push_condition().push("t.year <= ").push_bind(to);
        }
        select.push(&format!(" ORDER BY RANDOM() LIMIT {}", count.max(1)));
        let rows: Vec<TrackRow> = select.fetch_all(self.db.pool()).await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }

    /// The most played tracks (by everyone) of the artist named `artist`, then the rest of
    /// theirs in album order.
    pub async fn top_tracks(&self, artist: &str, count: i64) -> Result<Vec<Track>> {
        let key = crate::text::name_key(artist.trim());
        let rows: Vec<TrackRow> = self.db.sql(&format!(
            "{TRACK_SELECT} JOIN artists ar ON ar.id = t.artist_id
             LEFT JOIN (SELECT track_id, COUNT(*) AS plays FROM play_events GROUP BY track_id) s ON s.track_id = t.id
             WHERE ar.name_key = $1
             ORDER BY COALESCE(s.plays, 0) DESC, LOWER(t.album_title), t.disc_number, t.track_number, t.id
             LIMIT {}",
            count.max(1)
        ))
        .bind(key)
        .fetch_all(self.db.pool())
        .await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }

    /// Up to `count` playable tracks like the track, album or artist `id`: by the same
    /// artists or of the same genres, in random order, the seed's own tracks left out.
    pub async fn similar_tracks(&self, id: &str, count: i64) -> Result<Vec<Track>> {
        let seed = match self.catalog.item_kind(id).await? {
            Some(ItemKind::Track) => "SELECT id, artist_id, genre FROM tracks WHERE id = $1",
            Some(ItemKind::Album) => "SELECT id, artist_id, genre FROM tracks WHERE album_id = $1",
            Some(ItemKind::Artist) => {
                "SELECT id, artist_id, genre FROM tracks WHERE artist_id = $1"
            }
            _ => return Err(Error::not_found("track, album or artist", id)),
        };
        let query = format!(
            "WITH seed AS ({seed})
             {TRACK_SELECT} WHERE t.availability = 'available'
               AND t.id NOT IN (SELECT id FROM seed)
               AND (t.artist_id IN (SELECT artist_id FROM seed WHERE artist_id IS NOT NULL)
                    OR LOWER(t.genre) IN (SELECT LOWER(genre) FROM seed WHERE genre IS NOT NULL AND genre <> ''))
             ORDER BY RANDOM() LIMIT {}",
            count.max(1)
        );
        let rows: Vec<TrackRow> = self
            .db
            .sql(&query)
            .bind(id)
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }
}
