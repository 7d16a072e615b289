//! Playlists: CRUD, track adds and removes (each one version), covers.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use musiclib_core::playlists::{NewPlaylist, Playlist, PlaylistChanges, Rules, MAX_COVER_BYTES};
use musiclib_core::{Library, PlaylistId, TrackId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Page, PageParams};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, MediaAuth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_playlists, create_playlist))
        .routes(routes!(
            get_playlist,
            update_playlist,
            replace_playlist,
            delete_playlist
        ))
        .routes(routes!(add_tracks, remove_tracks))
        .routes(routes!(get_cover, put_cover))
        .routes(routes!(preview_rules))
        .routes(routes!(rule_fields))
}

/// A playlist.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlaylistOut {
    id: String,
    name: String,
    description: Option<String>,
    /// Owner's user id.
    owner_id: String,
    /// Owner's user name.
    owner: String,
    /// Readable by other users.
    public: bool,
    /// Tracks in order.
    track_ids: Vec<String>,
    track_count: usize,
    /// Summed duration in ms.
    duration_ms: i64,
    /// Number of adds and removes so far; send it back as `version` to detect a conflict.
    version: i64,
    has_cover: bool,
    /// A smart playlist's rules (canonical: field names in lower case, dates as
    /// YYYY-MM-DD); its tracks follow them and cannot be edited. Null for a list.
    #[schema(value_type = Option<Object>)]
    rules: Option<serde_json::Value>,
    created_at: String,
    updated_at: String,
}

impl From<Playlist> for PlaylistOut {
    fn from(playlist: Playlist) -> Self {
        PlaylistOut {
            id: playlist.id.to_string(),
            name: playlist.name,
            description: playlist.description,
            owner_id: playlist.owner_id.to_string(),
            owner: playlist.owner_name,
            public: playlist.public,
            track_count: playlist.track_ids.len(),
            track_ids: playlist.track_ids.iter().map(ToString::to_string).collect(),
            duration_ms: playlist.duration_ms,
            version: playlist.version,
            has_cover: playlist.has_cover,
            rules: playlist.rules,
            created_at: playlist.created_at.to_rfc3339(),
            updated_at: playlist.updated_at.to_rfc3339(),
        }
    }
}

/// `POST /playlists`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaylistCreate {
    /// 1–200 characters, no control characters (surrounding spaces are trimmed).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    name: String,
    /// At most 2,000 characters; no control characters but tabs and line breaks.
    #[schema(
        max_length = 2000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    description: Option<String>,
    /// Readable by other users (default false).
    #[serde(default)]
    public: bool,
    /// Initial tracks (counted as one add when not empty).
    #[serde(default)]
    #[schema(inline, value_type = Vec<uuid::Uuid>)]
    track_ids: Vec<String>,
    /// Rules instead of `track_ids`: a smart playlist, in the form of Navidrome's `.nsp`
    /// files (a whole file is accepted: its `name`, `comment` and `public` are ignored here).
    /// `all`/`any` groups of conditions (`is`, `isNot`, `contains`, `notContains`,
    /// `startsWith`, `endsWith`, `gt`, `lt`, `inTheRange`, `before`, `after`, `inTheLast`,
    /// `notInTheLast`) over the fields listed in docs/api.md, `sort`, `order`, `limit`. An
    /// unknown field or operator is a 422 naming it (`rules.all[0].contains.comment`).
    #[schema(value_type = Option<Object>)]
    rules: Option<serde_json::Value>,
}

/// `PATCH`/`PUT /playlists/{id}`: the fields to change. Not an add or remove: the version
/// stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaylistUpdate {
    /// 1–200 characters, no control characters (surrounding spaces are trimmed).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$"
    )]
    name: Option<String>,
    /// At most 2,000 characters; no control characters but tabs and line breaks. `null`
    /// clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2000, pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$")]
    description: Option<Option<String>>,
    public: Option<bool>,
    /// The version the client last saw: another current version answers 409.
    version: Option<i64>,
    /// New rules (as in `POST /playlists`): the playlist becomes, or stays, smart.
    #[schema(value_type = Option<Object>)]
    rules: Option<serde_json::Value>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// `POST /playlists/{id}/tracks`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TracksAdd {
    /// Tracks to insert, in order (at least one).
    #[schema(inline, value_type = Vec<uuid::Uuid>, min_items = 1)]
    track_ids: Vec<String>,
    /// Where to insert (0-based, at most the playlist's length; default: the end).
    #[schema(maximum = 10000)]
    position: Option<usize>,
    /// The version the client last saw: another current version answers 409.
    version: Option<i64>,
}

/// The bytes of a JPEG, PNG, WebP or GIF image.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)]
struct CoverBytes(Vec<u8>);

/// A 0-based position in a playlist.
#[derive(ToSchema)]
#[schema(minimum = 0, maximum = 9999)]
#[allow(dead_code)]
struct Position(u32);

