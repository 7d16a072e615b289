//! Sharing links: a user's shares (`/shares`) and what anyone holding a link reaches
//! (`/shared/{id}`, no account: the share's tracks, their audio, covers and lyrics, and
//! downloads when allowed). The public routes take no token: the share's id is the
//! credential, and core checks every track against it.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::domain::Track;
use musiclib_core::shares::{NewShare, Share, ShareChanges, ShareId, ShareTarget};
use musiclib_core::{AlbumId, Library, PlaylistId, Timestamp, TrackId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Page, PageParams};
use super::lyrics::LyricsOut;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_shares, create_share))
        .routes(routes!(get_share, update_share, delete_share))
        .routes(routes!(shared))
        .routes(routes!(shared_cover))
        .routes(routes!(shared_stream))
        .routes(routes!(shared_track_cover))
        .routes(routes!(shared_lyrics))
        .routes(routes!(shared_download))
}

/// The link of a share: `PUBLIC_URL` when set, else the address the request came to.
pub fn share_url(library: &Library, headers: &HeaderMap, id: &ShareId) -> String {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    musiclib_core::shares::link(
        library.config().public_url.as_deref(),
        text(header::HOST.as_str()),
        text("x-forwarded-proto").is_some_and(|proto| proto.eq_ignore_ascii_case("https")),
        id,
    )
}

/// A share, as its owner (or an admin) sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShareOut {
    /// The link's id (22 characters: 128 random bits).
    id: String,
    /// The link to give out: `PUBLIC_URL` + `/s/{id}`, or the address of this request.
    url: String,
    /// `tracks`, `album` or `playlist`.
    kind: String,
    /// The shared album (kind `album`).
    album_id: Option<String>,
    /// The shared playlist (kind `playlist`).
    playlist_id: Option<String>,
    /// The tracks it holds now, in order (an album's or a playlist's follow it; at most 1,000).
    track_ids: Vec<String>,
    /// The album's title, the playlist's name, or the first track's title.
    title: String,
    description: Option<String>,
    /// Whether visitors may download the files.
    downloadable: bool,
    /// When the link stops working; null: never.
    expires_at: Option<String>,
    /// Whether it has expired (its link answers 410).
    expired: bool,
    /// Times its page was opened.
    visit_count: i64,
    /// Times one of its tracks was played from the start.
    play_count: i64,
    last_visited_at: Option<String>,
    /// Owner's user id.
    owner_id: String,
    /// Owner's user name.
    owner: String,
    created_at: String,
    updated_at: String,
}

impl ShareOut {
    fn new(share: Share, url: String) -> ShareOut {
        let kind = share.target.kind();
        let (album_id, playlist_id) = match &share.target {
            ShareTarget::Tracks(_) => (None, None),
            ShareTarget::Album(id) => (Some(id.to_string()), None),
            ShareTarget::Playlist(id) => (None, Some(id.to_string())),
        };
        ShareOut {
            id: share.id.to_string(),
            url,
            kind: kind.to_string(),
            album_id,
            playlist_id,
            track_ids: share
                .tracks
                .iter()
                .map(|track| track.id.to_string())
                .collect(),
            title: share.title,
            description: share.description,
            downloadable: share.downloadable,
            expires_at: share.expires_at.map(Timestamp::to_rfc3339),
            expired: share.expired,
            visit_count: share.visit_count,
            play_count: share.play_count,
            last_visited_at: share.last_visited_at.map(Timestamp::to_rfc3339),
            owner_id: share.owner_id.to_string(),
            owner: share.owner_name,
            created_at: share.created_at.to_rfc3339(),
            updated_at: share.updated_at.to_rfc3339(),
        }
    }
}

