//! Browsing the catalogue: tracks, albums and artists with filters, sorting and paging, the
//! library search, manual edits, deletion, and the artist/album resolution every ingest and
//! enrichment path shares.

mod resolve;
pub(crate) mod rows;

use crate::auth::Caller;
use crate::db::Tx;
use crate::domain::{Album, Artist, Availability, MetadataStatus, Page, Paged, Source, Track};
use crate::{AlbumId, ArtistId, Error, Library, Result, TrackId};

pub use resolve::Resolver;
pub(crate) use rows::{AlbumRow, ArtistRow, TrackRow, ALBUM_SELECT, ARTIST_SELECT, TRACK_SELECT};

/// A bound query argument of a dynamically built query.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(String),
    Int(i64),
}

/// Collects WHERE clauses and their arguments, numbering placeholders as it goes.
#[derive(Debug, Default)]
pub(crate) struct Where {
    clauses: Vec<String>,
    args: Vec<Arg>,
}

impl Where {
    /// Adds an argument and returns its placeholder.
    pub(crate) fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }

    pub(crate) fn push(&mut self, clause: String) {
        self.clauses.push(clause);
    }

    pub(crate) fn sql(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        }
    }

    pub(crate) fn bind<'q, O>(
        &self,
        mut query: sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
        for arg in &self.args {
            query = match arg {
                Arg::Text(text) => query.bind(text.clone()),
                Arg::Int(int) => query.bind(*int),
            };
        }
        query
    }

    pub(crate) fn bind_scalar<'q, O>(
        &self,
        mut query: sqlx::query::QueryScalar<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::QueryScalar<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
        for arg in &self.args {
            query = match arg {
                Arg::Text(text) => query.bind(text.clone()),
                Arg::Int(int) => query.bind(*int),
            };
        }
        query
    }
}

/// Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern.
pub(crate) fn like_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Filters of `GET /tracks`.
#[derive(Debug, Clone, Default)]
pub struct TrackFilter {
    /// Only this source (lists newest first unless a sort is given).
    pub source: Option<Source>,
    /// Only tracks by this artist.
    pub artist_id: Option<ArtistId>,
    /// Only tracks of this album.
    pub album_id: Option<AlbumId>,
    /// Genre, case-insensitive.
    pub genre: Option<String>,
    /// Release year.
    pub year: Option<i64>,
    /// Enrichment state.
    pub metadata_status: Option<MetadataStatus>,
    /// Audio presence.
    pub availability: Option<Availability>,
    /// Substring of title, artist or album.
    pub q: Option<String>,
}

/// A sort order: a key and a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort<K> {
    /// What to sort by.
    pub key: K,
    /// Descending when true.
    pub descending: bool,
}

/// Parses `key` or `-key` with `parse_key`; `field` names the parameter for errors.
pub fn parse_sort<K>(
    text: &str,
    field: &str,
    parse_key: impl Fn(&str) -> Option<K>,
) -> Result<Sort<K>> {
    let (descending, name) = match text.strip_prefix('-') {
        Some(name) => (true, name),
        None => (false, text),
    };
    parse_key(name)
        .map(|key| Sort { key, descending })
        .ok_or_else(|| Error::invalid(field, format!("unknown sort key {name:?}")))
}

/// Sort keys of `GET /tracks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackSortKey {
    /// Title.
    Title,
    /// Artist name, then album, disc and track number.
    Artist,
    /// Album title, then disc and track number.
    Album,
    /// Year.
    Year,
    /// Disc and track number.
    TrackNumber,
    /// Duration.
    Duration,
    /// Creation time.
    CreatedAt,
    /// Last change.
    UpdatedAt,
}

impl TrackSortKey {
    /// Parses a key name as the API spells it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "title" => Self::Title,
            "artist" => Self::Artist,
            "album" => Self::Album,
            "year" => Self::Year,
            "track_number" => Self::TrackNumber,
            "duration" => Self::Duration,
            "created_at" => Self::CreatedAt,
            "updated_at" => Self::UpdatedAt,
            _ => return None,
        })
    }

    /// Names accepted by [`TrackSortKey::parse`].
    pub const NAMES: &'static [&'static str] = &[
        "title",
        "artist",
        "album",
        "year",
        "track_number",
        "duration",
        "created_at",
        "updated_at",
    ];
}