/// `DELETE /playlists/{id}/tracks`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TracksRemove {
    /// 0-based positions in `track_ids` to remove (at least one; a playlist holds at most
    /// 10,000 tracks).
    #[schema(min_items = 1, value_type = Vec<Position>)]
    positions: Vec<usize>,
    /// The version the client last saw: another current version answers 409.
    version: Option<i64>,
}

fn playlist_id(id: &str) -> Result<PlaylistId, ApiError> {
    Ok(PlaylistId::parse(id)?)
}

fn track_ids(ids: Vec<String>) -> Result<Vec<TrackId>, ApiError> {
    ids.iter()
        .enumerate()
        .map(|(index, id)| Ok(TrackId::parse_field(id, &format!("track_ids[{index}]"))?))
        .collect()
}

/// Lists the caller's playlists and the public ones of others, by name.
#[utoipa::path(get, path = "/playlists", tag = "playlists", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<PlaylistOut>), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn list_playlists(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(page): Query<PageParams>,
) -> Result<axum::Json<Page<PlaylistOut>>, ApiError> {
    let playlists = library.playlists().list(&caller, page.page()?).await?;
    Ok(axum::Json(Page::from_core(playlists, PlaylistOut::from)))
}

/// Creates a playlist.
#[utoipa::path(post, path = "/playlists", tag = "playlists", request_body = PlaylistCreate, security(("bearer" = [])),
    responses((status = 201, body = PlaylistOut), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn create_playlist(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<PlaylistCreate>,
) -> Result<(StatusCode, axum::Json<PlaylistOut>), ApiError> {
    let new = NewPlaylist {
        name: body.name,
        description: body.description,
        public: body.public,
        track_ids: track_ids(body.track_ids)?,
        rules: body.rules.as_ref().map(Rules::parse).transpose()?,
    };
    let playlist = library.playlists().create(&caller, new).await?;
    Ok((StatusCode::CREATED, axum::Json(playlist.into())))
}

/// Reads a playlist: the caller's own or a public one (anything else is 404).
#[utoipa::path(get, path = "/playlists/{id}", tag = "playlists", params(("id" = String, Path)), security(("bearer" = [])),
    responses((status = 200, body = PlaylistOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_playlist(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<PlaylistOut>, ApiError> {
    Ok(axum::Json(
        library
            .playlists()
            .get(&caller, &playlist_id(&id)?)
            .await?
            .into(),
    ))
}

/// Changes name, description or the public flag (owner only; 403 on someone else's public
/// playlist). With `version`, a stale one answers 409.
#[utoipa::path(patch, path = "/playlists/{id}", tag = "playlists", params(("id" = String, Path)), request_body = PlaylistUpdate,
    security(("bearer" = [])),
    responses((status = 200, body = PlaylistOut), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn update_playlist(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(body): Json<PlaylistUpdate>,
) -> Result<axum::Json<PlaylistOut>, ApiError> {
    let changes = PlaylistChanges {
        name: body.name,
        description: body.description,
        public: body.public,
        expected_version: body.version,
        rules: body.rules.as_ref().map(Rules::parse).transpose()?,
    };
    Ok(axum::Json(
        library
            .playlists()
            .update(&caller, &playlist_id(&id)?, changes)
            .await?
            .into(),
    ))
}

/// The same as `PATCH`.
#[utoipa::path(put, path = "/playlists/{id}", tag = "playlists", params(("id" = String, Path)), request_body = PlaylistUpdate,
    security(("bearer" = [])),
    responses((status = 200, body = PlaylistOut), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn replace_playlist(
    state: State<Library>,
    auth: Auth,
    id: Path<String>,
    body: Json<PlaylistUpdate>,
) -> Result<axum::Json<PlaylistOut>, ApiError> {
    update_playlist(state, auth, id, body).await
}

/// Deletes a playlist (owner only).
#[utoipa::path(delete, path = "/playlists/{id}", tag = "playlists", params(("id" = String, Path)), security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_playlist(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library
        .playlists()
        .delete(&caller, &playlist_id(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Inserts tracks at `position` (default: the end). One add: the version goes up by one.
#[utoipa::path(post, path = "/playlists/{id}/tracks", tag = "playlists", params(("id" = String, Path)), request_body = TracksAdd,
    security(("bearer" = [])),
    responses((status = 200, body = PlaylistOut), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "Stale version", body = ErrorBody), (status = 422, description = "Unknown tracks, bad position", body = ErrorBody)))]
async fn add_tracks(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(body): Json<TracksAdd>,
) -> Result<axum::Json<PlaylistOut>, ApiError> {
    let playlist = library
        .playlists()
        .add_tracks(
            &caller,
            &playlist_id(&id)?,
            track_ids(body.track_ids)?,
            body.position,
            body.version,
        )
        .await?;
    Ok(axum::Json(playlist.into()))
}

/// Removes the tracks at `positions`. One remove: the version goes up by one.
#[utoipa::path(delete, path = "/playlists/{id}/tracks", tag = "playlists", params(("id" = String, Path)), request_body = TracksRemove,
    security(("bearer" = [])),
    responses((status = 200, body = PlaylistOut), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "Stale version", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn remove_tracks(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(body): Json<TracksRemove>,
) -> Result<axum::Json<PlaylistOut>, ApiError> {
    let playlist = library
        .playlists()
        .remove_tracks(&caller, &playlist_id(&id)?, body.positions, body.version)
        .await?;
    Ok(axum::Json(playlist.into()))
}

/// Access token, for image elements (they cannot send an Authorization header).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CoverToken {
    /// Access token.
    #[allow(dead_code)]
    token: Option<String>,
}

/// The stored cover image; 404 when none is stored. Bearer or `?token=`.
#[utoipa::path(get, path = "/playlists/{id}/cover", tag = "playlists", params(("id" = String, Path), CoverToken),
    security(("bearer" = []), ("token" = [])),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, description = "Not a playlist id", body = ErrorBody)))]
async fn get_cover(
    State(library): State<Library>,
    MediaAuth(caller): MediaAuth,
    method: axum::http::Method,
    Path(id): Path<String>,
    request: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let cover = library
        .playlists()
        .cover(&caller, &playlist_id(&id)?)
        .await?;
    Ok(super::covers::respond(&method, cover, &request, "private, no-cache").await)
}

/// Stores the cover: the request body is the image (JPEG, PNG, WebP or GIF, at most 10 MiB).
#[utoipa::path(put, path = "/playlists/{id}/cover", tag = "playlists", params(("id" = String, Path)),
    request_body(content = CoverBytes, content_type = "image/*"), security(("bearer" = [])),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, description = "Not an image", body = ErrorBody)))]
