//! Downloads: `POST /downloads` (fetch a remote hit into the library), `GET /downloads`
//! (the caller's, newest first), `GET /downloads/{id}`, `POST /downloads/{id}/cancel`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use musiclib_core::remote::Download;
use musiclib_core::{DownloadId, Library};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Page, PageParams, TrackOut};
use super::remote::RemoteItemIn;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(create_download, list_downloads))
        .routes(routes!(get_download))
        .routes(routes!(cancel_download))
}

/// A download of a remote hit into the library.
#[derive(Debug, Serialize, ToSchema)]
pub struct DownloadOut {
    /// Id.
    pub id: String,
    /// The track it fills: a placeholder until the download completes, then the full track
    /// (same id).
    pub track_id: String,
    /// The source (`remote`, `subsonic`).
    pub source: String,
    /// The item's id there.
    pub source_id: String,
    /// `queued`, `downloading`, `retrying` (see `next_retry_at`), `completed`, `failed` or
    /// `cancelled`.
    pub state: String,
    /// Bytes fetched so far by the current or last attempt.
    pub bytes_downloaded: Option<i64>,
    /// Bytes expected, when the source says.
    pub bytes_total: Option<i64>,
    /// Percent done (0–100), when the total is known.
    pub percent: Option<f64>,
    /// Attempts started.
    pub attempts: i64,
    /// Attempts allowed (`DOWNLOAD_MAX_ATTEMPTS`).
    pub max_attempts: i64,
    /// When the next attempt starts (RFC 3339), while `retrying`.
    pub next_retry_at: Option<String>,
    /// Why the last attempt failed, or why the download failed.
    pub error: Option<String>,
    /// Whether the library had the track with audio already (nothing was downloaded).
    pub already_in_library: bool,
    /// The job doing it (`download_task`; none when nothing had to be downloaded).
    pub job_id: Option<String>,
    /// When it was asked for (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
    /// When it completed, failed or was cancelled (RFC 3339).
    pub finished_at: Option<String>,
}

/// A download with its track, as creating one answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct DownloadCreated {
    /// The download.
    pub download: DownloadOut,
    /// Its track, as it is now (a placeholder while the download runs).
    pub track: TrackOut,
}

impl From<Download> for DownloadOut {
    fn from(download: Download) -> DownloadOut {
        DownloadOut {
            percent: download.percent(),
            id: download.id.to_string(),
            track_id: download.track_id.to_string(),
            source: download.source,
            source_id: download.source_id,
            state: download.state.as_str().into(),
            bytes_downloaded: download.bytes_downloaded,
            bytes_total: download.bytes_total,
            attempts: download.attempts,
            max_attempts: download.max_attempts,
            next_retry_at: download.next_retry_at.map(|time| time.to_rfc3339()),
            error: download.error,
            already_in_library: download.already_in_library,
            job_id: download.job_id.map(|id| id.to_string()),
            created_at: download.created_at.to_rfc3339(),
            updated_at: download.updated_at.to_rfc3339(),
            finished_at: download.finished_at.map(|time| time.to_rfc3339()),
        }
    }
}

/// Downloads a remote hit into the library: its placeholder (made now if the library has
/// none) is filled in place by a `download_task` job, which retries failures with
/// exponential backoff (`DOWNLOAD_MAX_ATTEMPTS`, `DOWNLOAD_RETRY_BASE_SECONDS`,
/// `DOWNLOAD_RETRY_MAX_SECONDS`); failures no retry fixes (gone at the source, refused, too
/// large) do not retry. A hit the library has with audio answers 200 with a `completed`
/// download and the existing track; a hit already being downloaded by the caller answers 200
/// with that download.
#[utoipa::path(post, path = "/downloads", tag = "downloads", request_body = RemoteItemIn,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Queued", body = DownloadCreated),
        (status = 200, description = "In the library already, or already being downloaded", body = DownloadCreated),
        (status = 401, body = ErrorBody),
        (status = 404, description = "The source has no such item", body = ErrorBody),
        (status = 409, description = "The source is disabled", body = ErrorBody),
        (status = 413, description = "The source says the audio is over MAX_UPLOAD_BYTES", body = ErrorBody),
        (status = 422, description = "An unknown source, or a malformed source_id", body = ErrorBody),
        (status = 503, description = "The source failed, or the job queue is unavailable", body = ErrorBody)))]
async fn create_download(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(item): Json<RemoteItemIn>,
) -> Result<(StatusCode, axum::Json<DownloadCreated>), ApiError> {
    let new = library
        .remote()
        .create_download(&caller, &item.source, &item.source_id)
        .await?;
    let track = library.catalog().get_track(&new.download.track_id).await?;
    let status = if new.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        axum::Json(DownloadCreated {
            download: new.download.into(),
            track: track.into(),
        }),
    ))
}

/// The caller's downloads, newest first.
#[utoipa::path(get, path = "/downloads", tag = "downloads", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<DownloadOut>), (status = 401, body = ErrorBody),
        (status = 422, description = "A bad limit or offset", body = ErrorBody)))]
async fn list_downloads(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<DownloadOut>>, ApiError> {
    let downloads = library.remote().downloads(&caller, paging.page()?).await?;
    Ok(axum::Json(Page::from_core(downloads, DownloadOut::from)))
}

/// One download: the caller's own (admins: anyone's).
#[utoipa::path(get, path = "/downloads/{id}", tag = "downloads",
    params(("id" = String, Path, description = "Download id")), security(("bearer" = [])),
    responses((status = 200, body = DownloadOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such download, or another user's", body = ErrorBody)))]
async fn get_download(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<DownloadOut>, ApiError> {
    let download = library
        .remote()
        .download(&caller, &DownloadId::parse(&id)?)
        .await?;
    Ok(axum::Json(download.into()))
}

/// Cancels a live download: a queued one never runs; a running one stops within a second
/// (its yt-dlp process is killed and its staging removed). The placeholder track stays.
#[utoipa::path(post, path = "/downloads/{id}/cancel", tag = "downloads",
    params(("id" = String, Path, description = "Download id")), security(("bearer" = [])),
    responses((status = 200, description = "Cancelled", body = DownloadOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such download, or another user's", body = ErrorBody),
        (status = 409, description = "It completed, failed or was cancelled already", body = ErrorBody)))]
async fn cancel_download(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<DownloadOut>, ApiError> {
    let download = library
        .remote()
        .cancel_download(&caller, &DownloadId::parse(&id)?)
        .await?;
    Ok(axum::Json(download.into()))
}
