//! User management for apps: `createUser`, `updateUser`, `deleteUser`, `changePassword`,
//! and users' pictures (`getAvatar`).
//! Core decides who may (admins; `changePassword` also a user for their own account).
//!
//! A Subsonic password is a musiclib *app password* (README, "Connecting a Subsonic app"):
//! `createUser` sets the new account's login password and app password to the one given, so
//! the app that made it signs in with it at once; `changePassword` and `updateUser` set the
//! app password only, so a credential an app holds in clear cannot take over the web login.
//!
//! Role flags: musiclib has one role, the superuser (`adminRole`), and every other right
//! (streaming, downloads, playlists, shares, uploads) belongs to every account. The other
//! `…Role` flags, `ldapAuthenticated`, `musicFolderId`, `maxBitRate` and `email` are
//! accepted and not stored: musiclib could not honour them, and storing them would make
//! `getUser` claim what the server does not do.

use axum::http::{header, HeaderValue};
use axum::response::IntoResponse as _;
use musiclib_core::auth::legacy::LegacyCredentials;
use musiclib_core::auth::User;

use crate::response::SubsonicError;
use crate::{Outcome, Reply, Request};

/// The clear password of a `password` parameter: as given, or `enc:` and the hex of its
/// UTF-8 bytes (either case).
fn password(request: &Request) -> Result<Option<String>, SubsonicError> {
    match request.params.get("password") {
        None => Ok(None),
        Some(raw) => LegacyCredentials::clear_password(raw)
            .map(Some)
            .ok_or_else(|| {
                SubsonicError::invalid("password", "enc: must be followed by the hex of UTF-8 text")
            }),
    }
}

/// The account named by `username`: the caller's own, or anyone's for an admin (error 50
/// for anyone else, 70 for an unknown name).
async fn named_user(request: &Request) -> Result<User, SubsonicError> {
    let username = request.params.required("username")?;
    Ok(request
        .library
        .accounts()
        .user_by_name(&request.caller, username)
        .await?)
}

/// `createUser`: `username`, `password` (plain or `enc:`), `adminRole`; the rest accepted
/// (see the module's note). `email` is required by the spec but musiclib keeps none, so its
/// absence is no error.
pub(crate) async fn create(request: &Request) -> Outcome {
    let username = request.params.required("username")?;
    let password = password(request)?.ok_or_else(|| SubsonicError::missing("password"))?;
    let is_admin = request.params.bool("adminRole")?.unwrap_or(false);
    request
        .library
        .accounts()
        .add_app_user(&request.caller, username, &password, is_admin)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `updateUser` (admins): `password` sets the app password, `adminRole` the superuser flag.
pub(crate) async fn update(request: &Request) -> Outcome {
    // Refused before the name is looked up: to others, whether an account exists is no
    // business of theirs.
    request.caller.require_admin()?;
    let user = named_user(request).await?;
    let password = password(request)?;
    let is_admin = request.params.bool("adminRole")?;
    request
        .library
        .accounts()
        .update_app_user(&request.caller, &user.id, password.as_deref(), is_admin)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `deleteUser` (admins, never their own account): the account and its personal data; the
/// tracks it uploaded stay.
pub(crate) async fn delete(request: &Request) -> Outcome {
    request.caller.require_admin()?;
    let user = named_user(request).await?;
    request
        .library
        .delete_user(&request.caller, &user.id)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `changePassword`: `username`, `password`. Sets the app password (one's own, or anyone's
/// for an admin).
pub(crate) async fn change_password(request: &Request) -> Outcome {
    let user = named_user(request).await?;
    let password = password(request)?.ok_or_else(|| SubsonicError::missing("password"))?;
    request
        .library
        .accounts()
        .set_app_password(&request.caller, &user.id, &password)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `getAvatar`: `username`'s picture (anyone signed in): the one they uploaded, else one
/// generated from their id. An unknown name is error 70.
pub(crate) async fn avatar(request: &Request) -> Outcome {
    let username = request.params.required("username")?;
    let avatar = request
        .library
        .avatars()
        .get_by_name(&request.caller, username)
        .await?;
    Ok(Reply::Media(
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(avatar.mime_type),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("private, no-cache"),
                ),
                (
                    header::ETAG,
                    HeaderValue::from_str(&avatar.etag).expect("an etag is ascii"),
                ),
            ],
            avatar.bytes,
        )
            .into_response(),
    ))
}
