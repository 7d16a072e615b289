//! Accounts: register, login, the current user.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use musiclib_core::Library;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Credentials, LegacyPasswordOut, PasswordChangeIn, TokenOut, UserOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, ClientAddress, Json, JsonOrForm, MAX_UNAUTHENTICATED_BODY_BYTES};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(login))
        .routes(routes!(me))
        .routes(routes!(change_password))
        .routes(routes!(reveal_legacy_password, rotate_legacy_password))
        .routes(routes!(admin_rotate_legacy_password))
}

/// Creates an account (never a superuser) and logs it in.
#[utoipa::path(post, path = "/auth/register", tag = "auth", request_body = Credentials,
    responses(
        (status = 201, description = "Registered and logged in", body = TokenOut),
        (status = 403, description = "Registration is disabled", body = ErrorBody),
        (status = 409, description = "The user name is taken", body = ErrorBody),
        (status = 422, description = "Invalid user name or a password shorter than 8 characters", body = ErrorBody),
        (status = 429, description = "Too many sign-ins and registrations from this address (code `rate_limited`); nothing was created", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Whole seconds until a registration is taken again"))),
    ))]
async fn register(
    State(library): State<Library>,
    ClientAddress(client): ClientAddress,
    JsonOrForm(credentials): JsonOrForm<Credentials, MAX_UNAUTHENTICATED_BODY_BYTES>,
) -> Result<(StatusCode, axum::Json<TokenOut>), ApiError> {
    let token = library
        .accounts()
        .register(&credentials.username, &credentials.password, client)
        .await?;
    Ok((StatusCode::CREATED, axum::Json(token.into())))
}

/// Logs in with a user name and password (JSON, or form-encoded as OAuth2 password flow).
///
/// Attempts are counted before the password is checked (and given back when it is right),
/// per account and client address, per address, and per account: past the limits
/// (`LOGIN_ACCOUNT_FAILURE_*`, `LOGIN_ADDRESS_FAILURE_*`), attempts are refused with a 429
/// and `Retry-After`, without the password being checked, until the budget returns. A client
/// that proved itself from its address is refused only by its own budget. Password checks
/// run one per core; with too many waiting, a 503 (code `busy`, `Retry-After`).
#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = Credentials,
    responses(
        (status = 200, description = "Logged in", body = TokenOut),
        (status = 401, description = "Wrong user name or password", body = ErrorBody),
        (status = 429, description = "Too many failed sign-ins for this account or from this address (code `rate_limited`); the password was not checked", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Whole seconds until a sign-in is checked again"))),
    ))]
async fn login(
    State(library): State<Library>,
    ClientAddress(client): ClientAddress,
    JsonOrForm(credentials): JsonOrForm<Credentials, MAX_UNAUTHENTICATED_BODY_BYTES>,
) -> Result<axum::Json<TokenOut>, ApiError> {
    // Without the connection's address (a router called directly, as in tests), the account
    // alone is throttled.
    Ok(axum::Json(
        library
            .accounts()
            .login(&credentials.username, &credentials.password, client)
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

/// Changes the caller's login password. Every token issued before stops working (on every
/// device); the answer carries a fresh token for this one.
#[utoipa::path(post, path = "/users/me/password", tag = "auth", request_body = PasswordChangeIn, security(("bearer" = [])),
    responses((status = 200, description = "Changed; a new token", body = TokenOut),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The current password is wrong", body = ErrorBody),
        (status = 422, description = "The new password is too short or too long", body = ErrorBody),
        (status = 429, description = "Too many wrong current passwords from this address (code `rate_limited`); the password was not checked", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Whole seconds until a password is checked again")))))]
async fn change_password(
    State(library): State<Library>,
    Auth(caller): Auth,
    ClientAddress(client): ClientAddress,
    Json(change): Json<PasswordChangeIn>,
) -> Result<axum::Json<TokenOut>, ApiError> {
    let token = library
        .accounts()
        .change_password(
            &caller,
            &change.current_password,
            &change.new_password,
            client,
        )
        .await?;
    Ok(axum::Json(token.into()))
}

/// The caller's app password for the Subsonic interface (`/rest`), made on first use. It is
/// separate from the login password; Subsonic apps use it with the user name.
#[utoipa::path(get, path = "/users/me/legacy-password", tag = "auth", security(("bearer" = [])),
    responses((status = 200, body = LegacyPasswordOut), (status = 401, body = ErrorBody)))]
async fn reveal_legacy_password(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<LegacyPasswordOut>, ApiError> {
    let password = library.accounts().legacy_password(&caller).await?;
    Ok(axum::Json(LegacyPasswordOut {
        username: caller.user.username,
        password,
    }))
}

/// Replaces the caller's app password with a new random one: apps using the old one must be
/// given the new one.
#[utoipa::path(post, path = "/users/me/legacy-password", tag = "auth", security(("bearer" = [])),
    responses((status = 200, body = LegacyPasswordOut), (status = 401, body = ErrorBody)))]
async fn rotate_legacy_password(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<axum::Json<LegacyPasswordOut>, ApiError> {
    let password = library
        .accounts()
        .rotate_legacy_password(&caller, &caller.user.id)
        .await?;
    Ok(axum::Json(LegacyPasswordOut {
        username: caller.user.username,
        password,
    }))
}

/// Admin only: replaces another user's app password (for example when a device was lost)
/// and returns the new one to hand over.
#[utoipa::path(post, path = "/admin/users/{id}/legacy-password", tag = "auth", security(("bearer" = [])),
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, body = LegacyPasswordOut), (status = 401, body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody)))]
async fn admin_rotate_legacy_password(
    State(library): State<Library>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<axum::Json<LegacyPasswordOut>, ApiError> {
    let id = musiclib_core::UserId::parse(&id)?;
    let password = library
        .accounts()
        .rotate_legacy_password(&caller, &id)
        .await?;
    let user = library.accounts().get_user(&id).await?;
    Ok(axum::Json(LegacyPasswordOut {
        username: user.username,
        password,
    }))
}
