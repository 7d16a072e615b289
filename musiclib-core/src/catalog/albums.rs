//! Albums: the list with filters and sort, one album, its tracks.

use super::keyset::{self, Chunk, KeyColumn};
use super::query::{album_order, AlbumFilter, AlbumSortKey, Sort, TrackFilter, TrackSortKey};
use super::rows::{album_select, AlbumRow};
use super::Catalog;
use crate::db::{like_pattern, Sql};
use crate::domain::{Album, Page, Paged, Track};
use crate::{AlbumId, Error, Result};

/// The keyset walk of an album sort: by title or creation, in either direction. The order is
/// `album_order`'s: the key, then the id.
pub(super) fn album_key(sort: Sort<AlbumSortKey>) -> Option<KeyColumn> {
    let (name, column, text) = match (sort.key, sort.descending) {
        (AlbumSortKey::Title, false) => ("albums:title", "al.title_key", true),
        (AlbumSortKey::Title, true) => ("albums:-title", "al.title_key", true),
        (AlbumSortKey::CreatedAt, false) => ("albums:created_at", "al.created_at", false),
        (AlbumSortKey::CreatedAt, true) => ("albums:-created_at", "al.created_at", false),
        _ => return None,
    };
    Some(KeyColumn {
        sort: name,
        column,
        id: "al.id",
        text,
        descending: sort.descending,
    })
}

impl Catalog {
    /// Albums matching `filter`, one page, in `sort` order (by default by title).
    pub async fn list_albums(
        &self,
        filter: &AlbumFilter,
        sort: Option<Sort<AlbumSortKey>>,
        page: Page,
    ) -> Result<Paged<Album>> {
        let sort = sort.unwrap_or(Sort {
            key: AlbumSortKey::Title,
            descending: false,
        });
        let filters = self.album_filters(filter);
        if album_key(sort).is_none() {
            // A deep page of a sort without a keyset, from the list's order in memory.
            let head = "SELECT al.id FROM albums al LEFT JOIN artists ar ON ar.id = al.artist_id";
            let order = album_order(sort);
            let placed = self
                .places
                .page_in_order(&self.db, head, &filters, &order, page)
                .await?;
            if let Some((ids, total)) = placed {
                return Ok(Paged {
                    items: self.albums_in_order(&ids).await?,
                    total,
                    page,
                });
            }
        }
        if sort.key == AlbumSortKey::Artist && filter.is_empty() {
            return self.albums_by_artist(sort.descending, page).await;
        }
        if let Some(key) = album_key(sort) {
            // From a known place instead of skipping the offset (`keyset::Places`); counted
            // only then, as the offset way counts on its own.
            let clock = self.db.sync_clock().await?;
            let placed = self
                .places
                .page(&self.db, "FROM albums al", &filters, key, page, clock)
                .await?;
            if let Some(ids) = placed {
                let total = filters
                    .prefixed("SELECT COUNT(*) FROM albums al")
                    .fetch_scalar::<i64, _>(self.db.pool())
                    .await?;
                return Ok(Paged {
                    items: self.albums_in_order_at(&ids, clock).await?,
                    total,
                    page,
                });
            }
        }
        let order = album_order(sort);
        filters
            .fetch_page_by_key::<AlbumRow, _>(
                self.db.pool(),
                "SELECT COUNT(*) FROM albums al",
                "SELECT al.id FROM albums al LEFT JOIN artists ar ON ar.id = al.artist_id",
                &album_select(self.db.kind()),
                "al.id",
                &order,
                page,
            )
            .await
    }

