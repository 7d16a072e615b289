//! Albums, artists and genres.

use axum::extract::{Path, State};
use musiclib_core::catalog::{parse_sort, AlbumFilter, AlbumSortKey};
use musiclib_core::{AlbumId, ArtistId, Library};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{AlbumOut, ArtistOut, Page, PageParams, Paging, TrackOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_albums))
        .routes(routes!(get_album))
        .routes(routes!(album_tracks))
        .routes(routes!(list_artists))
        .routes(routes!(get_artist))
        .routes(routes!(artist_albums))
        .routes(routes!(artist_tracks))
        .routes(routes!(list_genres))
}

/// A genre as tagged, with how much of the library has it.
#[derive(Debug, Serialize, ToSchema)]
pub struct LibraryGenre {
    /// Name as tagged (filter albums and tracks with `?genre=`).
    pub name: String,
    /// Tracks of this genre.
    pub track_count: i64,
    /// Albums with a track of this genre.
    pub album_count: i64,
}

/// Every genre of the library, by name, with its track and album counts.
#[utoipa::path(get, path = "/genres", tag = "albums", security(("bearer" = [])),
    responses((status = 200, body = Vec<LibraryGenre>), (status = 401, body = ErrorBody)))]
async fn list_genres(
    State(library): State<Library>,
    _auth: Auth,
) -> Result<axum::Json<Vec<LibraryGenre>>, ApiError> {
    let genres = library.catalog().genres().await?;
    Ok(axum::Json(
        genres
            .into_iter()
            .map(|genre| LibraryGenre {
                name: genre.name,
                track_count: genre.track_count,
                album_count: genre.album_count,
            })
            .collect(),
    ))
}

/// Filters, sort and paging of `GET /albums`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlbumQuery {
    /// Album artist.
    artist_id: Option<String>,
    /// Year.
    year: Option<i64>,
    /// Genre (case-insensitive).
    genre: Option<String>,
    /// Substring of the title.
    q: Option<String>,
    /// title, artist, year or created_at; `-` prefix for descending. By artist, albums
    /// without an album artist come last in either direction.
    #[param(pattern = "^-?(title|artist|year|created_at)$")]
    sort: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    /// Offset (default 0); with `cursor`, the rows skipped after the cursor's place.
    #[param(minimum = 0)]
    offset: Option<i64>,
    /// Cursor paging, for deep reads: empty for the first page, then the `next_cursor` of the
    /// page before. Offered for the sorts title and created_at.
    #[param(max_length = 2048)]
    cursor: Option<String>,
}

/// Lists albums.
#[utoipa::path(get, path = "/albums", tag = "albums", params(AlbumQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<AlbumOut>), (status = 422, body = ErrorBody)))]
async fn list_albums(
    State(library): State<Library>,
    _auth: Auth,
    Query(query): Query<AlbumQuery>,
) -> Result<axum::Json<Page<AlbumOut>>, ApiError> {
    let filter = AlbumFilter {
        artist_id: query
            .artist_id
            .as_deref()
            .map(|id| ArtistId::parse_field(id, "artist_id"))
            .transpose()?,
        year: query.year,
        genre: query.genre,
        q: query.q,
    };
    let sort = query
        .sort
        .as_deref()
        .map(|text| parse_sort(text, "sort", AlbumSortKey::parse))
        .transpose()?;
    let catalog = library.catalog();
    Ok(axum::Json(
        match Paging::new(query.limit, query.offset, query.cursor)? {
            Paging::Offset(page) => Page::from_core(
                catalog.list_albums(&filter, sort, page).await?,
                AlbumOut::from,
            ),
            Paging::Cursor {
                limit,
                cursor,
                skip,
            } => Page::from_chunk(
                super::dto::chunk_after_skip(limit, cursor, skip, |limit, cursor| {
                    let filter = &filter;
                    async move {
                        catalog
                            .list_albums_after(filter, sort, limit, &cursor)
                            .await
                    }
                })
                .await?,
                AlbumOut::from,
            ),
        },
    ))
}

