//! `/admin/*`: superusers only (401 without a token, 403 for other users; the check is
//! core's). Accounts, and the server settings, which come from the environment.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use musiclib_core::jobs::{JobFilter, JobState};
use musiclib_core::{Library, UserId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{JobOut, JobQueued, Page, PageParams, UserOut};
use super::sources::SourceOut;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(update_user, delete_user))
        .routes(routes!(services))
        .routes(routes!(sources))
        .routes(routes!(settings))
        .routes(routes!(reindex))
        .routes(routes!(patch_admin_settings))
        .routes(routes!(patch_admin_source))
        .routes(routes!(list_jobs))
}

/// A job's state, to filter by.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStateIn {
    /// Waiting to run (also between retries).
    Queued,
    /// Leased to a worker.
    Running,
    /// Finished.
    Succeeded,
    /// Gave up.
    Failed,
}

impl From<JobStateIn> for JobState {
    fn from(state: JobStateIn) -> JobState {
        match state {
            JobStateIn::Queued => JobState::Queued,
            JobStateIn::Running => JobState::Running,
            JobStateIn::Succeeded => JobState::Succeeded,
            JobStateIn::Failed => JobState::Failed,
        }
    }
}

/// Which jobs to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobsQuery {
    /// Only jobs in this state.
    #[param(inline)]
    state: Option<JobStateIn>,
    /// Only jobs of this kind (`scan_local_folder`, `enrich_task`, …).
    kind: Option<String>,
}

/// Admin only: recent jobs, newest first, of every user and of the server.
#[utoipa::path(get, path = "/admin/jobs", tag = "admin", params(JobsQuery, PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<JobOut>), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn list_jobs(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(filter): Query<JobsQuery>,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<JobOut>>, ApiError> {
    let filter = JobFilter {
        state: filter.state.map(JobState::from),
        kind: filter.kind.filter(|kind| !kind.is_empty()),
    };
    let jobs = library
        .jobs()
        .list(&caller, &filter, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(jobs, JobOut::from)))
}

/// A new account.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUserIn {
    /// User name (1–64 characters, no control characters, surrounding spaces trimmed;
    /// unique, case-insensitively).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub username: String,
    /// Login password (8–1024 characters).
    #[schema(min_length = 8, max_length = 1024)]
    pub password: String,
    /// Whether the account is a superuser (default false).
    #[serde(default)]
    pub is_superuser: bool,
}

/// A change to an account.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserChangeIn {
    /// Disable (true) or enable (false) the account. Disabling signs it out everywhere.
    pub disabled: bool,
}

/// Admin only: every account, by name.
#[utoipa::path(get, path = "/admin/users", tag = "admin", params(PageParams), security(("bearer" = [])),
    responses((status = 200, body = Page<UserOut>), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn list_users(
    State(library): State<Library>,
    Auth(caller): Auth,
    Query(paging): Query<PageParams>,
) -> Result<axum::Json<Page<UserOut>>, ApiError> {
    let users = library
        .accounts()
        .list_users(&caller, paging.page()?)
        .await?;
    Ok(axum::Json(Page::from_core(users, UserOut::from)))
}

/// Admin only: creates an account, a superuser when `is_superuser`.
#[utoipa::path(post, path = "/admin/users", tag = "admin", request_body = NewUserIn, security(("bearer" = [])),
    responses((status = 201, body = UserOut), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 409, description = "The user name is taken", body = ErrorBody),
        (status = 422, description = "Invalid user name, or a password shorter than 8 characters", body = ErrorBody)))]
async fn create_user(
    State(library): State<Library>,
    Auth(caller): Auth,
    Json(new): Json<NewUserIn>,
) -> Result<(StatusCode, axum::Json<UserOut>), ApiError> {
    let user = library
        .accounts()
        .add_user(&caller, &new.username, &new.password, new.is_superuser)
        .await?;
    Ok((StatusCode::CREATED, axum::Json(user.into())))
}

/// Admin only: disables or enables an account (not the caller's own). A disabled account
/// cannot sign in on either interface, and its tokens stop working.
#[utoipa::path(patch, path = "/admin/users/{id}", tag = "admin", request_body = UserChangeIn, security(("bearer" = [])),
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, body = UserOut), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The caller's own account", body = ErrorBody),
        (status = 422, body = ErrorBody)))]
async fn update_user(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    Json(change): Json<UserChangeIn>,
) -> Result<axum::Json<UserOut>, ApiError> {
    let id = UserId::parse(&id)?;
    let user = library
        .accounts()
        .set_disabled(&caller, &id, change.disabled)
        .await?;
    Ok(axum::Json(user.into()))
}