    /// Every album by album artist (then title), albums without one after the others: the
    /// artists in name order from their index, each one's albums in title order from
    /// `albums_artist` (migration 0016), so a page at any offset walks two indexes instead
    /// of sorting every album by a column of another table.
    async fn albums_by_artist(&self, descending: bool, page: Page) -> Result<Paged<Album>> {
        let dir = if descending { "DESC" } else { "ASC" };
        let total = self
            .db
            .sql("SELECT COUNT(*) FROM albums")
            .fetch_scalar::<i64, _>(self.db.pool());
        let with_artist = self
            .db
            .sql(&format!(
                "SELECT al.id FROM {} ORDER BY LOWER(ar.name) {dir}, ar.id {dir}, al.title_key {dir}, al.id {dir}
                 LIMIT {} OFFSET {}",
                self.db.kind().albums_under_artists(),
                page.limit(),
                page.offset()
            ))
            .fetch_scalars::<String, _>(self.db.pool());
        let (total, mut ids) = futures::try_join!(total, with_artist)?;
        let missing = page.limit() - ids.len() as i64;
        if missing > 0 {
            // The page runs past the albums with an artist: the rest from those without.
            let before = if ids.is_empty() {
                self.db
                    .sql("SELECT COUNT(*) FROM albums WHERE artist_id IS NOT NULL")
                    .fetch_scalar::<i64, _>(self.db.pool())
                    .await?
            } else {
                page.offset() + ids.len() as i64
            };
            ids.extend(
                self.db
                    .sql(&format!(
                        "SELECT al.id FROM albums al WHERE al.artist_id IS NULL
                         ORDER BY al.title_key {dir}, al.id {dir} LIMIT {missing} OFFSET {}",
                        (page.offset() - before).max(0)
                    ))
                    .fetch_scalars::<String, _>(self.db.pool())
                    .await?,
            );
        }
        Ok(Paged {
            items: self.albums_in_order(&ids).await?,
            total,
            page,
        })
    }

    /// As [`Catalog::list_albums`], the page after `cursor` (empty: the first page) by
    /// keyset: sorts by title and created_at (either direction).
    pub async fn list_albums_after(
        &self,
        filter: &AlbumFilter,
        sort: Option<Sort<AlbumSortKey>>,
        limit: i64,
        cursor: &str,
    ) -> Result<Chunk<Album>> {
        let sort = sort.unwrap_or(Sort {
            key: AlbumSortKey::Title,
            descending: false,
        });
        let key = album_key(sort).ok_or_else(|| {
            Error::invalid(
                "cursor",
                "cursor paging is offered for the sorts title and created_at; use offset with this one",
            )
        })?;
        let limit = Page::new(Some(limit), None)?.limit();
        let filters = self.album_filters(filter);
        let total = filters
            .prefixed("SELECT COUNT(*) FROM albums al")
            .fetch_scalar::<i64, _>(self.db.pool());
        let ids = keyset::page_ids(&self.db, "FROM albums al", &filters, key, limit, cursor);
        let (total, (ids, next_cursor)) = futures::try_join!(total, ids)?;
        Ok(Chunk {
            items: self.albums_in_order(&ids).await?,
            total,
            limit,
            next_cursor,
        })
    }

    /// The `WHERE` fragment (on alias `al`) of an album filter.
    fn album_filters(&self, filter: &AlbumFilter) -> Sql {
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
        filters
    }

    /// One album, with its track count and duration.
    pub async fn get_album(&self, id: &AlbumId) -> Result<Album> {
        self.db
            .sql(&format!(
                "{} WHERE al.id = $1",
                album_select(self.db.kind())
            ))
            .bind(id)
            .fetch_optional::<AlbumRow, _>(self.db.pool())
            .await?
            .map(Album::from)
            .ok_or_else(|| Error::not_found("album", id))
    }

    /// Albums by id, in the order given; ids of missing albums are left out. Albums read at
    /// the current sync clock are taken from memory (every change to an album, its tracks or
    /// its artist moves the clock), so a page of 500 reads only the ones not kept.
    pub(crate) async fn albums_in_order(&self, ids: &[String]) -> Result<Vec<Album>> {
        let clock = self.db.sync_clock().await?;
        self.albums_in_order_at(ids, clock).await
    }

    /// As [`Catalog::albums_in_order`], at `clock`: the sync clock, read before the ids were.
    pub(crate) async fn albums_in_order_at(
        &self,
        ids: &[String],
        clock: i64,
    ) -> Result<Vec<Album>> {
        let mut found = self.album_rows.get_many(ids, clock);
        let missing: Vec<&str> = ids
            .iter()
            .filter(|id| !found.contains_key(*id))
            .map(String::as_str)
            .collect();
        let mut read = Vec::with_capacity(missing.len());
        for chunk in missing.chunks(crate::db::CHUNK) {
            let mut select = self
                .db
                .sql(&format!("{} WHERE al.id", album_select(self.db.kind())));
            select.push_in(chunk.iter().copied());
            for row in select.fetch_all::<AlbumRow, _>(self.db.pool()).await? {
                read.push((row.id.clone(), Album::from(row)));
            }
        }
        found.extend(read.iter().cloned());
        self.album_rows.insert_many(clock, read);
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
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