/// Reads an album.
#[utoipa::path(get, path = "/albums/{id}", tag = "albums", security(("bearer" = [])),
    params(("id" = String, Path, description = "Album id")),
    responses((status = 200, body = AlbumOut), (status = 404, body = ErrorBody)))]
async fn get_album(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<AlbumOut>, ApiError> {
    Ok(axum::Json(
        library
            .catalog()
            .get_album(&AlbumId::parse(&id)?)
            .await?
            .into(),
    ))
}

/// Tracks of an album, in disc and track order.
#[utoipa::path(get, path = "/albums/{id}/tracks", tag = "albums", security(("bearer" = [])),
    params(("id" = String, Path, description = "Album id"), PageParams),
    responses((status = 200, body = Page<TrackOut>), (status = 404, body = ErrorBody)))]
async fn album_tracks(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<TrackOut>>, ApiError> {
    let tracks = library
        .catalog()
        .album_tracks(&AlbumId::parse(&id)?, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(tracks, TrackOut::from)))
}

/// Filter and paging of `GET /artists`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ArtistQuery {
    /// Substring of the name.
    q: Option<String>,
    /// Page size, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    /// Offset (default 0); with `cursor`, the rows skipped after the cursor's place.
    #[param(minimum = 0)]
    offset: Option<i64>,
    /// Cursor paging, for deep reads: empty for the first page, then the `next_cursor` of the
    /// page before.
    #[param(max_length = 2048)]
    cursor: Option<String>,
}

/// Lists artists by name.
#[utoipa::path(get, path = "/artists", tag = "artists", params(ArtistQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<ArtistOut>), (status = 422, body = ErrorBody)))]
async fn list_artists(
    State(library): State<Library>,
    _auth: Auth,
    Query(query): Query<ArtistQuery>,
) -> Result<axum::Json<Page<ArtistOut>>, ApiError> {
    let catalog = library.catalog();
    let q = query.q.as_deref();
    Ok(axum::Json(
        match Paging::new(query.limit, query.offset, query.cursor)? {
            Paging::Offset(page) => {
                Page::from_core(catalog.list_artists(q, page).await?, ArtistOut::from)
            }
            Paging::Cursor {
                limit,
                cursor,
                skip,
            } => Page::from_chunk(
                super::dto::chunk_after_skip(limit, cursor, skip, |limit, cursor| async move {
                    catalog.list_artists_after(q, limit, &cursor).await
                })
                .await?,
                ArtistOut::from,
            ),
        },
    ))
}

/// Reads an artist.
#[utoipa::path(get, path = "/artists/{id}", tag = "artists", security(("bearer" = [])),
    params(("id" = String, Path, description = "Artist id")),
    responses((status = 200, body = ArtistOut), (status = 404, body = ErrorBody)))]
async fn get_artist(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<ArtistOut>, ApiError> {
    Ok(axum::Json(
        library
            .catalog()
            .get_artist(&ArtistId::parse(&id)?)
            .await?
            .into(),
    ))
}

/// Albums of an artist, newest first.
#[utoipa::path(get, path = "/artists/{id}/albums", tag = "artists", security(("bearer" = [])),
    params(("id" = String, Path, description = "Artist id"), PageParams),
    responses((status = 200, body = Page<AlbumOut>), (status = 404, body = ErrorBody)))]
async fn artist_albums(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<AlbumOut>>, ApiError> {
    let albums = library
        .catalog()
        .artist_albums(&ArtistId::parse(&id)?, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(albums, AlbumOut::from)))
}

/// Tracks by an artist or on their albums.
#[utoipa::path(get, path = "/artists/{id}/tracks", tag = "artists", security(("bearer" = [])),
    params(("id" = String, Path, description = "Artist id"), PageParams),
    responses((status = 200, body = Page<TrackOut>), (status = 404, body = ErrorBody)))]
async fn artist_tracks(
    State(library): State<Library>,
    _auth: Auth,
    Path(id): Path<String>,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<TrackOut>>, ApiError> {
    let tracks = library
        .catalog()
        .artist_tracks(&ArtistId::parse(&id)?, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(tracks, TrackOut::from)))
}
