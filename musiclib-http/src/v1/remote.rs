//! Remote sources: `GET /search` (every enabled remote source at once),
//! `GET /sources/{source}/search` (one), `POST /tracks/remote` (save a hit as a placeholder)
//! and `POST /tracks/{id}/materialize` (fetch a placeholder's audio). Any signed-in user.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use musiclib_core::remote::{Materialize, SearchAll, SearchHit};
use musiclib_core::{Library, TrackId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::TrackOut;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(search_all))
        .routes(routes!(search_source))
        .routes(routes!(save_remote))
        .routes(routes!(materialize))
}

/// A remote item: what `POST /tracks/remote` and `POST /downloads` take.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteItemIn {
    /// The source: `remote` (yt-dlp: YouTube, YouTube Music) or `subsonic`.
    #[schema(pattern = "^(remote|subsonic)$")]
    pub source: String,
    /// The item's id there, as a search hit gives it (1–128 of letters, digits, `_ - . :`).
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[A-Za-z0-9_:][A-Za-z0-9_.:-]*$"
    )]
    pub source_id: String,
}

/// Saves a remote hit as a placeholder track: no audio yet (`availability` `placeholder`),
/// its artist and album resolved and carrying the remote identity. Idempotent per (source,
/// source_id): 201 the first time, 200 with the same track after.
#[utoipa::path(post, path = "/tracks/remote", tag = "sources", request_body = RemoteItemIn,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Saved", body = TrackOut),
        (status = 200, description = "The library had it already", body = TrackOut),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The source has no such item", body = ErrorBody),
        (status = 409, description = "The source is disabled", body = ErrorBody),
        (status = 422, description = "An unknown source, or a malformed source_id", body = ErrorBody),
        (status = 503, description = "The source failed or did not answer", body = ErrorBody)))]
async fn save_remote(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(item): Json<RemoteItemIn>,
) -> Result<(StatusCode, axum::Json<TrackOut>), ApiError> {
    let saved = library
        .remote()
        .save(&caller, &item.source, &item.source_id)
        .await?;
    let status = if saved.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(saved.track.into())))
}

/// A fetch of a placeholder's audio was queued (or was already in flight).
#[derive(Debug, Serialize, ToSchema)]
pub struct MaterializeQueued {
    /// The job (`materialize_track`, or a `download_task` of the same track already in
    /// flight); its owner can follow it at `GET /api/v1/jobs/{id}`, anyone can watch the
    /// track's `availability` turn `available`.
    pub job_id: String,
    /// `queued` or `running`.
    pub state: String,
    /// The track it fills in place.
    pub track_id: String,
}

/// Fetches a placeholder's audio into the same track (same id: playlists, likes and history
/// keep pointing at it), then queues its enrichment. A fetch already in flight is answered,
/// not doubled; a track that has its audio answers 200 with the track.
#[utoipa::path(post, path = "/tracks/{id}/materialize", tag = "sources",
    params(("id" = String, Path, description = "Track id")), security(("bearer" = [])),
    responses(
        (status = 202, description = "The fetch is queued or running", body = MaterializeQueued),
        (status = 200, description = "The track has its audio already", body = TrackOut),
        (status = 401, body = ErrorBody),
        (status = 404, description = "No such track", body = ErrorBody),
        (status = 409, description = "Its source is disabled", body = ErrorBody),
        (status = 422, description = "The track does not come from a remote source", body = ErrorBody),
        (status = 503, description = "The job queue is unavailable", body = ErrorBody)))]
async fn materialize(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let id = TrackId::parse(&id)?;
    match library.remote().materialize(&caller, &id).await? {
        Materialize::Ready(track) => {
            Ok((StatusCode::OK, axum::Json(TrackOut::from(*track))).into_response())
        }
        Materialize::Queued { job_id, state } => Ok((
            StatusCode::ACCEPTED,
            axum::Json(MaterializeQueued {
                job_id: job_id.to_string(),
                state: state.as_str().into(),
                track_id: id.to_string(),
            }),
        )
            .into_response()),
    }
}

/// A remote search.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RemoteSearchQuery {
    /// What to look for (1–200 characters).
    #[param(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub q: String,
    /// Hits per source, 1–50 (default 20).
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<usize>,
}