fn direction(descending: bool) -> &'static str {
    if descending {
        "DESC"
    } else {
        "ASC"
    }
}

fn track_order(sort: Sort<TrackSortKey>) -> String {
    let dir = direction(sort.descending);
    let columns: &[&str] = match sort.key {
        TrackSortKey::Title => &["LOWER(t.title)"],
        TrackSortKey::Artist => &[
            "LOWER(t.artist_name)",
            "LOWER(t.album_title)",
            "t.disc_number",
            "t.track_number",
        ],
        TrackSortKey::Album => &["LOWER(t.album_title)", "t.disc_number", "t.track_number"],
        TrackSortKey::Year => &["t.year"],
        TrackSortKey::TrackNumber => &["t.disc_number", "t.track_number"],
        TrackSortKey::Duration => &["t.duration_ms"],
        TrackSortKey::CreatedAt => &["t.created_at"],
        TrackSortKey::UpdatedAt => &["t.updated_at"],
    };
    let mut order: Vec<String> = columns
        .iter()
        .map(|column| format!("{column} {dir}"))
        .collect();
    // A unique tie-breaker keeps pages stable.
    order.push(format!("t.id {dir}"));
    order.join(", ")
}

/// Sort keys of `GET /albums`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlbumSortKey {
    /// Title.
    Title,
    /// Album artist, then title.
    Artist,
    /// Year.
    Year,
    /// Creation time (recently added).
    CreatedAt,
}

impl AlbumSortKey {
    /// Parses a key name as the API spells it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "title" => Self::Title,
            "artist" => Self::Artist,
            "year" => Self::Year,
            "created_at" => Self::CreatedAt,
            _ => return None,
        })
    }
}

/// Filters of `GET /albums`.
#[derive(Debug, Clone, Default)]
pub struct AlbumFilter {
    /// Album artist.
    pub artist_id: Option<ArtistId>,
    /// Year.
    pub year: Option<i64>,
    /// Genre, case-insensitive.
    pub genre: Option<String>,
    /// Substring of the title.
    pub q: Option<String>,
}

/// A partial update of a track (`PATCH /tracks/{id}`): `None` leaves a field alone. The
/// enrichment state is not changed.
#[derive(Debug, Clone, Default)]
pub struct TrackPatch {
    /// New title.
    pub title: Option<String>,
    /// New genre.
    pub genre: Option<String>,
    /// New year.
    pub year: Option<i64>,
    /// New track number.
    pub track_number: Option<i64>,
    /// New disc number.
    pub disc_number: Option<i64>,
}

/// A full manual metadata edit (`PUT /tracks/{id}/metadata`): the track becomes `manual`,
/// artist and album are resolved from the names given, absent fields are cleared.
#[derive(Debug, Clone, Default)]
pub struct TrackMetadata {
    /// Title (required).
    pub title: String,
    /// Track artist name.
    pub artist: Option<String>,
    /// Album title.
    pub album: Option<String>,
    /// Album artist name (defaults to the track artist).
    pub album_artist: Option<String>,
    /// Genre.
    pub genre: Option<String>,
    /// Year.
    pub year: Option<i64>,
    /// Track number.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// MusicBrainz recording id.
    pub musicbrainz_recording_id: Option<String>,
}

/// Result of `GET /search/library`.
#[derive(Debug, Clone, Default)]
pub struct LibrarySearch {
    /// Matching tracks.
    pub tracks: Vec<Track>,
    /// Matching albums.
    pub albums: Vec<Album>,
    /// Matching artists.
    pub artists: Vec<Artist>,
}

fn validate_year(year: Option<i64>) -> Result<()> {
    match year {
        Some(year) if !(0..=9999).contains(&year) => {
            Err(Error::invalid("year", "must be between 0 and 9999"))
        }
        _ => Ok(()),
    }
}

fn validate_position(field: &str, value: Option<i64>) -> Result<()> {
    match value {
        Some(value) if !(0..=100_000).contains(&value) => {
            Err(Error::invalid(field, "must be between 0 and 100000"))
        }
        _ => Ok(()),
    }
}

