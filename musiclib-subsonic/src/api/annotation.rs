//! Stars, ratings, scrobbles and the saved play queue.

use musiclib_core::catalog::ItemKind;
use musiclib_core::social::{NewPlay, PlaybackReport, PlaybackState};
use musiclib_core::Timestamp;

use super::track_id;
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// `star` / `unstar`: `id` (songs, or albums and artists by their ids as folders),
/// `albumId`, `artistId`, each repeatable. A star on a song is a like.
pub(crate) async fn star(request: &Request, starred: bool) -> Outcome {
    let params = &request.params;
    let mut by_kind: Vec<(ItemKind, Vec<String>)> = vec![
        (ItemKind::Track, Vec::new()),
        (
            ItemKind::Album,
            params
                .all("albumId")
                .into_iter()
                .map(str::to_string)
                .collect(),
        ),
        (
            ItemKind::Artist,
            params
                .all("artistId")
                .into_iter()
                .map(str::to_string)
                .collect(),
        ),
    ];
    for id in params.all("id") {
        let kind = match request.library.catalog().item_kind(id).await? {
            Some(kind @ (ItemKind::Track | ItemKind::Album | ItemKind::Artist)) => kind,
            _ => return Err(SubsonicError::not_found(format_args!("item {id}"))),
        };
        if let Some((_, ids)) = by_kind.iter_mut().find(|(known, _)| *known == kind) {
            ids.push(id.to_string());
        }
    }
    if by_kind.iter().all(|(_, ids)| ids.is_empty()) {
        return Err(SubsonicError::missing("id, albumId or artistId"));
    }
    for (kind, ids) in by_kind.into_iter().filter(|(_, ids)| !ids.is_empty()) {
        request
            .library
            .social()
            .star(&request.caller, kind, &ids, starred)
            .await?;
    }
    Ok(Reply::Envelope(None))
}

