//! Sources (the registry, the local folder scan) and jobs.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use musiclib_core::{JobId, Library};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{JobOut, JobQueued};
use crate::error::{ApiError, ErrorBody};
use crate::extract::Auth;

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_sources))
        .routes(routes!(scan_source))
        .routes(routes!(get_job))
}

/// A source: upload, the local folder, or a remote one (`remote`: yt-dlp; `subsonic`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceOut {
    /// upload, local_folder, remote or subsonic.
    pub name: String,
    /// Whether it is turned on on this server.
    pub enabled: bool,
    /// Whether `POST /sources/{name}/scan` applies.
    pub scannable: bool,
    /// The folder, for local_folder.
    pub path: Option<String>,
    /// Whether `GET /sources/{name}/search` applies (the enabled remote sources).
    pub searchable: bool,
    /// For an enabled remote source: whether it answered just now.
    pub available: Option<bool>,
    /// Why it is disabled or unavailable (the setting to change), or what it is.
    pub detail: Option<String>,
    /// Tracks from this source.
    pub track_count: i64,
}

/// Lists every source: upload, the local folder, and the remote ones (enabled or not; an
/// enabled remote source is asked, within 5 s, whether it answers).
#[utoipa::path(get, path = "/sources", tag = "sources", security(("bearer" = [])),
    responses((status = 200, body = Vec<SourceOut>), (status = 401, body = ErrorBody)))]
async fn list_sources(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<Vec<SourceOut>>, ApiError> {
    let sources = library.sources(&caller).await?;
    Ok(axum::Json(
        sources.into_iter().map(SourceOut::from).collect(),
    ))
}

impl From<musiclib_core::ingest::SourceInfo> for SourceOut {
    fn from(source: musiclib_core::ingest::SourceInfo) -> SourceOut {
        SourceOut {
            name: source.source.to_string(),
            enabled: source.enabled,
            scannable: source.scannable,
            path: source.path.map(|path| path.display().to_string()),
            searchable: source.searchable,
            available: source.available,
            detail: source.detail,
            track_count: source.track_count,
        }
    }
}

/// Starts an import of a source (admin only; today `local_folder`). Returns at once with the
/// job; a scan already queued or running is returned instead of a second one.
#[utoipa::path(post, path = "/sources/{source}/scan", tag = "sources", security(("bearer" = [])),
    params(("source" = String, Path, description = "local_folder")),
    responses(
        (status = 202, body = JobQueued),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such source", body = ErrorBody),
        (status = 422, description = "The source cannot be scanned", body = ErrorBody),
        (status = 503, description = "No folder configured, or the job queue is unavailable", body = ErrorBody),
    ))]
async fn scan_source(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(source): Path<String>,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    match source.as_str() {
        "local_folder" => {}
        "upload" | "remote" | "subsonic" => {
            return Err(ApiError::invalid(
                "source",
                format!("the {source} source cannot be scanned"),
            ))
        }
        _ => return Err(musiclib_core::Error::not_found("source", &source).into()),
    }
    let job_id = library.ingest().start_local_scan(&caller).await?;
    JobQueued::accepted(&library, &caller, job_id).await
}

/// Reads a job: its kind, state, attempts, progress and error. Users see the jobs they
/// started; admins see all.
#[utoipa::path(get, path = "/jobs/{id}", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = JobOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such job, or another user's", body = ErrorBody)))]
async fn get_job(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<JobOut>, ApiError> {
    let job = library.jobs().get(&caller, &JobId::parse(&id)?).await?;
    Ok(axum::Json(job.into()))
}
