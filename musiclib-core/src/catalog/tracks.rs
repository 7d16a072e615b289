//! Tracks: lists, reads by id, the new-track insert every ingest path shares, the locked read
//! edits and enrichment decide on, and the catalogue's part of a deletion.

use std::collections::HashMap;

use super::keyset::{self, Chunk, KeyColumn};
use super::query::{track_order, Sort, TrackFilter, TrackSortKey};
use super::resolve::Resolver;
use super::rows::{TrackRow, TRACK_FIELDS, TRACK_SELECT};
use super::writes::{self, Names, NewRow, StoredAudio};
use super::{Catalog, DroppedCover};
use crate::db::{like_pattern, Db, Sql, Tx};
use crate::domain::{Page, Paged, Source, Track};
use crate::probe::AudioFacts;
use crate::{Error, Result, TrackId, UserId};

/// What kind of item an id names (the legacy interface takes any id where the API has one
/// route per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A track.
    Track,
    /// An album.
    Album,
    /// An artist.
    Artist,
    /// A playlist.
    Playlist,
}

impl ItemKind {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Track => "track",
            ItemKind::Album => "album",
            ItemKind::Artist => "artist",
            ItemKind::Playlist => "playlist",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<ItemKind> {
        Some(match name {
            "track" => ItemKind::Track,
            "album" => ItemKind::Album,
            "artist" => ItemKind::Artist,
            "playlist" => ItemKind::Playlist,
            _ => return None,
        })
    }
}

/// The keyset walk of a track sort: the sorts whose keys are never NULL (title, creation,
/// last change), in either direction. The order is [`track_order`]'s: the key, then the id.
fn track_key(sort: Sort<TrackSortKey>) -> Option<KeyColumn> {
    let (column, name) = match (sort.key, sort.descending) {
        (TrackSortKey::Title, false) => ("lower(t.title)", "tracks:title"),
        (TrackSortKey::Title, true) => ("lower(t.title)", "tracks:-title"),
        (TrackSortKey::CreatedAt, false) => ("t.created_at", "tracks:created_at"),
        (TrackSortKey::CreatedAt, true) => ("t.created_at", "tracks:-created_at"),
        (TrackSortKey::UpdatedAt, false) => ("t.updated_at", "tracks:updated_at"),
        (TrackSortKey::UpdatedAt, true) => ("t.updated_at", "tracks:-updated_at"),
        _ => return None,
    };
    Some(KeyColumn {
        sort: name,
        column,
        id: "t.id",
        text: sort.key == TrackSortKey::Title,
        descending: sort.descending,
    })
}

/// Whether a page read also counts the whole list (`Paged::total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    Yes,
    No,
}

impl Count {
    /// The list's length by `counting` when asked for (else 0, and `counting` never runs).
    async fn total(self, counting: impl std::future::Future<Output = Result<i64>>) -> Result<i64> {
        match self {
            Count::Yes => counting.await,
            Count::No => Ok(0),
        }
    }
}

/// The track list's order when none is asked for: by title, or newest first when filtered
/// by source.
fn default_track_sort(filter: &TrackFilter) -> Sort<TrackSortKey> {
    match filter.source {
        Some(_) => Sort {
            key: TrackSortKey::CreatedAt,
            descending: true,
        },
        None => Sort {
            key: TrackSortKey::Title,
            descending: false,
        },
    }
}

impl Catalog {
    /// Tracks matching `filter`, one page, in `sort` order (by default by title, or newest
    /// first when filtered by source).
    pub async fn list_tracks(
        &self,
        filter: &TrackFilter,
        sort: Option<Sort<TrackSortKey>>,
        page: Page,
    ) -> Result<Paged<Track>> {
        self.read_tracks(filter, sort, page, Count::Yes).await
    }

    /// One page of tracks as [`Catalog::list_tracks`] reads it, without counting the whole
    /// list: for clients that show no total (Subsonic's lists). A list filtered on what no
    /// index holds (`with_audio`) is counted by reading every row: 0.4 s at 1,000,000
    /// tracks, again after every change.
    pub async fn track_page(
        &self,
        filter: &TrackFilter,
        sort: Option<Sort<TrackSortKey>>,
        page: Page,
    ) -> Result<Vec<Track>> {
        Ok(self.read_tracks(filter, sort, page, Count::No).await?.items)
    }