fn non_empty(field: &str, value: &str) -> Result<String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.chars().count() > 1000 {
        return Err(Error::invalid(field, "must be at most 1000 characters"));
    }
    Ok(value.to_string())
}

fn optional_text(field: &str, value: &Option<String>) -> Result<Option<String>> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(value) => non_empty(field, value).map(Some),
    }
}

/// Catalogue reads and edits.
impl Library {
    /// `GET /tracks`.
    pub async fn list_tracks(
        &self,
        filter: &TrackFilter,
        sort: Option<Sort<TrackSortKey>>,
        page: Page,
    ) -> Result<Paged<Track>> {
        let mut filters = Where::default();
        if let Some(source) = filter.source {
            let arg = filters.arg(Arg::Text(source.as_str().into()));
            filters.push(format!("t.source = {arg}"));
        }
        if let Some(artist_id) = &filter.artist_id {
            let arg = filters.arg(Arg::Text(artist_id.to_string()));
            filters.push(format!("t.artist_id = {arg}"));
        }
        if let Some(album_id) = &filter.album_id {
            let arg = filters.arg(Arg::Text(album_id.to_string()));
            filters.push(format!("t.album_id = {arg}"));
        }
        if let Some(genre) = &filter.genre {
            let arg = filters.arg(Arg::Text(genre.to_lowercase()));
            filters.push(format!("LOWER(t.genre) = {arg}"));
        }
        if let Some(year) = filter.year {
            let arg = filters.arg(Arg::Int(year));
            filters.push(format!("t.year = {arg}"));
        }
        if let Some(status) = filter.metadata_status {
            let arg = filters.arg(Arg::Text(status.as_str().into()));
            filters.push(format!("t.metadata_status = {arg}"));
        }
        if let Some(availability) = filter.availability {
            let arg = filters.arg(Arg::Text(availability.as_str().into()));
            filters.push(format!("t.availability = {arg}"));
        }
        if let Some(q) = filter
            .q
            .as_deref()
            .map(crate::text::name_key)
            .filter(|q| !q.is_empty())
        {
            let arg = filters.arg(Arg::Text(like_pattern(&q)));
            filters.push(format!("t.search_text LIKE {arg} ESCAPE '\\'"));
        }
        let sort = sort.unwrap_or(match filter.source {
            Some(_) => Sort {
                key: TrackSortKey::CreatedAt,
                descending: true,
            },
            None => Sort {
                key: TrackSortKey::Title,
                descending: false,
            },
        });
        self.page_tracks(&filters, &track_order(sort), page).await
    }

    pub(crate) async fn page_tracks(
        &self,
        filters: &Where,
        order: &str,
        page: Page,
    ) -> Result<Paged<Track>> {
        let pool = self.db().pool();
        let count_query = format!("SELECT COUNT(*) FROM tracks t{}", filters.sql());
        let total: i64 = filters
            .bind_scalar(sqlx::query_scalar(&count_query))
            .fetch_one(pool)
            .await?;
        let query = format!(
            "{TRACK_SELECT}{} ORDER BY {order} LIMIT {} OFFSET {}",
            filters.sql(),
            page.limit(),
            page.offset()
        );
        let rows: Vec<TrackRow> = filters.bind(sqlx::query_as(&query)).fetch_all(pool).await?;
        Ok(Paged {
            items: rows.into_iter().map(Track::from).collect(),
            total,
            page,
        })
    }

    /// `GET /tracks/{id}`.
    pub async fn get_track(&self, id: &TrackId) -> Result<Track> {
        self.find_track(id)
            .await?
            .ok_or_else(|| Error::not_found("track", id))
    }

    /// A track, or `None`.
    pub async fn find_track(&self, id: &TrackId) -> Result<Option<Track>> {
        let query = format!("{TRACK_SELECT} WHERE t.id = $1");
        Ok(sqlx::query_as::<_, TrackRow>(&query)
            .bind(id.as_str())
            .fetch_optional(self.db().pool())
            .await?
            .map(Track::from))
    }