/// Something a remote source has.
#[derive(Debug, Serialize, ToSchema)]
pub struct RemoteHitOut {
    /// The source (`remote`, `subsonic`).
    pub source: String,
    /// Its id there; with `source`, what `POST /tracks/remote` and `POST /downloads` take.
    pub source_id: String,
    /// Title.
    pub title: String,
    /// Artist.
    pub artist: Option<String>,
    /// Album.
    pub album: Option<String>,
    /// Length in ms.
    pub duration_ms: Option<i64>,
    /// Release year.
    pub year: Option<i64>,
    /// A picture URL (null when the source has none that needs no credentials).
    pub thumbnail: Option<String>,
    /// Size of the audio a download would fetch, when the source says.
    pub size_bytes: Option<i64>,
    /// Whether the library has a track for it (with audio or a placeholder).
    pub in_library: bool,
    /// That track.
    pub track_id: Option<String>,
    /// Its availability (`available`, `placeholder`, …).
    pub availability: Option<String>,
}

impl From<SearchHit> for RemoteHitOut {
    fn from(found: SearchHit) -> RemoteHitOut {
        let hit = found.hit;
        RemoteHitOut {
            source: hit.source,
            source_id: hit.source_id,
            title: hit.title,
            artist: hit.artist,
            album: hit.album,
            duration_ms: hit.duration_ms,
            year: hit.year,
            thumbnail: hit.thumbnail,
            size_bytes: hit.size_bytes,
            in_library: found.in_library,
            track_id: found.track_id.map(|id| id.to_string()),
            availability: found
                .availability
                .map(|availability| availability.to_string()),
        }
    }
}

/// How one source answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceSearchOut {
    /// The source.
    pub source: String,
    /// Whether it answered.
    pub ok: bool,
    /// Why not (unreachable, refused, rate-limited, no answer within
    /// `REMOTE_SEARCH_TIMEOUT_SECONDS`).
    pub error: Option<String>,
    /// Hits it gave.
    pub count: usize,
    /// How long it took, in ms.
    pub took_ms: u64,
}

/// Every enabled source's hits, and how each source answered.
#[derive(Debug, Serialize, ToSchema)]
pub struct RemoteSearchOut {
    /// Hits, source by source.
    pub hits: Vec<RemoteHitOut>,
    /// One entry per enabled source: a failing one is reported here, the others still answer.
    pub sources: Vec<SourceSearchOut>,
}

impl From<SearchAll> for RemoteSearchOut {
    fn from(all: SearchAll) -> RemoteSearchOut {
        RemoteSearchOut {
            hits: all.hits.into_iter().map(RemoteHitOut::from).collect(),
            sources: all
                .sources
                .into_iter()
                .map(|outcome| SourceSearchOut {
                    source: outcome.source,
                    ok: outcome.ok,
                    error: outcome.error,
                    count: outcome.count,
                    took_ms: outcome.took_ms,
                })
                .collect(),
        }
    }
}

/// One source's hits.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceHitsOut {
    /// Hits.
    pub hits: Vec<RemoteHitOut>,
}

/// Searches every enabled remote source at once, each within `REMOTE_SEARCH_TIMEOUT_SECONDS`
/// (10 by default). A source that fails or is slow is reported in `sources`; the others'
/// hits still come.
#[utoipa::path(get, path = "/search", tag = "sources", params(RemoteSearchQuery), security(("bearer" = [])),
    responses((status = 200, body = RemoteSearchOut), (status = 401, body = ErrorBody),
        (status = 422, description = "An empty or too long query, or a bad limit", body = ErrorBody)))]
async fn search_all(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(query): Query<RemoteSearchQuery>,
) -> Result<axum::Json<RemoteSearchOut>, ApiError> {
    let all = library
        .remote()
        .search(&caller, &query.q, query.limit)
        .await?;
    Ok(axum::Json(all.into()))
}

/// Searches one remote source.
#[utoipa::path(get, path = "/sources/{source}/search", tag = "sources", params(("source" = String, Path, description = "A remote source: remote or subsonic"), RemoteSearchQuery),
    security(("bearer" = [])),
    responses((status = 200, body = SourceHitsOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such source", body = ErrorBody),
        (status = 409, description = "The source is disabled, or cannot be searched (upload, local_folder)", body = ErrorBody),
        (status = 422, description = "An empty or too long query, or a bad limit", body = ErrorBody),
        (status = 503, description = "The source failed or did not answer in time", body = ErrorBody)))]
async fn search_source(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(source): Path<String>,
    Query(query): Query<RemoteSearchQuery>,
) -> Result<axum::Json<SourceHitsOut>, ApiError> {
    let hits = library
        .remote()
        .search_source(&caller, &source, &query.q, query.limit)
        .await?;
    Ok(axum::Json(SourceHitsOut {
        hits: hits.into_iter().map(RemoteHitOut::from).collect(),
    }))
}
