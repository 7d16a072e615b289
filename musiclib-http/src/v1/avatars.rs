//! Users' pictures: one's own uploaded (`PUT`/`DELETE /users/me/avatar`), and anyone's read
//! (`GET /users/{id}/avatar`): the uploaded picture, or one generated from the user id.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::avatars::{Avatar, MAX_AVATAR_BYTES};
use musiclib_core::{Library, UserId};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, MediaAuth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(put_avatar, delete_avatar))
        .routes(routes!(get_avatar))
}

/// The image bytes of a request body.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
struct AvatarBytes(Vec<u8>);

/// Access token, for image elements (they cannot send an Authorization header).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AvatarToken {
    /// Access token.
    #[allow(dead_code)]
    token: Option<String>,
}

/// Stores the caller's picture: the request body is the image (JPEG, PNG, WebP or GIF, at
/// most 2 MiB, at most 8192 pixels a side).
#[utoipa::path(put, path = "/users/me/avatar", tag = "auth",
    request_body(content = AvatarBytes, content_type = "image/*"), security(("bearer" = [])),
    responses((status = 204, description = "Stored"), (status = 401, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, description = "Not an image, or too many pixels", body = ErrorBody)))]
async fn put_avatar(
    State(library): State<Library>,
    Auth(caller): Auth,
    request: axum::extract::Request,
) -> Result<StatusCode, ApiError> {
    let body = crate::extract::read_body(request, MAX_AVATAR_BYTES).await?;
    library.avatars().set(&caller, body).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes the caller's picture: the generated one shows again.
#[utoipa::path(delete, path = "/users/me/avatar", tag = "auth", security(("bearer" = [])),
    responses((status = 204, description = "Removed (or there was none)"), (status = 401, body = ErrorBody)))]
async fn delete_avatar(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<StatusCode, ApiError> {
    library.avatars().remove(&caller).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A user's picture (anyone signed in): the one they uploaded, else a PNG generated from
/// their id (the same every time). Bearer or `?token=`.
#[utoipa::path(get, path = "/users/{id}/avatar", tag = "auth", params(("id" = String, Path), AvatarToken),
    security(("bearer" = []), ("token" = [])),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_avatar(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    Path(id): Path<String>,
    Query(_token): Query<AvatarToken>,
    request: HeaderMap,
) -> Result<Response, ApiError> {
    let avatar = library.avatars().get(&caller, &UserId::parse(&id)?).await?;
    Ok(respond(avatar, &request))
}

/// The picture, or 304 when the client's copy (`If-None-Match`) is current.
pub fn respond(avatar: Avatar, request: &HeaderMap) -> Response {
    let etag = HeaderValue::from_str(&avatar.etag).expect("an etag is ascii");
    let current = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| tag.trim() == avatar.etag || tag.trim() == "*");
    let headers = [
        (header::ETAG, etag),
        // Changed by its user at any time: revalidated on each use.
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-cache"),
        ),
    ];
    if current {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (
        headers,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(avatar.mime_type),
        )],
        avatar.bytes,
    )
        .into_response()
}
