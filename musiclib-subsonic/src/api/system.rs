//! System, user and scanning methods.

use crate::api::model::FOLDER_ID;
use crate::response::{Element, Scalar, SubsonicError};
use crate::{Outcome, Reply, Request, EXTENSIONS};

/// `getOpenSubsonicExtensions` (no credentials needed).
pub(crate) fn extensions() -> Element {
    // The payload is a bare list: JSON `"openSubsonicExtensions": [ … ]`.
    let items = EXTENSIONS
        .iter()
        .map(|(name, versions)| {
            Element::new("openSubsonicExtensions")
                .attr("name", *name)
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
    let user = if musiclib_core::text::name_key(username)
        == musiclib_core::text::name_key(&request.caller.user.username)
    {
        request.caller.user.clone()
    } else {
        if !request.caller.user.is_admin {
            return Err(SubsonicError {
                code: 50,
                message: "only an admin may read another user".into(),
            });
        }
        request
            .library
            .accounts()
            .find_user_by_name(username)
            .await?
            .ok_or_else(|| SubsonicError::not_found(format_args!("user {username}")))?
    };
    let admin = user.is_admin;
    Ok(Reply::Envelope(Some(
        Element::new("user")
            .attr("username", user.username.as_str())
            .attr("scrobblingEnabled", true)
            .attr("adminRole", admin)
            .attr("settingsRole", true)
            .attr("downloadRole", true)
            .attr("uploadRole", true)
            .attr("playlistRole", true)
            .attr("coverArtRole", false)
            .attr("commentRole", false)
            .attr("podcastRole", false)
            .attr("streamRole", true)
            .attr("jukeboxRole", false)
            .attr("shareRole", false)
            .attr("videoConversionRole", false)
            .values("folder", vec![Scalar::Int(FOLDER_ID)]),
    )))
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
