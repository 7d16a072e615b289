//! `GET /search/library`.

use axum::extract::State;
use musiclib_core::Library;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{AlbumOut, ArtistOut, TrackOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new().routes(routes!(search_library))
}

/// Parameters of the library search.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Text to find (case- and accent-insensitive substring; required, not empty). A query
    /// with no letter or digit finds nothing.
    #[param(required = true, min_length = 1)]
    q: Option<String>,
    /// Most results of each kind, 1–200 (default 20).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// Matches of a library search, shortest names first.
#[derive(Debug, Serialize, ToSchema)]
pub struct LibrarySearchResponse {
    /// The query as given.
    pub query: String,
    /// Matching tracks (title, artist or album).
    pub tracks: Vec<TrackOut>,
    /// Matching albums (title).
    pub albums: Vec<AlbumOut>,
    /// Matching artists (name).
    pub artists: Vec<ArtistOut>,
}

/// Searches tracks, albums and artists of the library.
#[utoipa::path(get, path = "/search/library", tag = "search", params(SearchQuery), security(("bearer" = [])),
    responses((status = 200, body = LibrarySearchResponse), (status = 422, description = "Missing or empty q", body = ErrorBody)))]
async fn search_library(
    State(library): State<Library>,
    _auth: Auth,
    Query(query): Query<SearchQuery>,
) -> Result<axum::Json<LibrarySearchResponse>, ApiError> {
    let q = query
        .q
        .ok_or_else(|| ApiError::invalid("q", "is required"))?;
    let found = library
        .catalog()
        .search_library(&q, query.limit.unwrap_or(20))
        .await?;
    Ok(axum::Json(LibrarySearchResponse {
        query: q,
        tracks: found.tracks.into_iter().map(TrackOut::from).collect(),
        albums: found.albums.into_iter().map(AlbumOut::from).collect(),
        artists: found.artists.into_iter().map(ArtistOut::from).collect(),
    }))
}