/// `POST /shares`: exactly one of `track_ids`, `album_id` and `playlist_id`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ShareCreate {
    /// Tracks to share, in order (1–500).
    #[schema(inline, value_type = Option<Vec<uuid::Uuid>>, min_items = 1, max_items = 500)]
    track_ids: Option<Vec<String>>,
    /// An album to share (its tracks as they are when the link is opened).
    #[schema(value_type = Option<uuid::Uuid>)]
    album_id: Option<String>,
    /// A playlist to share: the caller's own or a public one (its tracks as they are when
    /// the link is opened).
    #[schema(value_type = Option<uuid::Uuid>)]
    playlist_id: Option<String>,
    /// Shown on the share's page: at most 1,000 characters, no control characters but tabs
    /// and line breaks.
    #[schema(
        max_length = 1000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    description: Option<String>,
    /// When the link stops working (RFC 3339, in the future, at most ten years ahead);
    /// absent: never.
    #[schema(format = DateTime)]
    expires_at: Option<String>,
    /// Whether visitors may download the files (default false).
    #[serde(default)]
    downloadable: bool,
}

/// `PATCH /shares/{id}`: the fields to change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ShareUpdate {
    /// At most 1,000 characters; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 1000, pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$")]
    description: Option<Option<String>>,
    /// RFC 3339 (a past time ends the share now); `null`: never expires.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    expires_at: Option<Option<String>>,
    downloadable: Option<bool>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

fn parse_time(value: &str) -> Result<Timestamp, ApiError> {
    Timestamp::parse_rfc3339(value).ok_or_else(|| {
        musiclib_core::Error::invalid("expires_at", "must be an RFC 3339 date and time").into()
    })
}

/// Which shares to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ShareListQuery {
    /// Every user's shares (admins only; 403 otherwise). Default: the caller's.
    #[serde(default)]
    all: bool,
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    #[param(minimum = 0)]
    offset: Option<i64>,
}

/// Lists the caller's shares (not the revoked ones), newest first; `all=true` lists every
/// user's (admins).
#[utoipa::path(get, path = "/shares", tag = "shares", params(ShareListQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<ShareOut>), (status = 401, body = ErrorBody),
        (status = 403, description = "`all` without an admin account", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn list_shares(
    State(library): State<Library>,
    Auth(caller): Auth,
    headers: HeaderMap,
    Query(query): Query<ShareListQuery>,
) -> Result<axum::Json<Page<ShareOut>>, ApiError> {
    let page = PageParams {
        limit: query.limit,
        offset: query.offset,
    }
    .page()?;
    let shares = library.shares().list(&caller, query.all, page).await?;
    Ok(axum::Json(Page::from_core(shares, |share| {
        let url = share_url(&library, &headers, &share.id);
        ShareOut::new(share, url)
    })))
}

/// Shares tracks, an album or a playlist with a link. At most 30 shares an hour per user
/// (429 with `Retry-After`) and 1,000 live ones (409).
#[utoipa::path(post, path = "/shares", tag = "shares", request_body = ShareCreate, security(("bearer" = [])),
    responses((status = 201, body = ShareOut), (status = 401, body = ErrorBody),
        (status = 409, description = "The caller has 1,000 live shares", body = ErrorBody),
        (status = 422, description = "Not exactly one of `track_ids`, `album_id`, `playlist_id`; an unknown item; a bad expiry", body = ErrorBody),
        (status = 429, description = "More than 30 shares created in an hour", body = ErrorBody)))]
async fn create_share(
    State(library): State<Library>,
    Auth(caller): Auth,
    headers: HeaderMap,
    Json(body): Json<ShareCreate>,
) -> Result<(StatusCode, axum::Json<ShareOut>), ApiError> {
    let target = match (body.track_ids, body.album_id, body.playlist_id) {
        (Some(ids), None, None) => ShareTarget::Tracks(
            ids.iter()
                .enumerate()
                .map(|(index, id)| TrackId::parse_field(id, &format!("track_ids[{index}]")))
                .collect::<Result<_, _>>()?,
        ),
        (None, Some(id), None) => ShareTarget::Album(AlbumId::parse_field(&id, "album_id")?),
        (None, None, Some(id)) => {
            ShareTarget::Playlist(PlaylistId::parse_field(&id, "playlist_id")?)
        }
        _ => {
            return Err(musiclib_core::Error::invalid(
                "track_ids",
                "give exactly one of track_ids, album_id and playlist_id",
            )
            .into())
        }
    };
    let new = NewShare {
        target,
        description: body.description,
        expires_at: body.expires_at.as_deref().map(parse_time).transpose()?,
        downloadable: body.downloadable,
    };
    let share = library.shares().create(&caller, new).await?;
    let url = share_url(&library, &headers, &share.id);
    Ok((StatusCode::CREATED, axum::Json(ShareOut::new(share, url))))
}

