//! Podcasts: the podcasts of `/api/v1/podcasts` in the protocol's shapes.
//!
//! Ids carry their kind, as folders' do: a channel is `pc-{uuid}` (also its `coverArt`), an
//! episode `pe-{uuid}` (also its `streamId`, which `stream` and `download` take), so an id an
//! app sends back is never mistaken for a track's. Statuses are the protocol's: a downloaded
//! episode is `completed`, a failed one `error`; a channel is `error` (with
//! `errorMessage`) when its last refresh failed, else `completed`.

use musiclib_core::domain::Page;
use musiclib_core::media::{Delivery, Encoding, Want};
use musiclib_core::podcasts::{Channel, Episode, EpisodeStatus, NewChannel};
use musiclib_core::{EpisodeId, PodcastId};

use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// Most episodes listed per channel by `getPodcasts`.
const MAX_EPISODES: i64 = 1000;

/// The protocol's id of a channel.
pub(crate) fn channel_ref(id: &PodcastId) -> String {
    format!("pc-{id}")
}

/// The protocol's id of an episode.
pub(crate) fn episode_ref(id: &EpisodeId) -> String {
    format!("pe-{id}")
}

/// A channel's id from the protocol's (`pc-…`; a bare UUID too).
pub(crate) fn channel_id(raw: &str) -> Result<PodcastId, SubsonicError> {
    PodcastId::parse(raw.strip_prefix("pc-").unwrap_or(raw))
        .map_err(|_| SubsonicError::not_found(format_args!("podcast channel {raw}")))
}

/// An episode's id from the protocol's (`pe-…`), or `None` when it is not one.
pub(crate) fn episode_id(raw: &str) -> Option<EpisodeId> {
    EpisodeId::parse(raw.strip_prefix("pe-")?).ok()
}

fn required_episode(raw: &str) -> Result<EpisodeId, SubsonicError> {
    episode_id(raw)
        .or_else(|| EpisodeId::parse(raw).ok())
        .ok_or_else(|| SubsonicError::not_found(format_args!("podcast episode {raw}")))
}

fn channel_element(channel: &Channel, episodes: Vec<Element>) -> Element {
    let status = if channel.refresh_error.is_some() {
        "error"
    } else {
        "completed"
    };
    Element::new("channel")
        .attr("id", channel_ref(&channel.id))
        .attr("url", channel.feed_url.as_str())
        .attr("title", channel.title.as_str())
        .opt("description", channel.description.as_deref())
        .opt(
            "coverArt",
            channel.has_cover.then(|| channel_ref(&channel.id)),
        )
        .opt("originalImageUrl", channel.image_url.as_deref())
        .attr("status", status)
        .opt("errorMessage", channel.refresh_error.as_deref())
        .list("episode", episodes)
}

/// An episode as the protocol's `PodcastEpisode` (a `Child`).
pub(crate) fn episode_element(
    name: &'static str,
    episode: &Episode,
    channel: Option<&Channel>,
) -> Element {
    let status = match episode.status {
        EpisodeStatus::New => "new",
        EpisodeStatus::Downloading => "downloading",
        EpisodeStatus::Downloaded => "completed",
        EpisodeStatus::Failed => "error",
        EpisodeStatus::Deleted => "deleted",
    };
    let downloaded = episode.status == EpisodeStatus::Downloaded;
    let suffix = episode
        .mime_type
        .as_deref()
        .and_then(suffix_of)
        .map(str::to_string);
    Element::new(name)
        .attr("id", episode_ref(&episode.id))
        .attr("parent", channel_ref(&episode.channel_id))
        .attr("isDir", false)
        .attr("title", episode.title.as_str())
        .opt("album", channel.map(|channel| channel.title.as_str()))
        .opt(
            "artist",
            channel.and_then(|channel| channel.author.as_deref()),
        )
        .opt("year", episode.published_at.and_then(year_of))
        .attr("genre", "Podcast")
        .opt(
            "coverArt",
            channel
                .filter(|channel| channel.has_cover)
                .map(|channel| channel_ref(&channel.id)),
        )
        .opt("size", episode.size_bytes)
        .opt("contentType", episode.mime_type.as_deref())
        .opt("suffix", suffix)
        .opt("duration", episode.duration_ms.map(|ms| (ms + 500) / 1000))
        .opt("bitRate", episode.bitrate_kbps)
        .attr("isVideo", false)
        .opt("created", episode.published_at)
        .attr("type", "podcast")
        .opt("streamId", downloaded.then(|| episode_ref(&episode.id)))
        .attr("channelId", channel_ref(&episode.channel_id))
        .opt("description", episode.description.as_deref())
        .attr("status", status)
        .opt("publishDate", episode.published_at)
}

fn suffix_of(mime: &str) -> Option<&'static str> {
    Some(match mime {
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/mp4" | "audio/x-m4a" | "audio/aac" => "m4a",
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/flac" | "audio/x-flac" => "flac",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        _ => return None,
    })
}

