//! System, user and scanning methods.

use crate::response::{Element, Scalar, SubsonicError};
use crate::{Outcome, Reply, Request};

/// `getOpenSubsonicExtensions` (no credentials needed).
pub(crate) fn extensions(library: &musiclib_core::Library) -> Element {
    // The payload is a bare list: JSON `"openSubsonicExtensions": [ … ]`.
    let items = crate::extensions(library)
        .into_iter()
        .map(|(name, versions)| {
            Element::new("openSubsonicExtensions")
                .attr("name", name)
                .values(
                    "versions",
                    versions
                        .iter()
                        .map(|version| Scalar::Int(*version))
                        .collect(),
                )
        })
        .collect();
    Element::bare().list("openSubsonicExtensions", items)
}

pub(crate) async fn ping(_request: &Request) -> Outcome {
    Ok(Reply::Envelope(None))
}

/// `getLicense`: always valid (musiclib is free software).
pub(crate) async fn license(_request: &Request) -> Outcome {
    Ok(Reply::Envelope(Some(
        Element::new("license").attr("valid", true),
    )))
}

/// `tokenInfo` (`apiKeyAuthentication`): whose key this is.
pub(crate) async fn token_info(request: &Request) -> Outcome {
    Ok(Reply::Envelope(Some(
        Element::new("tokenInfo").attr("username", request.caller.user.username.as_str()),
    )))
}

/// `getUser`: the caller, or anyone for an admin (error 50 otherwise).
pub(crate) async fn user(request: &Request) -> Outcome {
    let username = request.params.required("username")?;
    let user = request
        .library
        .accounts()
        .user_by_name(&request.caller, username)
        .await?;
    Ok(Reply::Envelope(Some(user_element(request, &user).await?)))
}

/// `getUsers`: every account (admins; error 50 otherwise).
pub(crate) async fn users(request: &Request) -> Outcome {
    let users = request
        .library
        .accounts()
        .all_users(&request.caller)
        .await?;
    let mut elements = Vec::with_capacity(users.len());
    for user in &users {
        elements.push(user_element(request, user).await?);
    }
    Ok(Reply::Envelope(Some(
        Element::new("users").list("user", elements),
    )))
}

/// A `user` element: roles follow what musiclib lets every user do, `adminRole` the
/// superuser flag, `scrobblingEnabled` the caller's own setting (others': true).
async fn user_element(
    request: &Request,
    user: &musiclib_core::auth::User,
) -> Result<Element, SubsonicError> {
    let scrobbling = if user.id == request.caller.user.id {
        request
            .library
            .settings()
            .get(&request.caller)
            .await?
            .settings
            .scrobbling
    } else {
        true
    };
    Ok(Element::new("user")
        .attr("username", user.username.as_str())
        .attr("scrobblingEnabled", scrobbling)
        .attr("adminRole", user.is_admin)
        .attr("settingsRole", true)
        .attr("downloadRole", true)
        .attr("uploadRole", true)
        .attr("playlistRole", true)
        .attr("coverArtRole", false)
        .attr("commentRole", false)
        .attr("podcastRole", false)
        .attr("streamRole", true)
        .attr("jukeboxRole", false)
        .attr("shareRole", true)
        .attr("videoConversionRole", false)
        .values(
            "folder",
            musiclib_core::catalog::FolderLibrary::ALL
                .iter()
                .map(|library| Scalar::Int(library.number()))
                .collect(),
        ))
}

fn scan_element(status: musiclib_core::ingest::ScanStatus) -> Element {
    Element::new("scanStatus")
        .attr("scanning", status.scanning)
        .attr("count", status.count)
}

/// `startScan`: queues the local-folder import (admins; error 50 otherwise).
pub(crate) async fn start_scan(request: &Request) -> Outcome {
    request
        .library
        .ingest()
        .start_local_scan(&request.caller)
        .await?;
    let status = request.library.ingest().scan_status().await?;
    Ok(Reply::Envelope(Some(scan_element(status))))
}

/// `getScanStatus`.
pub(crate) async fn scan_status(request: &Request) -> Outcome {
    let status = request.library.ingest().scan_status().await?;
    Ok(Reply::Envelope(Some(scan_element(status))))
}