/// One of the caller's shares (any, for an admin).
#[utoipa::path(get, path = "/shares/{id}", tag = "shares", params(("id" = String, Path)), security(("bearer" = [])),
    responses((status = 200, body = ShareOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_share(
    State(library): State<Library>,
    Auth(caller): Auth,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<axum::Json<ShareOut>, ApiError> {
    let id = ShareId::parse(&id)?;
    let share = library.shares().get(&caller, &id).await?;
    Ok(axum::Json(ShareOut::new(
        share,
        share_url(&library, &headers, &id),
    )))
}

/// Changes a share's description, expiry or download permission (its owner or an admin).
#[utoipa::path(patch, path = "/shares/{id}", tag = "shares", params(("id" = String, Path)), request_body = ShareUpdate,
    security(("bearer" = [])),
    responses((status = 200, body = ShareOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn update_share(
    State(library): State<Library>,
    Auth(caller): Auth,
    headers: HeaderMap,
    Path(id): Path<String>,
    Json(body): Json<ShareUpdate>,
) -> Result<axum::Json<ShareOut>, ApiError> {
    let id = ShareId::parse(&id)?;
    let changes = ShareChanges {
        description: body.description,
        expires_at: match body.expires_at {
            Some(Some(at)) => Some(Some(parse_time(&at)?)),
            Some(None) => Some(None),
            None => None,
        },
        downloadable: body.downloadable,
    };
    let share = library.shares().update(&caller, &id, changes).await?;
    Ok(axum::Json(ShareOut::new(
        share,
        share_url(&library, &headers, &id),
    )))
}

/// Revokes a share (its owner or an admin): its link answers 410 from now on.
#[utoipa::path(delete, path = "/shares/{id}", tag = "shares", params(("id" = String, Path)), security(("bearer" = [])),
    responses((status = 204, description = "Revoked"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_share(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library
        .shares()
        .revoke(&caller, &ShareId::parse(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

// -------------------------------------------------------------------- what a link opens

/// A track of a share, as its page lists it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharedTrackOut {
    id: String,
    title: String,
    artist: Option<String>,
    album: Option<String>,
    album_artist: Option<String>,
    track_number: Option<i64>,
    disc_number: Option<i64>,
    year: Option<i64>,
    duration_ms: Option<i64>,
    /// Audio format (`mp3`, `flac`, …).
    format: Option<String>,
    /// Size of the file in bytes (what a download takes).
    size_bytes: Option<i64>,
    /// Whether `/shared/{id}/tracks/{track}/cover` has an image.
    has_cover: bool,
}

impl From<Track> for SharedTrackOut {
    fn from(track: Track) -> Self {
        SharedTrackOut {
            id: track.id.to_string(),
            title: track.title,
            artist: track.artist_name,
            album: track.album_title,
            album_artist: track.album_artist_name,
            track_number: track.track_number,
            disc_number: track.disc_number,
            year: track.year,
            duration_ms: track.duration_ms,
            format: track.format,
            size_bytes: track.size_bytes,
            has_cover: track.has_cover,
        }
    }
}

/// A share as anyone with its link sees it: no ids of users, playlists or albums.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharedOut {
    id: String,
    /// `tracks`, `album` or `playlist`.
    kind: String,
    /// The album's title, the playlist's name, or the first track's title.
    title: String,
    description: Option<String>,
    /// Who shared it (their user name).
    shared_by: String,
    /// Whether the files may be downloaded (`/shared/{id}/tracks/{track}/download`).
    downloadable: bool,
    /// When the link stops working; null: never.
    expires_at: Option<String>,
    /// The tracks, in order (at most 1,000).
    tracks: Vec<SharedTrackOut>,
}

fn share_id(id: &str) -> Result<ShareId, ApiError> {
    Ok(ShareId::parse(id)?)
}

/// Opens a share (no account: the id is the credential), counting a visit. 410 once it has
/// expired or was revoked.
#[utoipa::path(get, path = "/shared/{id}", tag = "shares", params(("id" = String, Path, description = "Share id")),
    responses((status = 200, body = SharedOut), (status = 404, body = ErrorBody),
        (status = 410, description = "Expired or revoked", body = ErrorBody)))]
async fn shared(
    State(library): State<Library>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let share = library.shares().visit(&share_id(&id)?).await?;
    let out = SharedOut {
        id: share.id.to_string(),
        kind: share.target.kind().to_string(),
        title: share.title,
        description: share.description,
        shared_by: share.owner_name,
        downloadable: share.downloadable,
        expires_at: share.expires_at.map(Timestamp::to_rfc3339),
        tracks: share.tracks.into_iter().map(SharedTrackOut::from).collect(),
    };
    Ok((
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        axum::Json(out),
    )
        .into_response())
}

/// A cover's size.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SharedCoverQuery {
    /// Largest edge of a thumbnail, 16–1200 pixels; the original when absent.
    size: Option<u32>,
}

/// The share's picture: the album's cover, the playlist's, or its first track's.
#[utoipa::path(get, path = "/shared/{id}/cover", tag = "shares",
    params(("id" = String, Path, description = "Share id"), SharedCoverQuery),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 404, description = "No such share, or no cover", body = ErrorBody),
        (status = 410, description = "Expired or revoked", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn shared_cover(
    State(library): State<Library>,
    method: Method,
    Path(id): Path<String>,
    Query(query): Query<SharedCoverQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let cover = library.shares().cover(&share_id(&id)?, query.size).await?;
    // Public for as long as the link lives: revalidated every hour.
    Ok(super::covers::respond(&method, cover, &headers, "public, max-age=3600").await)
}

/// Streams one of the share's tracks (its original audio, with byte ranges as `/stream/{id}`).
/// A request from the first byte counts a play. A track outside the share is 404.
#[utoipa::path(get, path = "/shared/{id}/tracks/{track}/stream", tag = "shares",
    params(("id" = String, Path, description = "Share id"), ("track" = String, Path, description = "Track id"),
        ("Range" = Option<String>, Header, description = "One byte range")),
    responses(
        (status = 200, description = "The whole file", content_type = "audio/*"),
        (status = 206, description = "The requested range", content_type = "audio/*"),
        (status = 304, description = "Not modified"),
        (status = 404, description = "No such share, or the track is not in it", body = ErrorBody),
        (status = 409, description = "A placeholder track without audio", body = ErrorBody),
        (status = 410, description = "Expired or revoked", body = ErrorBody),
        (status = 416, description = "The range starts past the end", body = ErrorBody)))]
async fn shared_stream(
    State(library): State<Library>,
    method: Method,
    Path((id, track)): Path<(String, String)>,
    request: HeaderMap,
) -> Result<Response, ApiError> {
    let id = share_id(&id)?;
    let track = TrackId::parse(&track)?;
    // A play: a GET from the first byte that is more than a probe (Safari asks for
    // `bytes=0-1` before it plays).
    let from_start = method == Method::GET
        && request
            .get(header::RANGE)
            .and_then(|value| value.to_str().ok())
            .is_none_or(|range| match range.trim().strip_prefix("bytes=0-") {
                Some("") => true,
                Some(end) => end.parse::<u64>().is_ok_and(|end| end >= 65_535),
                None => false,
            });
    let audio = library.shares().audio(&id, &track, from_start).await?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    super::stream::send_stored(&library, &method, &request, &audio, headers).await
}

/// Downloads one of the share's tracks as a file (when its owner allowed downloads; 403
/// otherwise).
#[utoipa::path(get, path = "/shared/{id}/tracks/{track}/download", tag = "shares",
    params(("id" = String, Path, description = "Share id"), ("track" = String, Path, description = "Track id")),
    responses(
        (status = 200, description = "The file, as an attachment", content_type = "audio/*"),
        (status = 206, description = "The requested range", content_type = "audio/*"),
        (status = 304, description = "Not modified"),
        (status = 403, description = "Downloads are not allowed for this share", body = ErrorBody),
        (status = 404, description = "No such share, or the track is not in it", body = ErrorBody),
        (status = 409, description = "A placeholder track without audio", body = ErrorBody),
        (status = 410, description = "Expired or revoked", body = ErrorBody),
        (status = 416, description = "The range starts past the end", body = ErrorBody)))]
async fn shared_download(
    State(library): State<Library>,
    method: Method,
    Path((id, track)): Path<(String, String)>,
    request: HeaderMap,
) -> Result<Response, ApiError> {
    let id = share_id(&id)?;
    let track = TrackId::parse(&track)?;
    let (found, audio) = library.shares().download(&id, &track).await?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    headers.insert(header::CONTENT_DISPOSITION, attachment(&found));
    super::stream::send_stored(&library, &method, &request, &audio, headers).await
}

/// `attachment; filename="Artist - Title.ext"; filename*=UTF-8''…`: an ASCII fallback and
/// the name as it is (RFC 6266).
fn attachment(track: &Track) -> HeaderValue {
    let name = match &track.artist_name {
        Some(artist) => format!("{artist} - {}", track.title),
        None => track.title.clone(),
    };
    let extension = track.format.as_deref().unwrap_or("audio");
    let name: String = name
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '/' | '\\'))
        .take(150)
        .collect();
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " -_.,()&'".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = form_urlencoded::byte_serialize(format!("{name}.{extension}").as_bytes())
        .collect::<String>()
        .replace('+', "%20");
    HeaderValue::from_str(&format!(
        "attachment; filename=\"{ascii}.{extension}\"; filename*=UTF-8''{encoded}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

/// The cover of one of the share's tracks.
#[utoipa::path(get, path = "/shared/{id}/tracks/{track}/cover", tag = "shares",
    params(("id" = String, Path, description = "Share id"), ("track" = String, Path, description = "Track id"), SharedCoverQuery),
    responses((status = 200, description = "The image", content_type = "image/*"), (status = 304, description = "Not modified"),
        (status = 404, description = "No such share, the track is not in it, or it has no cover", body = ErrorBody),
        (status = 410, description = "Expired or revoked", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn shared_track_cover(
    State(library): State<Library>,
    method: Method,
    Path((id, track)): Path<(String, String)>,
    Query(query): Query<SharedCoverQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let cover = library
        .shares()
        .track_cover(&share_id(&id)?, &TrackId::parse(&track)?, query.size)
        .await?;
    Ok(super::covers::respond(&method, cover, &headers, "public, max-age=3600").await)
}

/// The lyrics of one of the share's tracks (as `/tracks/{id}/lyrics`).
#[utoipa::path(get, path = "/shared/{id}/tracks/{track}/lyrics", tag = "shares",
    params(("id" = String, Path, description = "Share id"), ("track" = String, Path, description = "Track id")),
    responses((status = 200, body = LyricsOut),
        (status = 404, description = "No such share, or the track is not in it", body = ErrorBody),
        (status = 410, description = "Expired or revoked", body = ErrorBody)))]
async fn shared_lyrics(
    State(library): State<Library>,
    Path((id, track)): Path<(String, String)>,
) -> Result<axum::Json<LyricsOut>, ApiError> {
    let record = library
        .shares()
        .lyrics(&share_id(&id)?, &TrackId::parse(&track)?)
        .await?;
    Ok(axum::Json(record.into()))
}
