//! Likes, play history and the offline sync protocol (`/sync/changes`, `/sync/push`).

use axum::extract::State;
use axum::http::StatusCode;
use musiclib_core::social::{LikeEvent, NewLike, NewPlay, PlayEvent, SyncChanges};
use musiclib_core::{Library, Timestamp, TrackId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Page, PageParams, TrackOut};
use super::playlists::PlaylistOut;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_likes, post_like))
        .routes(routes!(like_state))
        .routes(routes!(list_history, post_history))
        .routes(routes!(changes))
        .routes(routes!(cursor))
        .routes(routes!(push))
}

fn time(text: &str, field: &str) -> Result<Timestamp, ApiError> {
    Timestamp::parse_rfc3339(text).ok_or_else(|| {
        ApiError::invalid(field, "must be an RFC 3339 time, e.g. 2026-11-21T10:00:00Z")
    })
}

/// A like or unlike (`POST /likes`, and `likes` of `POST /sync/push`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LikeIn {
    /// The client's id of this event, unique per user (a repeat is ignored); 1–200 characters.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85]")]
    client_event_id: String,
    #[schema(format = Uuid)]
    track_id: String,
    /// true to like, false to unlike.
    liked: bool,
    /// When the user did it (RFC 3339): the latest event decides the state.
    #[schema(format = DateTime)]
    event_time: String,
}

/// A play (`POST /history`, and `plays` of `POST /sync/push`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryIn {
    /// The client's id of this event, unique per user (a repeat is ignored); 1–200 characters.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85]")]
    client_event_id: String,
    #[schema(format = Uuid)]
    track_id: String,
    /// When it was played (RFC 3339).
    #[schema(format = DateTime)]
    played_at: String,
    /// How long it was listened to, in seconds.
    #[schema(minimum = 0)]
    seconds_played: Option<f64>,
}

/// A track id as sent: it must be a track id (a UUID); one of no track on this server is
/// skipped by the push, not refused.
fn checked_track_id(id: String, field: &str) -> Result<String, ApiError> {
    TrackId::parse_field(&id, field)?;
    Ok(id)
}

impl LikeIn {
    fn into_core(self, field: &str) -> Result<NewLike, ApiError> {
        Ok(NewLike {
            event_time: time(&self.event_time, &format!("{field}event_time"))?,
            track_id: checked_track_id(self.track_id, &format!("{field}track_id"))?,
            liked: self.liked,
            client_event_id: self.client_event_id,
        })
    }
}

impl HistoryIn {
    fn into_core(self, field: &str) -> Result<NewPlay, ApiError> {
        Ok(NewPlay {
            played_at: time(&self.played_at, &format!("{field}played_at"))?,
            track_id: checked_track_id(self.track_id, &format!("{field}track_id"))?,
            seconds_played: self.seconds_played,
            client_event_id: self.client_event_id,
        })
    }
}

/// A stored like event.
#[derive(Debug, Serialize, ToSchema)]
pub struct LikeOut {
    client_event_id: String,
    track_id: String,
    liked: bool,
    event_time: String,
    /// Server ingestion time (µs, the sync order).
    synced_at: i64,
}

impl From<LikeEvent> for LikeOut {
    fn from(event: LikeEvent) -> Self {
        LikeOut {
            client_event_id: event.client_event_id,
            track_id: event.track_id,
            liked: event.liked,
            event_time: event.event_time.to_rfc3339(),
            synced_at: event.synced_at,
        }
    }
}

/// A stored play.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryOut {
    client_event_id: String,
    track_id: String,
    played_at: String,
    seconds_played: Option<f64>,
    /// Server ingestion time (µs, the sync order).
    synced_at: i64,
}

impl From<PlayEvent> for HistoryOut {
    fn from(event: PlayEvent) -> Self {
        HistoryOut {
            client_event_id: event.client_event_id,
            track_id: event.track_id,
            played_at: event.played_at.to_rfc3339(),
            seconds_played: event.seconds_played,
            synced_at: event.synced_at,
        }
    }
}

/// A liked track.
#[derive(Debug, Serialize, ToSchema)]
pub struct LikedOut {
    track_id: String,
    liked_at: String,
}

/// A track's like state.
#[derive(Debug, Serialize, ToSchema)]
pub struct LikeState {
    track_id: String,
    liked: bool,
    /// Time of the deciding event; null when there is none.
    event_time: Option<String>,
}

