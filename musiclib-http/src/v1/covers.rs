//! Cover images of albums and tracks: bearer or `?token=` (image elements cannot send
//! headers), validators for caching (ETag, Last-Modified, 304), optional `?size=N` thumbnails.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::covers::Cover;
use musiclib_core::{AlbumId, Library, TrackId};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::conditional::{http_date, not_modified};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{MediaAuth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(album_cover))
        .routes(routes!(track_cover))
}

/// Options of a cover request.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CoverQuery {
    /// Largest edge of a thumbnail, 16–1200 pixels (cached); the original when absent.
    size: Option<u32>,
    /// Access token, for clients that cannot send an Authorization header.
    #[allow(dead_code)]
    token: Option<String>,
}

/// The cover of an album.
#[utoipa::path(get, path = "/albums/{id}/cover", tag = "albums", security(("bearer" = []), ("token" = [])),
    params(("id" = String, Path, description = "Album id"), CoverQuery),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, description = "No such album, or it has no cover", body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn album_cover(
    State(library): State<Library>,
    _auth: MediaAuth,
    Path(id): Path<String>,
    Query(query): Query<CoverQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = AlbumId::parse(&id).map_err(|_| ApiError::invalid("id", "must be an album id"))?;
    let cover = library.album_cover(&id, query.size).await?;
    Ok(respond(cover, &headers))
}

/// The cover of a track (its album's).
#[utoipa::path(get, path = "/tracks/{id}/cover", tag = "tracks", security(("bearer" = []), ("token" = [])),
    params(("id" = String, Path, description = "Track id"), CoverQuery),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, description = "No such track, or it has no cover", body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn track_cover(
    State(library): State<Library>,
    _auth: MediaAuth,
    Path(id): Path<String>,
    Query(query): Query<CoverQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = TrackId::parse(&id).map_err(|_| ApiError::invalid("id", "must be a track id"))?;
    let cover = library.track_cover(&id, query.size).await?;
    Ok(respond(cover, &headers))
}

/// 200 with the image, or 304 when the client's copy is current. If-None-Match wins over
/// If-Modified-Since (RFC 9110 §13.2.2).
fn respond(cover: Cover, request: &HeaderMap) -> Response {
    let last_modified = http_date(cover.last_modified);
    let not_modified = not_modified(request, &cover.etag, cover.last_modified);
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&cover.etag) {
        headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&last_modified) {
        headers.insert(header::LAST_MODIFIED, value);
    }
    // Private: covers are behind authentication. Revalidate after a day.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=86400"),
    );
    if not_modified {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(cover.mime_type),
    );
    (StatusCode::OK, headers, cover.bytes).into_response()
}