/// Admin only: deletes an account (not the caller's own). Its playlists, likes, plays,
/// stars, ratings, play queue and settings go with it; the tracks it uploaded stay in the
/// library.
#[utoipa::path(delete, path = "/admin/users/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = String, Path, description = "User id")),
    responses((status = 204, description = "Deleted"), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The caller's own account", body = ErrorBody)))]
async fn delete_user(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    library.delete_user(&caller, &UserId::parse(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A dependency of the server and how it stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceOut {
    /// `database`, `storage`, `job_queue`, `transcoder`, `acoustid`, `coverartarchive`,
    /// `lastfm`, `listenbrainz`.
    pub name: String,
    /// `ok` (checked now), `configured` (an outside web service, set up; not probed),
    /// `disabled`, or `unavailable`.
    pub state: String,
    /// What it is and what was seen; the job queue's counts of queued, running and failed
    /// jobs. Never a secret.
    pub detail: String,
}

/// One effective server setting.
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingOut {
    /// The environment variable that sets it.
    pub name: String,
    /// Its value (null: unset); a secret that is set shows `<redacted>`.
    pub value: Option<String>,
    /// Whether it is a secret.
    pub secret: bool,
}

/// Admin only: every dependency and how it stands now.
#[utoipa::path(get, path = "/admin/services", tag = "admin", security(("bearer" = [])),
    responses((status = 200, body = Vec<ServiceOut>), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody)))]
async fn services(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<Vec<ServiceOut>>, ApiError> {
    let services = library.admin().services(&caller).await?;
    Ok(axum::Json(
        services
            .into_iter()
            .map(|service| ServiceOut {
                name: service.name.to_string(),
                state: service.state.as_str().to_string(),
                detail: service.detail,
            })
            .collect(),
    ))
}

/// Admin only: the source registry.
#[utoipa::path(get, path = "/admin/sources", tag = "admin", security(("bearer" = [])),
    responses((status = 200, body = Vec<SourceOut>), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody)))]
async fn sources(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<Vec<SourceOut>>, ApiError> {
    let sources = library.admin().sources(&caller).await?;
    Ok(axum::Json(
        sources.into_iter().map(SourceOut::from).collect(),
    ))
}

/// Admin only: the effective server settings, every secret redacted. They come from the
/// environment (or the TOML file): `PATCH` answers 501.
#[utoipa::path(get, path = "/admin/settings", tag = "admin", security(("bearer" = [])),
    responses((status = 200, body = Vec<SettingOut>), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody)))]
async fn settings(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<Vec<SettingOut>>, ApiError> {
    let settings = library.admin().settings(&caller)?;
    Ok(axum::Json(
        settings
            .into_iter()
            .map(|setting| SettingOut {
                name: setting.name.to_string(),
                value: setting.value,
                secret: setting.secret,
            })
            .collect(),
    ))
}

/// Admin only: starts a reindex (job `reindex_library`): every stored file's tags are read
/// again (tags win where they have a value; manual edits are kept) and the search index is
/// rebuilt. Follow it at `GET /jobs/{id}`; a reindex already queued or running is returned.
#[utoipa::path(post, path = "/admin/reindex", tag = "admin", security(("bearer" = [])),
    responses((status = 202, body = JobQueued), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 503, description = "The job queue is unavailable", body = ErrorBody)))]
async fn reindex(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<(StatusCode, axum::Json<JobQueued>), ApiError> {
    let job_id = library.admin().reindex(&caller).await?;
    JobQueued::accepted(&library, &caller, job_id).await
}

/// Always 501: server settings come from the environment.
#[utoipa::path(patch, path = "/admin/settings", tag = "admin", security(("bearer" = [])),
    responses((status = 401, body = ErrorBody), (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 501, description = "Always, for an admin: settings come from the environment", body = ErrorBody)))]
async fn patch_admin_settings(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<StatusCode, ApiError> {
    match library.admin().change_settings(&caller)? {}
}

/// Always 501: sources are configured in the environment.
#[utoipa::path(patch, path = "/admin/sources/{source}", tag = "admin", security(("bearer" = [])),
    params(("source" = String, Path, description = "Source name")),
    responses((status = 401, body = ErrorBody), (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 501, description = "Always, for an admin: sources are configured in the environment", body = ErrorBody)))]
async fn patch_admin_source(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(source): Path<String>,
) -> Result<StatusCode, ApiError> {
    match library.admin().change_source(&caller, &source)? {}
}