    /// `PATCH /tracks/{id}`.
    pub async fn patch_track(
        &self,
        caller: &Caller,
        id: &TrackId,
        patch: &TrackPatch,
    ) -> Result<Track> {
        let title = patch
            .title
            .as_deref()
            .map(|title| non_empty("title", title))
            .transpose()?;
        validate_year(patch.year)?;
        validate_position("track_number", patch.track_number)?;
        validate_position("disc_number", patch.disc_number)?;
        let db = self.db();
        let mut tx = db.begin().await?;
        let current = lock_track(&mut tx, id).await?;
        may_change(caller, &current)?;
        let title = title.unwrap_or(current.title.clone());
        let search_text = crate::text::search_key(&[
            &title,
            current.artist_name.as_deref().unwrap_or(""),
            current.album_title.as_deref().unwrap_or(""),
        ]);
        let query = db.sql(
            "UPDATE tracks SET title = $2, genre = COALESCE($3, genre), year = COALESCE($4, year),
                 track_number = COALESCE($5, track_number), disc_number = COALESCE($6, disc_number),
                 search_text = $7, updated_at = {now}
             WHERE id = $1",
        );
        sqlx::query(&query)
            .bind(id.as_str())
            .bind(&title)
            .bind(patch.genre.as_deref().map(str::trim))
            .bind(patch.year)
            .bind(patch.track_number)
            .bind(patch.disc_number)
            .bind(search_text)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get_track(id).await
    }

    /// `PUT /tracks/{id}/metadata`: a manual edit; the track becomes `manual`.
    pub async fn set_track_metadata(
        &self,
        caller: &Caller,
        id: &TrackId,
        metadata: &TrackMetadata,
    ) -> Result<Track> {
        let title = non_empty("title", &metadata.title)?;
        let artist = optional_text("artist", &metadata.artist)?;
        let album = optional_text("album", &metadata.album)?;
        let album_artist =
            optional_text("album_artist", &metadata.album_artist)?.or(artist.clone());
        let genre = optional_text("genre", &metadata.genre)?;
        validate_year(metadata.year)?;
        validate_position("track_number", metadata.track_number)?;
        validate_position("disc_number", metadata.disc_number)?;
        let db = self.db();
        let mut tx = db.begin().await?;
        let current = lock_track(&mut tx, id).await?;
        may_change(caller, &current)?;
        let mut resolver = Resolver::new(db.clone());
        let artist_id = match &artist {
            Some(name) => Some(resolver.artist(&mut tx, name).await?),
            None => None,
        };
        let album_id = match &album {
            Some(title) => Some(
                resolver
                    .album(
                        &mut tx,
                        title,
                        album_artist.as_deref(),
                        metadata.year,
                        genre.as_deref(),
                    )
                    .await?,
            ),
            None => None,
        };
        let search_text = crate::text::search_key(&[
            &title,
            artist.as_deref().unwrap_or(""),
            album.as_deref().unwrap_or(""),
        ]);
        let query = db.sql(
            "UPDATE tracks SET title = $2, artist_id = $3, artist_name = $4, album_id = $5, album_title = $6,
                 album_artist_name = $7, genre = $8, year = $9, track_number = $10, disc_number = $11,
                 musicbrainz_recording_id = COALESCE($12, musicbrainz_recording_id),
                 metadata_status = 'manual', metadata_error = NULL, search_text = $13, updated_at = {now}
             WHERE id = $1",
        );
        sqlx::query(&query)
            .bind(id.as_str())
            .bind(&title)
            .bind(artist_id.as_ref().map(|id| id.to_string()))
            .bind(artist.as_deref())
            .bind(album_id.as_ref().map(|id| id.to_string()))
            .bind(album.as_deref())
            .bind(album_artist.as_deref().filter(|_| album.is_some()))
            .bind(genre.as_deref())
            .bind(metadata.year)
            .bind(metadata.track_number)
            .bind(metadata.disc_number)
            .bind(metadata.musicbrainz_recording_id.as_deref())
            .bind(search_text)
            .execute(&mut *tx)
            .await?;
        let dropped_cover = drop_orphans(
            &mut tx,
            current.album_id.as_deref(),
            current.artist_id.as_deref(),
        )
        .await?;
        tx.commit().await?;
        self.remove_cover_blobs(dropped_cover).await;
        self.get_track(id).await
    }

