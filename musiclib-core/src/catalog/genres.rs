//! Genres as tagged, with how much of the library has each.

use super::Catalog;
use crate::Result;

/// A genre and how much of the library has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Genre {
    /// Name as tagged.
    pub name: String,
    /// Tracks of this genre.
    pub track_count: i64,
    /// Albums with a track of this genre.
    pub album_count: i64,
}

impl Catalog {
    /// Genres with their track and album counts, by name.
    pub async fn genres(&self) -> Result<Vec<Genre>> {
        let rows: Vec<(String, i64, i64)> = self
            .db
            .sql(
                "SELECT genre, COUNT(*), COUNT(DISTINCT album_id) FROM tracks
                 WHERE genre IS NOT NULL AND genre <> '' GROUP BY genre ORDER BY LOWER(genre), genre",
            )
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows
            .into_iter()
            .map(|(name, track_count, album_count)| Genre {
                name,
                track_count,
                album_count,
            })
            .collect())
    }
}