    /// A page of tracks, and the list's length when `count` asks for it (else 0).
    async fn read_tracks(
        &self,
        filter: &TrackFilter,
        sort: Option<Sort<TrackSortKey>>,
        page: Page,
        count: Count,
    ) -> Result<Paged<Track>> {
        let sort = sort.unwrap_or_else(|| default_track_sort(filter));
        let filters = self.track_filters(filter);
        if let Some(key) = track_key(sort) {
            if let Some(paged) = self
                .track_page_from_place(&filters, key, page, count)
                .await?
            {
                return Ok(paged);
            }
        } else if let Some((ids, total)) = self
            .places
            .page_in_order(
                &self.db,
                "SELECT t.id FROM tracks t",
                &filters,
                &track_order(sort),
                page,
            )
            .await?
        {
            // A deep page of a sort without a keyset, from the list's order in memory.
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            return Ok(Paged {
                items: self.tracks_in_order(&ids).await?,
                total,
                page,
            });
        }
        self.page_tracks(&filters, &track_order(sort), page, count)
            .await
    }

    /// A page of a keyset sort read from a known place (`keyset::Places`) instead of skipping
    /// every row before it; `None` when no place is known.
    async fn track_page_from_place(
        &self,
        filters: &Sql,
        key: KeyColumn,
        page: Page,
        count: Count,
    ) -> Result<Option<Paged<Track>>> {
        let clock = self.db.sync_clock().await?;
        let total = count.total(self.count_tracks_at(filters, clock));
        let rows = self.places.page_rows::<TrackRow>(
            &self.db,
            TRACK_FIELDS,
            "FROM tracks t",
            filters,
            key,
            page,
            clock,
        );
        let (total, rows) = futures::try_join!(total, rows)?;
        Ok(rows.map(|rows| Paged {
            items: rows.into_iter().map(Track::from).collect(),
            total,
            page,
        }))
    }

    /// As [`Catalog::list_tracks`], the page after `cursor` (empty: the first page) by keyset:
    /// sorts by title, created_at and updated_at (either direction).
    pub async fn list_tracks_after(
        &self,
        filter: &TrackFilter,
        sort: Option<Sort<TrackSortKey>>,
        limit: i64,
        cursor: &str,
    ) -> Result<Chunk<Track>> {
        let sort = sort.unwrap_or_else(|| default_track_sort(filter));
        let key = track_key(sort).ok_or_else(|| {
            Error::invalid(
                "cursor",
                "cursor paging is offered for the sorts title, created_at and updated_at; use offset with this one",
            )
        })?;
        let limit = Page::new(Some(limit), None)?.limit();
        let filters = self.track_filters(filter);
        let total = self.count_tracks(&filters);
        let rows = keyset::page_rows_from::<TrackRow>(
            &self.db,
            TRACK_FIELDS,
            "FROM tracks t",
            &filters,
            key,
            limit,
            cursor,
            0,
        );
        let (total, (rows, next_cursor)) = futures::try_join!(total, rows)?;
        Ok(Chunk {
            items: rows.into_iter().map(Track::from).collect(),
            total,
            limit,
            next_cursor,
        })
    }

    /// The `WHERE` fragment (on alias `t`) of a track filter.
    fn track_filters(&self, filter: &TrackFilter) -> Sql {
        let mut filters = self.db.sql("");
        if let Some(source) = filter.source {
            filters
                .push_condition()
                .push("t.source = ")
                .push_bind(source.as_str());
        }
        if let Some(artist_id) = &filter.artist_id {
            filters
                .push_condition()
                .push("t.artist_id = ")
                .push_bind(artist_id);
        }
        if let Some(album_id) = &filter.album_id {
            filters
                .push_condition()
                .push("t.album_id = ")
                .push_bind(album_id);
        }
        if let Some(genre) = &filter.genre {
            filters
                .push_condition()
                .push("lower(t.genre) = ")
                .push_bind(genre.to_lowercase());
        }
        if let Some(year) = filter.year {
            filters.push_condition().push("t.year = ").push_bind(year);
        }
        if let Some(status) = filter.metadata_status {
            filters
                .push_condition()
                .push("t.metadata_status = ")
                .push_bind(status.as_str());
        }
        if let Some(availability) = filter.availability {
            filters
                .push_condition()
                .push("t.availability = ")
                .push_bind(availability.as_str());
        }
        if filter.with_audio {
            // As `remote::has_audio`.
            filters
                .push_condition()
                .push("t.availability <> 'placeholder' AND t.storage_uri <> ''");
        }
        if let Some(q) = filter
            .q
            .as_deref()
            .map(crate::text::name_key)
            .filter(|q| !q.is_empty())
        {
            filters
                .push_condition()
                .push("t.search_text LIKE ")
                .push_bind(like_pattern(&q))
                .push(" ESCAPE '\\'");
        }
        filters
    }

    /// The page of tracks matching `filters` (a `WHERE` fragment on alias `t`) in `order`.
    pub(crate) async fn page_tracks(
        &self,
        filters: &Sql,
        order: &str,
        page: Page,
        count: Count,
    ) -> Result<Paged<Track>> {
        let total = count.total(self.count_tracks(filters));
        let rows = filters.fetch_rows_by_key::<TrackRow>(
            self.db.pool(),
            "SELECT t.id FROM tracks t",
            TRACK_SELECT,
            "t.id",
            order,
            page,
        );
        let (total, rows) = futures::try_join!(total, rows)?;
        Ok(Paged {
            items: rows.into_iter().map(Track::from).collect(),
            total,
            page,
        })
    }

