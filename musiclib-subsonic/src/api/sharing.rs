//! Sharing: the sharing links of `/api/v1/shares`, with the `url` apps show and copy (the
//! web player's page for the share, `/s/{id}`).

use musiclib_core::shares::{NewShare, Share, ShareChanges, ShareId, ShareTarget};
use musiclib_core::{AlbumId, PlaylistId, Timestamp, TrackId};

use super::{all_pages, track_id};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// Most shares listed.
const MAX_SHARES: i64 = 10_000;

/// The link of a share: `PUBLIC_URL` when set, else the address the request came to.
fn share_url(request: &Request, id: &ShareId) -> String {
    let text = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
    };
    musiclib_core::shares::link(
        request.library.config().public_url.as_deref(),
        text("host"),
        text("x-forwarded-proto").is_some_and(|proto| proto.eq_ignore_ascii_case("https")),
        id,
    )
}

async fn element(request: &Request, share: &Share) -> Result<Element, SubsonicError> {
    Ok(Element::new("share")
        .attr("id", share.id.to_string())
        .attr("url", share_url(request, &share.id))
        .opt("description", share.description.as_deref())
        .attr("username", share.owner_name.as_str())
        .attr("created", share.created_at)
        .opt("expires", share.expires_at)
        .opt("lastVisited", share.last_visited_at)
        .attr("visitCount", share.visit_count)
        .list("entry", request.every_song("entry", &share.tracks).await?))
}

/// `expires`: milliseconds since the epoch; 0 or absent: never.
fn expiry(request: &Request) -> Result<Option<Timestamp>, SubsonicError> {
    match request.params.int("expires")? {
        None | Some(0) => Ok(None),
        Some(ms) if ms < 0 => Err(SubsonicError::invalid("expires", "must not be negative")),
        Some(ms) => Ok(Some(Timestamp::from_micros(ms.saturating_mul(1000)))),
    }
}

fn share_id(raw: &str) -> Result<ShareId, SubsonicError> {
    ShareId::parse(raw).map_err(|_| SubsonicError::not_found(format_args!("share {raw}")))
}

/// `getShares`: the caller's shares, newest first.
pub(crate) async fn list(request: &Request) -> Outcome {
    let shares = all_pages(MAX_SHARES, |page| {
        request.library.shares().list(&request.caller, false, page)
    })
    .await?;
    let mut items = Vec::with_capacity(shares.len());
    for share in &shares {
        items.push(element(request, share).await?);
    }
    Ok(Reply::Envelope(Some(
        Element::new("shares").list("share", items),
    )))
}

/// What one `id` names: an album, a playlist the caller may read, or else a song.
async fn single_target(request: &Request, id: &str) -> Result<ShareTarget, SubsonicError> {
    let library = &request.library;
    if let Ok(album) = AlbumId::parse(id) {
        if library.catalog().get_album(&album).await.is_ok() {
            return Ok(ShareTarget::Album(album));
        }
    }
    if let Ok(playlist) = PlaylistId::parse(id) {
        if library
            .playlists()
            .get(&request.caller, &playlist)
            .await
            .is_ok()
        {
            return Ok(ShareTarget::Playlist(playlist));
        }
    }
    Ok(ShareTarget::Tracks(vec![track_id(id)?]))
}

/// `createShare`: `id` names songs (several), or one album or playlist; `description`,
/// `expires` (ms since the epoch). Answers `shares` with the new one.
pub(crate) async fn create(request: &Request) -> Outcome {
    let library = &request.library;
    let ids = request.params.all("id");
    let target = match ids.as_slice() {
        [] => return Err(SubsonicError::missing("id")),
        [one] => single_target(request, one).await?,
        many => ShareTarget::Tracks(
            many.iter()
                .map(|raw| track_id(raw))
                .collect::<Result<Vec<TrackId>, _>>()?,
        ),
    };
    let new = NewShare {
        target,
        description: request.params.get("description").map(str::to_string),
        expires_at: expiry(request)?,
        downloadable: false,
    };
    let share = library.shares().create(&request.caller, new).await?;
    Ok(Reply::Envelope(Some(
        Element::new("shares").list("share", vec![element(request, &share).await?]),
    )))
}

/// `updateShare`: `description`, `expires` (0: never).
pub(crate) async fn update(request: &Request) -> Outcome {
    let id = share_id(request.params.required("id")?)?;
    let params = &request.params;
    let changes = ShareChanges {
        description: params
            .has("description")
            .then(|| params.get("description").map(str::to_string)),
        expires_at: if params.has("expires") {
            Some(expiry(request)?)
        } else {
            None
        },
        downloadable: None,
    };
    request
        .library
        .shares()
        .update(&request.caller, &id, changes)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `deleteShare`: revokes it (its link answers 410 from then on).
pub(crate) async fn delete(request: &Request) -> Outcome {
    let id = share_id(request.params.required("id")?)?;
    request
        .library
        .shares()
        .revoke(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}