    /// `DELETE /tracks/{id}`: removes the row (leaving a tombstone for sync clients), its
    /// renditions, and then its blobs.
    pub async fn delete_track(&self, caller: &Caller, id: &TrackId) -> Result<()> {
        let db = self.db();
        let mut tx = db.begin().await?;
        let track = lock_track(&mut tx, id).await?;
        may_change(caller, &track)?;
        let rendition_keys: Vec<String> =
            sqlx::query_scalar("SELECT storage_uri FROM renditions WHERE track_id = $1")
                .bind(id.as_str())
                .fetch_all(&mut *tx)
                .await?;
        sqlx::query("DELETE FROM renditions WHERE track_id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        // Out of every playlist as a recorded remove (versions count adds and removes).
        self.remove_track_from_playlists(&mut tx, id).await?;
        sqlx::query("DELETE FROM tracks WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        let tombstone = db.sql("INSERT INTO tombstones (entity_kind, entity_id, deleted_at) VALUES ('track', $1, {now})");
        sqlx::query(&tombstone)
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        let dropped_cover = drop_orphans(
            &mut tx,
            track.album_id.as_deref(),
            track.artist_id.as_deref(),
        )
        .await?;
        tx.commit().await?;
        self.audio_cache().remove(id);
        self.remove_cover_blobs(dropped_cover).await;
        // The row is gone first, so no row ever points at a missing blob. A failure here leaves
        // an orphan blob, which the cleanup job reclaims.
        for key in std::iter::once(track.storage_uri)
            .chain(rendition_keys)
            .filter(|key| !key.is_empty())
        {
            if let Err(error) = self.blobs().delete_tree(&key).await {
                tracing::warn!(%key, error = %error, "could not delete blob of a deleted track");
            }
        }
        Ok(())
    }

    /// `GET /albums`.
    pub async fn list_albums(
        &self,
        filter: &AlbumFilter,
        sort: Option<Sort<AlbumSortKey>>,
        page: Page,
    ) -> Result<Paged<Album>> {
        let mut filters = Where::default();
        if let Some(artist_id) = &filter.artist_id {
            let arg = filters.arg(Arg::Text(artist_id.to_string()));
            filters.push(format!("al.artist_id = {arg}"));
        }
        if let Some(year) = filter.year {
            let arg = filters.arg(Arg::Int(year));
            filters.push(format!("al.year = {arg}"));
        }
        if let Some(genre) = &filter.genre {
            let arg = filters.arg(Arg::Text(genre.to_lowercase()));
            filters.push(format!("LOWER(al.genre) = {arg}"));
        }
        if let Some(q) = filter
            .q
            .as_deref()
            .map(crate::text::name_key)
            .filter(|q| !q.is_empty())
        {
            let arg = filters.arg(Arg::Text(like_pattern(&q)));
            filters.push(format!("al.title_key LIKE {arg} ESCAPE '\\'"));
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
        let pool = self.db().pool();
        let count_query = format!("SELECT COUNT(*) FROM albums al{}", filters.sql());
        let total: i64 = filters
            .bind_scalar(sqlx::query_scalar(&count_query))
            .fetch_one(pool)
            .await?;
        let query = format!(
            "{ALBUM_SELECT}{} ORDER BY {order} LIMIT {} OFFSET {}",
            filters.sql(),
            page.limit(),
            page.offset()
        );
        let rows: Vec<AlbumRow> = filters.bind(sqlx::query_as(&query)).fetch_all(pool).await?;
        Ok(Paged {
            items: rows.into_iter().map(Album::from).collect(),
            total,
            page,
        })
    }

    /// `GET /albums/{id}`.
    pub async fn get_album(&self, id: &AlbumId) -> Result<Album> {
        let query = format!("{ALBUM_SELECT} WHERE al.id = $1");
        sqlx::query_as::<_, AlbumRow>(&query)
            .bind(id.as_str())
            .fetch_optional(self.db().pool())
            .await?
            .map(Album::from)
            .ok_or_else(|| Error::not_found("album", id))
    }

    /// `GET /albums/{id}/tracks`, in disc and track order.
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

    /// `GET /artists`, by name.
    pub async fn list_artists(&self, q: Option<&str>, page: Page) -> Result<Paged<Artist>> {
        let mut filters = Where::default();
        if let Some(q) = q.map(crate::text::name_key).filter(|q| !q.is_empty()) {
            let arg = filters.arg(Arg::Text(like_pattern(&q)));
            filters.push(format!("ar.name_key LIKE {arg} ESCAPE '\\'"));
        }
        let pool = self.db().pool();
        let count_query = format!("SELECT COUNT(*) FROM artists ar{}", filters.sql());
        let total: i64 = filters
            .bind_scalar(sqlx::query_scalar(&count_query))
            .fetch_one(pool)
            .await?;
        let query = format!(
            "{ARTIST_SELECT}{} ORDER BY ar.name_key, ar.id LIMIT {} OFFSET {}",
            filters.sql(),
            page.limit(),
            page.offset()
        );
        let rows: Vec<ArtistRow> = filters.bind(sqlx::query_as(&query)).fetch_all(pool).await?;
        Ok(Paged {
            items: rows.into_iter().map(Artist::from).collect(),
            total,
            page,
        })
    }

    /// `GET /artists/{id}`.
    pub async fn get_artist(&self, id: &ArtistId) -> Result<Artist> {
        let query = format!("{ARTIST_SELECT} WHERE ar.id = $1");
        sqlx::query_as::<_, ArtistRow>(&query)
            .bind(id.as_str())
            .fetch_optional(self.db().pool())
            .await?
            .map(Artist::from)
            .ok_or_else(|| Error::not_found("artist", id))
    }

    /// `GET /artists/{id}/albums`, newest first.
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

    /// `GET /artists/{id}/tracks`: tracks by the artist or on their albums.
    pub async fn artist_tracks(&self, id: &ArtistId, page: Page) -> Result<Paged<Track>> {
        self.get_artist(id).await?;
        let mut filters = Where::default();
        let arg = filters.arg(Arg::Text(id.to_string()));
        filters.push(format!(
            "(t.artist_id = {arg} OR t.album_id IN (SELECT id FROM albums WHERE artist_id = {arg}))"
        ));
        let order = track_order(Sort {
            key: TrackSortKey::Album,
            descending: false,
        });
        self.page_tracks(&filters, &order, page).await
    }

    /// `GET /search/library`: case- and accent-insensitive substring match over tracks, albums
    /// and artists, at most `limit` of each.
    pub async fn search_library(&self, q: &str, limit: i64) -> Result<LibrarySearch> {
        let key = crate::text::name_key(q);
        if key.is_empty() {
            return Err(Error::invalid("q", "must not be empty"));
        }
        if !(1..=Page::MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be between 1 and {}", Page::MAX_LIMIT),
            ));
        }
        let pattern = like_pattern(&key);
        let pool = self.db().pool();
        let use_fts = self.db().backend() == crate::db::Backend::Sqlite && key.chars().count() >= 3;
        // The matching ids are found and ordered first, and only the page's rows are read in
        // full (a full row carries a cover subquery: computing it for every match would cost
        // more than the search).
        let order = "ORDER BY LENGTH(t.title), t.title, t.id";
        let (matching, tracks_arg) = if use_fts {
            // SQLite: the FTS5 trigram index, where a quoted phrase matches any substring of
            // three characters or more.
            (
                "JOIN track_search_ids m ON m.track_id = t.id
                 WHERE m.seq IN (SELECT rowid FROM tracks_search WHERE tracks_search MATCH $1)",
                format!("\"{}\"", key.replace('"', "\"\"")),
            )
        } else {
            // PostgreSQL: LIKE, which its trigram index serves (and short patterns anywhere).
            ("WHERE t.search_text LIKE $1 ESCAPE '\\'", pattern.clone())
        };
        let tracks_query = format!(
            "{TRACK_SELECT} WHERE t.id IN (SELECT t.id FROM tracks t {matching} {order} LIMIT {limit}) {order}"
        );
        let albums_query = format!(
            "{ALBUM_SELECT} WHERE al.title_key LIKE $1 ESCAPE '\\' ORDER BY LENGTH(al.title_key), al.title_key, al.id LIMIT {limit}"
        );
        let artists_query = format!(
            "{ARTIST_SELECT} WHERE ar.name_key LIKE $1 ESCAPE '\\' ORDER BY LENGTH(ar.name_key), ar.name_key, ar.id LIMIT {limit}"
        );
        let (tracks, albums, artists) = futures::try_join!(
            sqlx::query_as::<_, TrackRow>(&tracks_query)
                .bind(&tracks_arg)
                .fetch_all(pool),
            sqlx::query_as::<_, AlbumRow>(&albums_query)
                .bind(&pattern)
                .fetch_all(pool),
            sqlx::query_as::<_, ArtistRow>(&artists_query)
                .bind(&pattern)
                .fetch_all(pool),
        )?;
        Ok(LibrarySearch {
            tracks: tracks.into_iter().map(Track::from).collect(),
            albums: albums.into_iter().map(Album::from).collect(),
            artists: artists.into_iter().map(Artist::from).collect(),
        })
    }
}

/// Admins may change any track; other users only the tracks they uploaded.
fn may_change(caller: &Caller, track: &TrackRow) -> Result<()> {
    if caller.user.is_admin || track.added_by.as_deref() == Some(caller.user.id.as_str()) {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "only an admin or the user who uploaded a track may change it".into(),
        ))
    }
}

