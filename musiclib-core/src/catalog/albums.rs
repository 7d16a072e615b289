//! Albums: the list with filters and sort, one album, its tracks.

use super::query::{direction, AlbumFilter, AlbumSortKey, Sort, TrackFilter, TrackSortKey};
use super::rows::{AlbumRow, ALBUM_SELECT};
use super::Catalog;
use crate::db::like_pattern;
use crate::domain::{Album, Page, Paged, Track};
use crate::{AlbumId, Error, Result};

impl Catalog {
    /// Albums matching `filter`, one page, in `sort` order (by default by title).
    pub async fn list_albums(
        &self,
        filter: &AlbumFilter,
        sort: Option<Sort<AlbumSortKey>>,
        page: Page,
    ) -> Result<Paged<Album>> {
        let mut filters = self.db.sql("");
        if let Some(artist_id) = &filter.artist_id {
            filters
                .push_condition()
                .push("al.artist_id = ")
                .push_bind(artist_id);
        }
        if let Some(year) = filter.year {
            filters.push_condition().push("al.year = ").push_bind(year);
        }
        if let Some(genre) = &filter.genre {
            filters
                .push_condition()
                .push("LOWER(al.genre) = ")
                .push_bind(genre.to_lowercase());
        }
        if let Some(q) = filter
            .q
            .as_deref()
            .map(crate::text::name_key)
            .filter(|q| !q.is_empty())
        {
            filters
                .push_condition()
                .push("al.title_key LIKE ")
                .push_bind(like_pattern(&q))
                .push(" ESCAPE '\\'");
        }
        let sort = sort.unwrap_or(Sort {
            key: AlbumSortKey::Title,
            descending: false,
        });
        let dir = direction(sort.descending);
        let order = match sort.key {
            AlbumSortKey::Title => format!("al.title_key {dir}, al.id {dir}"),
            AlbumSortKey::Artist => {
                format!("LOWER(ar.name) {dir}, al.title_key {dir}, al.id {dir}")
            }
            AlbumSortKey::Year => format!("al.year {dir}, al.title_key {dir}, al.id {dir}"),
            AlbumSortKey::CreatedAt => format!("al.created_at {dir}, al.id {dir}"),
        };
        filters
            .fetch_page::<AlbumRow, _>(
                self.db.pool(),
                "SELECT COUNT(*) FROM albums al",
                ALBUM_SELECT,
                &order,
                page,
            )
            .await
    }

    /// One album, with its track count and duration.
    pub async fn get_album(&self, id: &AlbumId) -> Result<Album> {
        self.db
            .sql(&format!("{ALBUM_SELECT} WHERE al.id = $1"))
            .bind(id)
            .fetch_optional::<AlbumRow, _>(self.db.pool())
            .await?
            .map(Album::from)
            .ok_or_else(|| Error::not_found("album", id))
    }

    /// The album's tracks, in disc and track order.
    pub async fn album_tracks(&self, id: &AlbumId, page: Page) -> Result<Paged<Track>> {
        self.get_album(id).await?;
        let filter = TrackFilter {
            album_id: Some(id.clone()),
            ..Default::default()
        };
        self.list_tracks(
            &filter,
            Some(Sort {
                key: TrackSortKey::TrackNumber,
                descending: false,
            }),
            page,
        )
        .await
    }
}
