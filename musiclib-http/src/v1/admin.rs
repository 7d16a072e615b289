//! `/admin/*`: superusers only (401 without a token, 403 for other users; the check is
//! core's). Accounts, and the server settings, which come from the environment.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use musiclib_core::{Library, UserId};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Page, PageParams, UserOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Json, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(update_user, delete_user))
        .routes(routes!(patch_admin_settings))
        .routes(routes!(patch_admin_source))
}

/// A new account.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUserIn {
    /// User name (1–64 characters; unique, case-insensitively).
    pub username: String,
    /// Login password (8–1024 characters).
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