fn year_of(at: musiclib_core::Timestamp) -> Option<i64> {
    at.to_rfc3339().get(..4)?.parse().ok()
}

/// `getPodcasts`: every channel (or the one `id` names), with its episodes unless
/// `includeEpisodes=false`.
pub(crate) async fn list(request: &Request) -> Outcome {
    let podcasts = request.library.podcasts();
    let caller = &request.caller;
    let include = request.params.bool("includeEpisodes")?.unwrap_or(true);
    let channels = match request.params.get("id") {
        Some(raw) => vec![podcasts.channel(caller, &channel_id(raw)?).await?],
        None => podcasts.channels(caller).await?,
    };
    // Every channel's episodes in one read, not one per channel; one channel's alone.
    let mut episodes = match (include, channels.as_slice()) {
        (false, _) => Default::default(),
        (true, [one]) if request.params.has("id") => {
            let page = Page::clamped(MAX_EPISODES, 0, MAX_EPISODES);
            let listed = podcasts.episodes(caller, &one.id, None, page).await?;
            std::collections::HashMap::from([(one.id.clone(), listed.items)])
        }
        (true, _) => {
            podcasts
                .episodes_of_every_channel(caller, MAX_EPISODES)
                .await?
        }
    };
    let items = channels
        .iter()
        .map(|channel| {
            let listed = episodes
                .remove(&channel.id)
                .unwrap_or_default()
                .iter()
                .map(|episode| episode_element("episode", episode, Some(channel)))
                .collect();
            channel_element(channel, listed)
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("podcasts").list("channel", items),
    )))
}

/// `getNewestPodcasts`: the newest episodes (`count`, default 20).
pub(crate) async fn newest(request: &Request) -> Outcome {
    let count = request.params.int("count")?.unwrap_or(20).clamp(1, 500);
    let podcasts = request.library.podcasts();
    let episodes = podcasts.newest(&request.caller, count).await?;
    let channels = podcasts.channels(&request.caller).await?;
    let items = episodes
        .iter()
        .map(|episode| {
            let channel = channels.iter().find(|c| c.id == episode.channel_id);
            episode_element("episode", episode, channel)
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("newestPodcasts").list("episode", items),
    )))
}

/// `getPodcastEpisode` (OpenSubsonic): one episode.
pub(crate) async fn episode(request: &Request) -> Outcome {
    let id = required_episode(request.params.required("id")?)?;
    let podcasts = request.library.podcasts();
    let episode = podcasts.episode(&request.caller, &id).await?;
    let channel = podcasts
        .channel(&request.caller, &episode.channel_id)
        .await?;
    Ok(Reply::Envelope(Some(episode_element(
        "podcastEpisode",
        &episode,
        Some(&channel),
    ))))
}

/// `refreshPodcasts`: every feed is read again, in the background.
pub(crate) async fn refresh(request: &Request) -> Outcome {
    request
        .library
        .podcasts()
        .refresh_all(&request.caller)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `createPodcastChannel`: subscribes to `url` (read now: a URL refused or not a feed is
/// an error saying why).
pub(crate) async fn create_channel(request: &Request) -> Outcome {
    let url = request.params.required("url")?;
    request
        .library
        .podcasts()
        .subscribe(
            &request.caller,
            NewChannel {
                url: url.to_string(),
                keep_newest: None,
            },
        )
        .await?;
    Ok(Reply::Envelope(None))
}

/// `deletePodcastChannel`: unsubscribes (who subscribed, or an admin).
pub(crate) async fn delete_channel(request: &Request) -> Outcome {
    let id = channel_id(request.params.required("id")?)?;
    request
        .library
        .podcasts()
        .unsubscribe(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `deletePodcastEpisode`: deletes an episode's download.
pub(crate) async fn delete_episode(request: &Request) -> Outcome {
    let id = required_episode(request.params.required("id")?)?;
    request
        .library
        .podcasts()
        .delete_episode(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}

/// `downloadPodcastEpisode`: downloads an episode into storage, in the background.
pub(crate) async fn download_episode(request: &Request) -> Outcome {
    let id = required_episode(request.params.required("id")?)?;
    request
        .library
        .podcasts()
        .download(&request.caller, &id)
        .await?;
    Ok(Reply::Envelope(None))
}

/// What `stream` and `download` send for an episode's `streamId`.
pub(crate) async fn open(
    request: &Request,
    id: &EpisodeId,
    encoding: Encoding,
    offset_seconds: f64,
) -> musiclib_core::Result<Delivery> {
    let want = Want {
        encoding,
        offset_seconds,
        live: true,
        wait_for_placeholder: None,
    };
    request
        .library
        .podcasts()
        .open(&request.caller, id, &want)
        .await
}