/// Lists the tracks liked now, most recently liked first.
#[utoipa::path(get, path = "/likes", tag = "likes", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<LikedOut>), (status = 401, body = ErrorBody)))]
async fn list_likes(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(page): Query<PageParams>,
) -> Result<axum::Json<Page<LikedOut>>, ApiError> {
    let liked = library.social().liked_tracks(&caller, page.page()?).await?;
    Ok(axum::Json(Page::from_core(liked, |liked| LikedOut {
        track_id: liked.track_id,
        liked_at: liked.liked_at.to_rfc3339(),
    })))
}

/// Appends a like event: 201 when new, 200 when its `client_event_id` was already stored (the
/// stored event is returned). An unknown track is 404.
#[utoipa::path(post, path = "/likes", tag = "likes", request_body = LikeIn, security(("bearer" = [])),
    responses((status = 201, body = LikeOut), (status = 200, body = LikeOut), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn post_like(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<LikeIn>,
) -> Result<(StatusCode, axum::Json<LikeOut>), ApiError> {
    let (event, created) = library
        .social()
        .record_like(&caller, body.into_core("")?)
        .await?;
    Ok((created_or_ok(created), axum::Json(event.into())))
}

/// 201 for an event stored now, 200 for a repeated client id.
fn created_or_ok(created: bool) -> StatusCode {
    if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    }
}

/// Which tracks to ask about.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateQuery {
    /// Comma-separated track ids (1–500).
    #[param(value_type = Vec<uuid::Uuid>, style = Form, explode = false, min_items = 1, max_items = 500)]
    track_ids: String,
}

/// The like state of each track, decided by the latest event time.
#[utoipa::path(get, path = "/likes/state", tag = "likes", params(StateQuery), security(("bearer" = [])),
    responses((status = 200, body = Vec<LikeState>), (status = 422, body = ErrorBody)))]
async fn like_state(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(query): Query<StateQuery>,
) -> Result<axum::Json<Vec<LikeState>>, ApiError> {
    let ids: Vec<String> = query
        .track_ids
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    for id in &ids {
        TrackId::parse_field(id, "track_ids")?;
    }
    if ids.is_empty() || ids.len() > 500 {
        return Err(ApiError::invalid(
            "track_ids",
            "must name 1 to 500 track ids, comma-separated",
        ));
    }
    let states = library.social().like_states(&caller, &ids).await?;
    Ok(axum::Json(
        states
            .into_iter()
            .map(|state| LikeState {
                track_id: state.track_id,
                liked: state.liked,
                event_time: state.event_time.map(Timestamp::to_rfc3339),
            })
            .collect(),
    ))
}

/// Pages the caller's plays, newest first.
#[utoipa::path(get, path = "/history", tag = "likes", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<HistoryOut>), (status = 401, body = ErrorBody)))]
async fn list_history(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(page): Query<PageParams>,
) -> Result<axum::Json<Page<HistoryOut>>, ApiError> {
    let plays = library.social().history(&caller, page.page()?).await?;
    Ok(axum::Json(Page::from_core(plays, HistoryOut::from)))
}

/// Records a play (a scrobble): 201 when new, 200 for a repeated `client_event_id`.
#[utoipa::path(post, path = "/history", tag = "likes", request_body = HistoryIn, security(("bearer" = [])),
    responses((status = 201, body = HistoryOut), (status = 200, body = HistoryOut), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn post_history(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<HistoryIn>,
) -> Result<(StatusCode, axum::Json<HistoryOut>), ApiError> {
    let (event, created) = library
        .social()
        .record_play(&caller, body.into_core("")?)
        .await?;
    Ok((created_or_ok(created), axum::Json(event.into())))
}

/// Where to start a pull.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// The `cursor` of the previous pull (digits); absent, empty or `0` for everything.
    #[param(pattern = r"^\s*[0-9]{0,18}\s*$")]
    since: Option<String>,
    /// Most changes in this page, 1–5000 (default 1000).
    #[param(minimum = 1, maximum = 5000)]
    limit: Option<i64>,
}

/// Deletions a client must apply.
#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    /// Tracks gone from the catalogue.
    tracks: Vec<String>,
    /// The caller's playlists that were deleted.
    playlists: Vec<String>,
}

/// One pull.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangesOut {
    /// Like events in sync order.
    likes: Vec<LikeOut>,
    /// Plays in sync order.
    plays: Vec<HistoryOut>,
    /// The caller's playlists that changed, with their track ids and versions.
    playlists: Vec<PlaylistOut>,
    /// Catalogue tracks that changed.
    tracks: Vec<TrackOut>,
    deleted: Deleted,
    /// Pass as `since` next time.
    cursor: String,
    /// More changes wait: pull again with `cursor` at once.
    has_more: bool,
}