    /// How many tracks `filters` (a `WHERE` fragment on alias `t`) selects. Counting a
    /// large library costs as much as reading a page, and every page asks: the count is kept
    /// with the sync clock it was taken at, which every insert, change and deletion of a
    /// track moves (its triggers and tombstones), so it holds exactly until the clock moves,
    /// whichever replica wrote.
    pub(crate) async fn count_tracks(&self, filters: &Sql) -> Result<i64> {
        let clock = self.db.sync_clock().await?;
        self.count_tracks_at(filters, clock).await
    }

    /// As [`Catalog::count_tracks`], with the sync clock already read.
    async fn count_tracks_at(&self, filters: &Sql, clock: i64) -> Result<i64> {
        let pool = self.db.pool();
        let key = filters.cache_key();
        if let Some(count) = self.counts.get(&key, &clock) {
            return Ok(count);
        }
        let count: i64 = filters
            .prefixed("SELECT COUNT(*) FROM tracks t")
            .fetch_scalar(pool)
            .await?;
        self.counts.insert(key, clock, count);
        Ok(count)
    }

    /// One track; not found when there is none.
    pub async fn get_track(&self, id: &TrackId) -> Result<Track> {
        self.find_track(id)
            .await?
            .ok_or_else(|| Error::not_found("track", id))
    }

    /// A track, or `None`.
    pub async fn find_track(&self, id: &TrackId) -> Result<Option<Track>> {
        Ok(self
            .db
            .sql(&format!("{TRACK_SELECT} WHERE t.id = $1"))
            .bind(id)
            .fetch_optional::<TrackRow, _>(self.db.pool())
            .await?
            .map(Track::from))
    }

    /// Tracks by id, in the order given (repeats kept); ids of missing tracks are left out.
    pub async fn tracks_by_ids(&self, ids: &[TrackId]) -> Result<Vec<Track>> {
        let ids: Vec<&str> = ids.iter().map(TrackId::as_str).collect();
        self.tracks_in_order(&ids).await
    }

    pub(crate) async fn tracks_in_order(&self, ids: &[&str]) -> Result<Vec<Track>> {
        let mut found: HashMap<String, Track> = HashMap::new();
        let unique: Vec<&str> = ids
            .iter()
            .copied()
            .collect::<std::collections::HashSet<_>>()
            .into_iter()
            .collect();
        for chunk in unique.chunks(crate::db::CHUNK) {
            let mut select = self.db.sql(&format!("{TRACK_SELECT} WHERE t.id"));
            select.push_in(chunk.iter().copied());
            for row in select.fetch_all::<TrackRow, _>(self.db.pool()).await? {
                found.insert(row.id.clone(), Track::from(row));
            }
        }
        // A queue or playlist may hold a track twice: clone all but the last use.
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for id in ids {
            *uses.entry(id).or_default() += 1;
        }
        Ok(ids
            .iter()
            .filter_map(|id| {
                let left = uses.get_mut(id)?;
                *left -= 1;
                if *left == 0 {
                    found.remove(*id)
                } else {
                    found.get(*id).cloned()
                }
            })
            .collect())
    }

    /// What kind of item `id` names, if any.
    pub async fn item_kind(&self, id: &str) -> Result<Option<ItemKind>> {
        let kind: Option<String> = self
            .db
            .sql(
                "SELECT 'track' FROM tracks WHERE id = $1
                 UNION ALL SELECT 'album' FROM albums WHERE id = $1
                 UNION ALL SELECT 'artist' FROM artists WHERE id = $1
                 UNION ALL SELECT 'playlist' FROM playlists WHERE id = $1",
            )
            .bind(id)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        Ok(kind.as_deref().and_then(ItemKind::parse))
    }

    /// The embedded tags read at ingest, kept on the track for enrichment.
    pub(crate) async fn track_tags(&self, id: &TrackId) -> Result<crate::probe::EmbeddedTags> {
        let tags: Option<Option<String>> = self
            .db
            .sql("SELECT tags FROM tracks WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        Ok(tags
            .flatten()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default())
    }

    /// Locks a track's row for the rest of the transaction, once the caller may change it
    /// (the first step of every write to a track).
    pub(crate) async fn lock_for_change(
        &self,
        tx: &mut Tx,
        caller: &crate::auth::Caller,
        id: &TrackId,
    ) -> Result<TrackRow> {
        let track = lock_track(&self.db, tx, id).await?;
        caller.may_change_track(track.added_by().as_ref())?;
        Ok(track)
    }