/// `setRating`: 1–5, 0 removes the rating.
pub(crate) async fn set_rating(request: &Request) -> Outcome {
    let id = request.params.required("id")?;
    let rating = request
        .params
        .int("rating")?
        .ok_or_else(|| SubsonicError::missing("rating"))?;
    if !(0..=5).contains(&rating) {
        return Err(SubsonicError::invalid("rating", "must be between 0 and 5"));
    }
    let kind = request
        .library
        .catalog()
        .item_kind(id)
        .await?
        .filter(|kind| *kind != ItemKind::Playlist)
        .ok_or_else(|| SubsonicError::not_found(format_args!("item {id}")))?;
    request
        .library
        .social()
        .set_rating(&request.caller, kind, id, rating)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `scrobble`: with `submission` (default true) each `id` is a play in the user's history
/// (the same log as `POST /history`; `time` in ms, repeatable, defaults to now); without,
/// it is what the user is playing now. A scrobble repeated with the same `time` counts once.
pub(crate) async fn scrobble(request: &Request) -> Outcome {
    let params = &request.params;
    let ids = params.all("id");
    if ids.is_empty() {
        return Err(SubsonicError::missing("id"));
    }
    let times = params.ints("time")?;
    if params.bool("submission")?.unwrap_or(true) {
        let mut plays = Vec::with_capacity(ids.len());
        for (index, raw) in ids.iter().enumerate() {
            let id = track_id(raw)?;
            let (played_at, event_id) = match times.get(index) {
                Some(ms) => (
                    Timestamp::from_micros(ms.saturating_mul(1000)),
                    format!("subsonic:{id}:{ms}"),
                ),
                None => (
                    Timestamp::now(),
                    format!("subsonic:{id}:{}", uuid::Uuid::new_v4()),
                ),
            };
            plays.push(NewPlay {
                track_id: id.to_string(),
                played_at,
                seconds_played: None,
                client_event_id: event_id,
            });
        }
        // One push for every id (the same path as /sync/push); a repeat is a duplicate.
        let outcome = request
            .library
            .social()
            .push_events(&request.caller, Vec::new(), plays)
            .await?;
        if let Some(unknown) = outcome.skipped.first() {
            let track = unknown.split(':').nth(1).unwrap_or(unknown);
            return Err(SubsonicError::not_found(format_args!("song {track}")));
        }
    } else {
        for raw in ids {
            let id = track_id(raw)?;
            request
                .library
                .social()
                .set_now_playing(&request.caller, &request.client, &id)
                .await?;
        }
    }
    Ok(Reply::Envelope(None))
}

/// `savePlayQueue`: `id`… with `current` and `position` (ms); no `id` clears the queue.
pub(crate) async fn save_play_queue(request: &Request) -> Outcome {
    let params = &request.params;
    let ids = params
        .all("id")
        .into_iter()
        .map(track_id)
        .collect::<Result<Vec<_>, _>>()?;
    let current = params.get("current").map(track_id).transpose()?;
    let position = params.int("position")?.unwrap_or(0);
    request
        .library
        .social()
        .save_play_queue(
            &request.caller,
            ids,
            current,
            position,
            Some(&request.client),
        )
        .await?;
    Ok(Reply::Envelope(None))
}

/// `getPlayQueue`: the saved queue, or an empty answer when there is none.
pub(crate) async fn play_queue(request: &Request) -> Outcome {
    let Some(queue) = request.library.social().play_queue(&request.caller).await? else {
        return Ok(Reply::Envelope(None));
    };
    let tracks = request
        .library
        .catalog()
        .tracks_by_ids(&queue.track_ids)
        .await?;
    let element = Element::new("playQueue")
        .opt("current", queue.current.map(|id| id.to_string()))
        .attr("position", queue.position_ms)
        .attr("username", request.caller.user.username.as_str())
        .attr("changed", queue.changed_at)
        .attr("changedBy", queue.changed_by.unwrap_or_default())
        .list("entry", request.songs("entry", &tracks).await?);
    Ok(Reply::Envelope(Some(element)))
}

/// `reportPlayback` (`playbackReport`): `mediaId`, `mediaType` (`song`), `positionMs`,
/// `state` (`starting`, `playing`, `paused`, `stopped`), `playbackRate` (default 1.0),
/// `ignoreScrobble`. Moves the caller's `getNowPlaying` entry for this client, and counts a
/// play once it has been heard long enough (core's rule, the Last.fm one). Podcast episodes
/// are not reported here: their position is kept by the podcast methods.
pub(crate) async fn report_playback(request: &Request) -> Outcome {
    let params = &request.params;
    let id = params.required("mediaId")?;
    let media_type = params.required("mediaType")?;
    let position_ms = params
        .int("positionMs")?
        .ok_or_else(|| SubsonicError::missing("positionMs"))?;
    let state = PlaybackState::parse(params.required("state")?)?;
    match media_type {
        "song" => {}
        // A podcast episode: the report keeps the listener's place in it (what the web
        // player resumes from); episodes are not plays.
        "podcast" => {
            let episode = super::podcasts::episode_id(id)
                .ok_or_else(|| SubsonicError::not_found(format_args!("podcast episode {id}")))?;
            request
                .library
                .podcasts()
                .set_position(&request.caller, &episode, position_ms)
                .await?;
            return Ok(Reply::Envelope(None));
        }
        other => {
            return Err(SubsonicError::invalid(
                "mediaType",
                format_args!(
                "{other:?}: songs and podcast episodes are reported (mediaType=song or podcast)"
            ),
            ))
        }
    }
    let report = PlaybackReport {
        track: track_id(id)?,
        state,
        position_ms,
        playback_rate: params.float("playbackRate")?.unwrap_or(1.0),
        ignore_scrobble: params.bool("ignoreScrobble")?.unwrap_or(false),
    };
    request
        .library
        .social()
        .report_playback(&request.caller, &request.client, report)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `savePlayQueueByIndex` (`indexBasedQueue`): `id` (repeated; a song may come twice),
/// `currentIndex` (0-based; required with songs), `position` (ms).
pub(crate) async fn save_play_queue_by_index(request: &Request) -> Outcome {
    let params = &request.params;
    let ids = params
        .all("id")
        .into_iter()
        .map(track_id)
        .collect::<Result<Vec<_>, _>>()?;
    if !ids.is_empty() && !params.has("currentIndex") {
        return Err(SubsonicError::missing("currentIndex"));
    }
    let current_index = params.int("currentIndex")?;
    let position = params.int("position")?.unwrap_or(0);
    request
        .library
        .social()
        .save_play_queue_by_index(
            &request.caller,
            ids,
            current_index,
            position,
            Some(&request.client),
        )
        .await?;
    Ok(Reply::Envelope(None))
}

/// `getPlayQueueByIndex` (`indexBasedQueue`): the saved queue with its current entry by
/// place, or an empty answer when there is none.
pub(crate) async fn play_queue_by_index(request: &Request) -> Outcome {
    let Some(queue) = request.library.social().play_queue(&request.caller).await? else {
        return Ok(Reply::Envelope(None));
    };
    let tracks = request
        .library
        .catalog()
        .tracks_by_ids(&queue.track_ids)
        .await?;
    // Entries whose track was deleted since are left out: the place counts what is listed.
    let index = queue.current_index.map(|index| {
        let gone_before = queue.track_ids[..index.min(queue.track_ids.len())]
            .iter()
            .filter(|id| !tracks.iter().any(|track| track.id == **id))
            .count();
        index - gone_before
    });
    let index = index
        .filter(|index| *index < tracks.len())
        .or((!tracks.is_empty()).then_some(0));
    let element = Element::new("playQueueByIndex")
        .opt("currentIndex", index.map(|index| index as i64))
        .attr("position", queue.position_ms)
        .attr("username", request.caller.user.username.as_str())
        .attr("changed", queue.changed_at)
        .attr("changedBy", queue.changed_by.unwrap_or_default())
        .list("entry", request.songs("entry", &tracks).await?);
    Ok(Reply::Envelope(Some(element)))
}

/// `createBookmark`: sets the caller's bookmark in a song (`id`, `position` in ms, optional
/// `comment`).
pub(crate) async fn create_bookmark(request: &Request) -> Outcome {
    let params = &request.params;
    let id = track_id(params.required("id")?)?;
    let position = params
        .int("position")?
        .ok_or_else(|| SubsonicError::missing("position"))?;
    request
        .library
        .social()
        .set_bookmark(&request.caller, &id, position, params.get("comment"))
        .await?;
    Ok(Reply::Envelope(None))
}

/// `getBookmarks`: the caller's bookmarks, each with its song.
pub(crate) async fn bookmarks(request: &Request) -> Outcome {
    let bookmarks = request.library.social().bookmarks(&request.caller).await?;
    let tracks: Vec<_> = bookmarks
        .iter()
        .map(|bookmark| bookmark.track.clone())
        .collect();
    let songs = request.songs("entry", &tracks).await?;
    let elements = bookmarks
        .iter()
        .zip(songs)
        .map(|(bookmark, song)| {
            Element::new("bookmark")
                .attr("position", bookmark.position_ms)
                .attr("username", request.caller.user.username.as_str())
                .opt("comment", bookmark.comment.clone())
                .attr("created", bookmark.created_at)
                .attr("changed", bookmark.updated_at)
                .child(song)
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("bookmarks").list("bookmark", elements),
    )))
}

/// `deleteBookmark`: deletes the caller's bookmark in a song (`id`).
pub(crate) async fn delete_bookmark(request: &Request) -> Outcome {
    let id = track_id(request.params.required("id")?)?;
    request
        .library
        .social()
        .delete_bookmark(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}
