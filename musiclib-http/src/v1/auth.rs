//! Accounts: register, login, the current user.

use axum::extract::State;
use axum::http::StatusCode;
use musiclib_core::Library;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Credentials, TokenOut, UserOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, JsonOrForm};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(login))
        .routes(routes!(me))
}

/// Creates an account (never a superuser) and logs it in.
#[utoipa::path(post, path = "/auth/register", tag = "auth", request_body = Credentials,
    responses(
        (status = 201, description = "Registered and logged in", body = TokenOut),
        (status = 403, description = "Registration is disabled", body = ErrorBody),
        (status = 409, description = "The user name is taken", body = ErrorBody),
        (status = 422, description = "Invalid user name or a password shorter than 8 characters", body = ErrorBody),
    ))]
async fn register(
    State(library): State<Library>,
    JsonOrForm(credentials): JsonOrForm<Credentials>,
) -> Result<(StatusCode, axum::Json<TokenOut>), ApiError> {
    let token = library
        .register(&credentials.username, &credentials.password)
        .await?;
    Ok((StatusCode::CREATED, axum::Json(token.into())))
}

/// Logs in with a user name and password (JSON, or form-encoded as OAuth2 password flow).
#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = Credentials,
    responses(
        (status = 200, description = "Logged in", body = TokenOut),
        (status = 401, description = "Wrong user name or password", body = ErrorBody),
    ))]
async fn login(
    State(library): State<Library>,
    JsonOrForm(credentials): JsonOrForm<Credentials>,
) -> Result<axum::Json<TokenOut>, ApiError> {
    Ok(axum::Json(
        library
            .login(&credentials.username, &credentials.password)
            .await?
            .into(),
    ))
}

/// The logged-in user.
#[utoipa::path(get, path = "/users/me", tag = "auth", security(("bearer" = [])),
    responses((status = 200, body = UserOut), (status = 401, body = ErrorBody)))]
async fn me(Auth(caller): Auth) -> axum::Json<UserOut> {
    axum::Json(caller.user.into())
}