/// Reads a track inside a write transaction (the transaction already holds the write lock on
/// SQLite; PostgreSQL locks the row).
pub(crate) async fn lock_track(tx: &mut Tx, id: &TrackId) -> Result<TrackRow> {
    let query = format!("{TRACK_SELECT} WHERE t.id = $1");
    sqlx::query_as::<_, TrackRow>(&query)
        .bind(id.as_str())
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| Error::not_found("track", id))
}

/// Deletes an album left with no tracks, and an artist left with no tracks or albums.
/// Returns the deleted album's id when it had a cover: its blobs go after commit
/// ([`Library::remove_cover_blobs`]).
pub(crate) async fn drop_orphans(
    tx: &mut Tx,
    album_id: Option<&str>,
    artist_id: Option<&str>,
) -> Result<Option<String>> {
    let mut dropped_cover = None;
    if let Some(album_id) = album_id {
        let deleted: Option<(String, Option<String>)> = sqlx::query_as(
            "DELETE FROM albums WHERE id = $1
               AND NOT EXISTS (SELECT 1 FROM tracks WHERE album_id = $1)
             RETURNING id, cover_uri",
        )
        .bind(album_id)
        .fetch_optional(&mut **tx)
        .await?;
        dropped_cover = deleted.and_then(|(id, cover)| cover.map(|_| id));
    }
    if let Some(artist_id) = artist_id {
        sqlx::query(
            "DELETE FROM artists WHERE id = $1
               AND NOT EXISTS (SELECT 1 FROM tracks WHERE artist_id = $1)
               AND NOT EXISTS (SELECT 1 FROM albums WHERE artist_id = $1)",
        )
        .bind(artist_id)
        .execute(&mut **tx)
        .await?;
    }
    Ok(dropped_cover)
}

impl Library {
    /// Removes the cover and thumbnails of a deleted album (after its row is gone, so no row
    /// points at a missing blob). A failure only leaves orphan blobs, which is logged.
    pub(crate) async fn remove_cover_blobs(&self, album_id: Option<String>) {
        let Some(album_id) = album_id else { return };
        let mut keys = self
            .blobs()
            .list(&format!("covers/thumbs/{album_id}"))
            .await
            .unwrap_or_default();
        for extension in ["jpg", "png", "gif", "webp"] {
            keys.push(format!("covers/{album_id}.{extension}"));
        }
        for key in keys {
            if let Err(error) = self.blobs().delete(&key).await {
                tracing::warn!(%key, error = %crate::error_chain(&error), "could not delete a cover blob");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_pattern_escapes_wildcards() {
        assert_eq!(like_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn sort_parses_prefix() {
        let sort = parse_sort("-created_at", "sort", TrackSortKey::parse).unwrap();
        assert_eq!(
            sort,
            Sort {
                key: TrackSortKey::CreatedAt,
                descending: true
            }
        );
        assert!(parse_sort("bogus", "sort", TrackSortKey::parse).is_err());
    }
}