    /// The catalogue's part of deleting a locked track, inside the deletion's transaction:
    /// the row, a tombstone for sync clients, and the album and artist it leaves empty.
    /// Returns the dropped album's cover.
    pub(crate) async fn delete_locked_track(
        &self,
        tx: &mut Tx,
        track: &TrackRow,
    ) -> Result<Option<DroppedCover>> {
        self.db
            .sql("DELETE FROM tracks WHERE id = $1")
            .bind(track.id.as_str())
            .execute(&mut **tx)
            .await?;
        self.db
            .sql("INSERT INTO tombstones (entity_kind, entity_id, deleted_at) VALUES ('track', $1, {now})")
            .bind(track.id.as_str())
            .execute(&mut **tx)
            .await?;
        self.drop_orphans(tx, track.album_id.as_deref(), track.artist_id.as_deref())
            .await
    }

    /// Which sources have tracks, and how many.
    pub(crate) async fn count_by_source(&self) -> Result<Vec<(String, i64)>> {
        self.db
            .sql("SELECT source, COUNT(*) FROM tracks GROUP BY source")
            .fetch_all(self.db.pool())
            .await
    }

    /// Tracks in the library.
    pub(crate) async fn count_with_audio(&self) -> Result<i64> {
        self.db
            .sql("SELECT COUNT(*) FROM tracks WHERE storage_uri <> ''")
            .fetch_scalar(self.db.pool())
            .await
    }

    pub(crate) async fn track_count(&self) -> Result<i64> {
        self.db
            .sql("SELECT COUNT(*) FROM tracks")
            .fetch_scalar(self.db.pool())
            .await
    }
}

/// Reads a track inside a write transaction and locks its row until the transaction ends
/// ([`Db::lock`]): what an edit or an enrichment decides from it cannot change under it.
pub(crate) async fn lock_track(db: &Db, tx: &mut Tx, id: &TrackId) -> Result<TrackRow> {
    db.sql(&format!("{TRACK_SELECT} WHERE t.id = $1{}", db.lock("t")))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| Error::not_found("track", id))
}

/// A track ready to be inserted: its blob is already stored.
#[derive(Debug)]
pub(crate) struct NewTrack {
    pub(crate) id: TrackId,
    pub(crate) facts: AudioFacts,
    pub(crate) storage_uri: String,
    pub(crate) source: Source,
    pub(crate) source_id: String,
    pub(crate) size_bytes: i64,
    pub(crate) sha256: String,
    pub(crate) mtime: Option<i64>,
    pub(crate) added_by: Option<UserId>,
    /// Title to use when the tags have none (the file name without extension).
    pub(crate) fallback_title: String,
}

/// Inserts a `pending` track with what its tags say, resolving artist and album. Returns
/// false when a track with the same (source, source_id) already exists.
pub(crate) async fn insert_track(
    tx: &mut Tx,
    db: &Db,
    resolver: &mut Resolver,
    track: &NewTrack,
) -> Result<bool> {
    let tags = &track.facts.tags;
    let album_artist = tags
        .album_artist
        .clone()
        .or_else(|| tags.compilation.then(|| "Various Artists".to_string()))
        .or_else(|| tags.artist.clone());
    let description = Names {
        title: tags
            .title
            .clone()
            .unwrap_or_else(|| track.fallback_title.clone()),
        artist: tags.artist.clone(),
        album: tags.album.clone(),
        album_artist,
        genre: tags.genre.clone(),
        year: tags.year,
        track_number: tags.track_number,
        disc_number: tags.disc_number,
    }
    .resolve(tx, resolver)
    .await?;
    if let Some(album_id) = &description.album_id {
        if tags.musicbrainz_album_id.is_some() || tags.musicbrainz_releasegroup_id.is_some() {
            db.sql(
                "UPDATE albums SET musicbrainz_album_id = COALESCE(musicbrainz_album_id, $2),
                     musicbrainz_releasegroup_id = COALESCE(musicbrainz_releasegroup_id, $3)
                 WHERE id = $1",
            )
            .bind(album_id)
            .bind(tags.musicbrainz_album_id.as_deref())
            .bind(tags.musicbrainz_releasegroup_id.as_deref())
            .execute(&mut **tx)
            .await?;
        }
    }
    let row = NewRow {
        id: &track.id,
        description: &description,
        audio: Some(StoredAudio {
            key: &track.storage_uri,
            facts: &track.facts,
            size_bytes: track.size_bytes,
            sha256: &track.sha256,
        }),
        announced_duration_ms: None,
        source: track.source,
        source_id: &track.source_id,
        source_mtime: track.mtime,
        added_by: track.added_by.as_ref(),
        musicbrainz_recording_id: tags.musicbrainz_recording_id.as_deref(),
    };
    writes::insert(db, tx, &row).await
}