async fn put_cover(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    request: axum::extract::Request,
) -> Result<StatusCode, ApiError> {
    let id = playlist_id(&id)?;
    // The owner is checked before a byte of the image is read, and the image is read only
    // up to the cover's bound.
    library.playlists().may_change(&caller, &id).await?;
    let body = crate::extract::read_body(request, MAX_COVER_BYTES).await?;
    library.playlists().set_cover(&caller, &id, body).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /playlists/rules/preview`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RulesPreview {
    /// Rules as in `POST /playlists`.
    #[schema(value_type = Object)]
    rules: serde_json::Value,
}

/// What rules select now.
#[derive(Debug, Serialize, ToSchema)]
pub struct RulesPreviewOut {
    /// How many tracks match (after `limit`).
    track_count: usize,
    /// The first 20 of them, in order.
    track_ids: Vec<String>,
    /// The rules as they would be stored (canonical).
    #[schema(value_type = Object)]
    rules: serde_json::Value,
}

/// What smart-playlist rules select now for the caller (the editor's live count), without
/// saving anything. A rule musiclib does not know is a 422 naming it.
#[utoipa::path(post, path = "/playlists/rules/preview", tag = "playlists", request_body = RulesPreview,
    security(("bearer" = [])),
    responses((status = 200, body = RulesPreviewOut), (status = 401, body = ErrorBody),
        (status = 422, description = "An unknown field, operator or key, or a value of the wrong kind: `field` names its path", body = ErrorBody)))]
async fn preview_rules(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<RulesPreview>,
) -> Result<axum::Json<RulesPreviewOut>, ApiError> {
    let rules = Rules::parse(&body.rules)?;
    let (track_count, ids) = library
        .playlists()
        .preview_rules(&caller, &rules, 20)
        .await?;
    Ok(axum::Json(RulesPreviewOut {
        track_count,
        track_ids: ids.iter().map(ToString::to_string).collect(),
        rules: rules.to_json(),
    }))
}

/// A field smart-playlist rules may name.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuleFieldOut {
    /// Its name in rules (matched without regard to case).
    name: &'static str,
    /// `text`, `number`, `date` (values `YYYY-MM-DD`; `inTheLast` takes days) or `bool`.
    kind: &'static str,
    /// The operators it takes.
    operators: Vec<&'static str>,
}

/// The fields smart-playlist rules may name, with their kinds and operators (what the
/// rules editor offers).
#[utoipa::path(get, path = "/playlists/rules/fields", tag = "playlists", security(("bearer" = [])),
    responses((status = 200, body = Vec<RuleFieldOut>), (status = 401, body = ErrorBody)))]
async fn rule_fields(Auth(_caller): Auth) -> axum::Json<Vec<RuleFieldOut>> {
    axum::Json(
        musiclib_core::playlists::rule_fields()
            .into_iter()
            .map(|field| RuleFieldOut {
                name: field.name,
                kind: field.kind,
                operators: field.operators,
            })
            .collect(),
    )
}
