//! Cover images of albums and tracks: bearer or `?token=` (image elements cannot send
//! headers), validators for caching (ETag, Last-Modified, 304), optional `?size=N` thumbnails.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::media::Cover;
use musiclib_core::{AlbumId, Library, TrackId};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

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
    method: Method,
    Path(id): Path<String>,
    Query(query): Query<CoverQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = AlbumId::parse(&id)?;
    let cover = library.media().album_cover(&id, query.size).await?;
    // Private: covers are behind authentication. Revalidate after a day.
    Ok(respond(&method, cover, &headers, "private, max-age=86400").await)
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
    method: Method,
    Path(id): Path<String>,
    Query(query): Query<CoverQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = TrackId::parse(&id)?;
    let cover = library.media().track_cover(&id, query.size).await?;
    // Private: covers are behind authentication. Revalidate after a day.
    Ok(respond(&method, cover, &headers, "private, max-age=86400").await)
}

/// The image with validators (304 when the client's copy is current; byte ranges work as on
/// streams).
pub(super) async fn respond(
    method: &Method,
    cover: Cover,
    request: &HeaderMap,
    cache_control: &'static str,
) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    musiclib_media_http::respond_bytes(
        method,
        request,
        &(&cover).into(),
        cover.bytes.clone(),
        headers,
        |size| {
            ApiError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range_not_satisfiable",
                format!("the range starts past the end of the {size} bytes of the image"),
            )
            .into_response()
        },
    )
    .await
}
