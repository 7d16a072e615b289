//! Playlists: the versioned playlists of `/api/v1`, so an edit from a Subsonic app reaches
//! the user's offline clients (each add or remove is one version, as there).

use musiclib_core::playlists::{NewPlaylist, Playlist, PlaylistChanges, PlaylistEdit, Removal};

use super::{all_pages, model, playlist_id, track_id};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// Most playlists listed.
const MAX_PLAYLISTS: i64 = 10_000;

fn track_ids(request: &Request, name: &str) -> Result<Vec<musiclib_core::TrackId>, SubsonicError> {
    request.params.all(name).into_iter().map(track_id).collect()
}

/// A playlist with its entries.
async fn with_entries(request: &Request, playlist: &Playlist) -> Result<Element, SubsonicError> {
    let tracks = request
        .library
        .catalog()
        .tracks_by_ids(&playlist.track_ids)
        .await?;
    Ok(model::playlist(playlist, request.caller.user.id.as_str())
        .list("entry", request.every_song("entry", &tracks).await?))
}

/// `getPlaylists`: the caller's and the public ones of others; `username` (admins) narrows
/// to one owner.
pub(crate) async fn list(request: &Request) -> Outcome {
    let caller = &request.caller;
    let owner = request.params.get("username");
    if let Some(owner) = owner {
        caller.may_list_playlists_of(owner)?;
    }
    let playlists = all_pages(MAX_PLAYLISTS, |page| {
        request.library.playlists().list(caller, page)
    })
    .await?;
    let items = playlists
        .iter()
        .filter(|playlist| {
            owner.is_none_or(|owner| {
                musiclib_core::text::name_key(owner)
                    == musiclib_core::text::name_key(&playlist.owner_name)
            })
        })
        .map(|playlist| model::playlist(playlist, caller.user.id.as_str()))
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("playlists").list("playlist", items),
    )))
}

/// `getPlaylist`.
pub(crate) async fn get(request: &Request) -> Outcome {
    let id = playlist_id(request.params.required("id")?)?;
    let playlist = request
        .library
        .playlists()
        .get(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(Some(
        with_entries(request, &playlist).await?,
    )))
}

/// `createPlaylist`: a new playlist (`name`, `songId`…), or with `playlistId` the songs of
/// an existing one replaced (a remove of all, then an add, in one write: an unknown song
/// changes nothing).
pub(crate) async fn create(request: &Request) -> Outcome {
    let library = &request.library;
    let caller = &request.caller;
    let songs = track_ids(request, "songId")?;
    let playlist = match request.params.get("playlistId") {
        Some(raw) => {
            let id = playlist_id(raw)?;
            let edit = PlaylistEdit {
                changes: PlaylistChanges {
                    name: request.params.get("name").map(str::to_string),
                    ..Default::default()
                },
                remove: Removal::All,
                add: songs,
            };
            library.playlists().edit(caller, &id, edit).await?
        }
        None => {
            let new = NewPlaylist {
                name: request.params.required("name")?.to_string(),
                track_ids: songs,
                ..Default::default()
            };
            library.playlists().create(caller, new).await?
        }
    };
    Ok(Reply::Envelope(Some(
        with_entries(request, &playlist).await?,
    )))
}

/// `updatePlaylist`: name, comment, public flag; `songIndexToRemove` (positions before the
/// update) and `songIdToAdd` (appended), all in one write.
pub(crate) async fn update(request: &Request) -> Outcome {
    let library = &request.library;
    let caller = &request.caller;
    let params = &request.params;
    let id = playlist_id(params.required("playlistId")?)?;
    let removes = params
        .ints("songIndexToRemove")?
        .into_iter()
        .map(|index| {
            usize::try_from(index)
                .map_err(|_| SubsonicError::invalid("songIndexToRemove", "must not be negative"))
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let adds = track_ids(request, "songIdToAdd")?;
    let changes = PlaylistChanges {
        name: params.get("name").map(str::to_string),
        description: params
            .has("comment")
            .then(|| params.get("comment").map(str::to_string)),
        public: params.bool("public")?,
        expected_version: None,
        rules: None,
    };
    let edit = PlaylistEdit {
        changes,
        remove: if removes.is_empty() {
            Removal::Nothing
        } else {
            Removal::Positions(removes)
        },
        add: adds,
    };
    library.playlists().edit(caller, &id, edit).await?;
    Ok(Reply::Envelope(None))
}

/// `deletePlaylist`.
pub(crate) async fn delete(request: &Request) -> Outcome {
    let id = playlist_id(request.params.required("id")?)?;
    request
        .library
        .playlists()
        .delete(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}