impl From<SyncChanges> for ChangesOut {
    fn from(changes: SyncChanges) -> Self {
        ChangesOut {
            likes: changes.likes.into_iter().map(LikeOut::from).collect(),
            plays: changes.plays.into_iter().map(HistoryOut::from).collect(),
            playlists: changes
                .playlists
                .into_iter()
                .map(PlaylistOut::from)
                .collect(),
            tracks: changes.tracks.into_iter().map(TrackOut::from).collect(),
            deleted: Deleted {
                tracks: changes.deleted_tracks,
                playlists: changes.deleted_playlists,
            },
            cursor: changes.cursor.to_string(),
            has_more: changes.has_more,
        }
    }
}

/// Everything that changed for the caller in `(since, cursor]`: likes and plays (by server
/// ingestion order, so an event pushed late with an old time still arrives), the caller's
/// changed playlists, changed catalogue tracks and deletions. The cursor comes from the
/// database's sync clock and never passes a change that has not committed.
#[utoipa::path(get, path = "/sync/changes", tag = "sync", params(ChangesQuery), security(("bearer" = [])),
    responses((status = 200, body = ChangesOut), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn changes(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(query): Query<ChangesQuery>,
) -> Result<axum::Json<ChangesOut>, ApiError> {
    let since = match query.since.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(text) if text.len() > 18 || !text.bytes().all(|byte| byte.is_ascii_digit()) => {
            return Err(ApiError::invalid(
                "since",
                "must be a cursor from an earlier pull",
            ))
        }
        Some(text) => text
            .parse::<i64>()
            .map_err(|_| ApiError::invalid("since", "must be a cursor from an earlier pull"))?,
    };
    Ok(axum::Json(
        library
            .social()
            .sync_changes(&caller, since, query.limit)
            .await?
            .into(),
    ))
}

/// The place to pull from.
#[derive(Debug, Serialize, ToSchema)]
pub struct CursorOut {
    /// Pass as `since` to `/sync/changes` to get what changes after now.
    cursor: String,
}

/// The sync cursor now, without any changes: for a client that has just read what it keeps
/// offline through the other endpoints and needs only what changes from here on (a pull
/// from nothing lists the whole catalogue).
#[utoipa::path(get, path = "/sync/cursor", tag = "sync", security(("bearer" = [])),
    responses((status = 200, body = CursorOut), (status = 401, body = ErrorBody)))]
async fn cursor(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<CursorOut>, ApiError> {
    let cursor = library.social().sync_cursor(&caller).await?;
    Ok(axum::Json(CursorOut {
        cursor: cursor.to_string(),
    }))
}

/// A batch of offline events.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushIn {
    #[serde(default)]
    likes: Vec<LikeIn>,
    #[serde(default)]
    plays: Vec<HistoryIn>,
}

impl PushIn {
    /// The events of a push, their times read; a bad field is named by its place in the body.
    pub(crate) fn into_core(self) -> Result<(Vec<NewLike>, Vec<NewPlay>), ApiError> {
        let likes = self
            .likes
            .into_iter()
            .enumerate()
            .map(|(index, like)| like.into_core(&format!("likes[{index}].")))
            .collect::<Result<Vec<_>, _>>()?;
        let plays = self
            .plays
            .into_iter()
            .enumerate()
            .map(|(index, play)| play.into_core(&format!("plays[{index}].")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((likes, plays))
    }
}

/// What a push did.
#[derive(Debug, Serialize, ToSchema)]
pub struct PushOut {
    /// Events stored now.
    accepted: usize,
    /// Events whose `client_event_id` was already stored (ignored).
    duplicates: usize,
    /// Events for tracks this server does not have (not stored).
    skipped: usize,
    /// Their `client_event_id`s.
    skipped_ids: Vec<String>,
}

/// Appends like and play events (at most 5000), idempotently: a repeated `client_event_id` is
/// a duplicate, an unknown track is skipped and reported, never a rejection.
#[utoipa::path(post, path = "/sync/push", tag = "sync", request_body = PushIn, security(("bearer" = [])),
    responses((status = 200, body = PushOut), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn push(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(body): Json<PushIn>,
) -> Result<axum::Json<PushOut>, ApiError> {
    let (likes, plays) = body.into_core()?;
    let outcome = library.social().push_events(&caller, likes, plays).await?;
    Ok(axum::Json(PushOut {
        accepted: outcome.accepted,
        duplicates: outcome.duplicates,
        skipped: outcome.skipped.len(),
        skipped_ids: outcome.skipped,
    }))
}
