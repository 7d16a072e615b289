//! Artists: the list by name, one artist, their albums and tracks.

use super::keyset::{self, Chunk, KeyColumn};
use super::query::{track_order, AlbumFilter, AlbumSortKey, Sort, TrackSortKey};
use super::rows::{ArtistRow, ARTIST_SELECT};
use super::Catalog;
use crate::db::{like_pattern, Sql};
use crate::domain::{Album, Artist, Page, Paged, Track};
use crate::{ArtistId, Error, Result};

impl Catalog {
    /// Artists whose name contains `q` (case- and accent-insensitive), by name, one page.
    pub async fn list_artists(&self, q: Option<&str>, page: Page) -> Result<Paged<Artist>> {
        self.artist_filters(q)
            .fetch_page_by_key::<ArtistRow, _>(
                self.db.pool(),
                "SELECT COUNT(*) FROM artists ar",
                "SELECT ar.id FROM artists ar",
                ARTIST_SELECT,
                "ar.id",
                "ar.name_key, ar.id",
                page,
            )
            .await
    }

    /// As [`Catalog::list_artists`], the page after `cursor` (empty: the first page) by
    /// keyset.
    pub async fn list_artists_after(
        &self,
        q: Option<&str>,
        limit: i64,
        cursor: &str,
    ) -> Result<Chunk<Artist>> {
        let key = KeyColumn {
            sort: "artists:name",
            column: "ar.name_key",
            id: "ar.id",
            text: true,
            descending: false,
        };
        let limit = Page::new(Some(limit), None)?.limit();
        let filters = self.artist_filters(q);
        let total = filters
            .prefixed("SELECT COUNT(*) FROM artists ar")
            .fetch_scalar::<i64, _>(self.db.pool());
        let ids = keyset::page_ids(&self.db, "FROM artists ar", &filters, key, limit, cursor);
        let (total, (ids, next_cursor)) = futures::try_join!(total, ids)?;
        Ok(Chunk {
            items: self.artists_in_order(&ids).await?,
            total,
            limit,
            next_cursor,
        })
    }

    /// The `WHERE` fragment (on alias `ar`) of the artist list's name filter.
    fn artist_filters(&self, q: Option<&str>) -> Sql {
        let mut filters = self.db.sql("");
        if let Some(q) = q.map(crate::text::name_key).filter(|q| !q.is_empty()) {
            filters
                .push_condition()
                .push("ar.name_key LIKE ")
                .push_bind(like_pattern(&q))
                .push(" ESCAPE '\\'");
        }
        filters
    }

    /// One artist, with album and track counts.
    pub async fn get_artist(&self, id: &ArtistId) -> Result<Artist> {
        self.db
            .sql(&format!("{ARTIST_SELECT} WHERE ar.id = $1"))
            .bind(id)
            .fetch_optional::<ArtistRow, _>(self.db.pool())
            .await?
            .map(Artist::from)
            .ok_or_else(|| Error::not_found("artist", id))
    }

    /// Artists by id, in the order given; ids of missing artists are left out.
    pub(crate) async fn artists_in_order(&self, ids: &[String]) -> Result<Vec<Artist>> {
        let wanted: Vec<ArtistId> = ids.iter().cloned().map(ArtistId::from_db).collect();
        let mut found: std::collections::HashMap<String, Artist> = self
            .artists_by_ids(&wanted)
            .await?
            .into_iter()
            .map(|artist| (artist.id.as_str().to_owned(), artist))
            .collect();
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// Artists by id, in no particular order; ids of missing artists are left out.
    pub async fn artists_by_ids(&self, ids: &[ArtistId]) -> Result<Vec<Artist>> {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(crate::db::CHUNK) {
            let mut select = self.db.sql(&format!("{ARTIST_SELECT} WHERE ar.id"));
            select.push_in(chunk.iter().map(ArtistId::as_str));
            found.extend(
                select
                    .fetch_all::<ArtistRow, _>(self.db.pool())
                    .await?
                    .into_iter()
                    .map(Artist::from),
            );
        }
        Ok(found)
    }

    /// The albums whose album artist this is, newest first.
    pub async fn artist_albums(&self, id: &ArtistId, page: Page) -> Result<Paged<Album>> {
        self.get_artist(id).await?;
        let filter = AlbumFilter {
            artist_id: Some(id.clone()),
            ..Default::default()
        };
        self.list_albums(
            &filter,
            Some(Sort {
                key: AlbumSortKey::Year,
                descending: true,
            }),
            page,
        )
        .await
    }

    /// The tracks by the artist or on their albums, in album order.
    pub async fn artist_tracks(&self, id: &ArtistId, page: Page) -> Result<Paged<Track>> {
        self.get_artist(id).await?;
        let mut filters = self.db.sql("");
        filters.push_condition();
        let artist = filters.arg(id);
        filters.push(&format!(
            "(t.artist_id = {artist} OR t.album_id IN (SELECT id FROM albums WHERE artist_id = {artist}))"
        ));
        let order = track_order(Sort {
            key: TrackSortKey::Album,
            descending: false,
        });
        self.page_tracks(&filters, &order, page, super::tracks::Count::Yes)
            .await
    }
}
