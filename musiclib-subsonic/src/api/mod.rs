//! The protocol's methods, grouped as in the Subsonic documentation.

pub(crate) mod annotation;
pub(crate) mod browsing;
pub(crate) mod folders;
pub(crate) mod hls;
pub(crate) mod lists;
pub(crate) mod media;
pub(crate) mod model;
pub(crate) mod playlists;
pub(crate) mod podcasts;
pub(crate) mod radio;
pub(crate) mod sharing;
pub(crate) mod system;
pub(crate) mod transcoding;
pub(crate) mod users;

use std::future::Future;

use futures::future::BoxFuture;

use musiclib_core::domain::{Page, Paged};
use musiclib_core::{AlbumId, ArtistId, PlaylistId, TrackId};

use crate::response::SubsonicError;
use crate::{Outcome, Request};

/// Largest list a client may ask for in one call (`size`, `count`).
pub(crate) const MAX_LIST: i64 = 500;

/// Declares [`dispatch`] and [`METHODS`] from one table, so the list of methods the router
/// names (and metrics count) is the list `dispatch` runs.
macro_rules! methods {
    ($name:ident, $request:ident; $($($method:literal)|+ => $handler:expr,)*) => {
        /// Every method [`dispatch`] runs.
        pub(crate) const METHODS: &[&str] = &[$($($method,)+)*];

        /// Runs the method `name`.
        ///
        /// Each method's future is boxed: the future of a `match` over every handler would be
        /// as large as the largest of them, allocated and moved for every request, even a
        /// `ping`.
        pub(crate) async fn dispatch($name: &str, $request: &Request) -> Outcome {
            let method: BoxFuture<'_, Outcome> = match $name {
                $($($method)|+ => Box::pin($handler),)*
                other => return Err(SubsonicError::not_supported(other)),
            };
            method.await
        }
    };
}

methods! { name, request;
    "ping" => system::ping(request),
    "getLicense" => system::license(request),
    "tokenInfo" => system::token_info(request),
    "getUser" => system::user(request),
    "getUsers" => system::users(request),
    "startScan" => system::start_scan(request),
    "getScanStatus" => system::scan_status(request),
    "createUser" => users::create(request),
    "updateUser" => users::update(request),
    "deleteUser" => users::delete(request),
    "changePassword" => users::change_password(request),
    "getAvatar" => users::avatar(request),

    "getMusicFolders" => folders::music_folders(request),
    "getIndexes" => folders::indexes(request),
    "getMusicDirectory" => browsing::music_directory(request),
    "getGenres" => browsing::genres(request),
    "getArtists" => browsing::artists(request),
    "getArtist" => browsing::artist(request),
    "getAlbum" => browsing::album(request),
    "getSong" => browsing::song(request),
    "getArtistInfo" | "getArtistInfo2" => browsing::artist_info(request, name),
    "getAlbumInfo" | "getAlbumInfo2" => browsing::album_info(request),
    "getSimilarSongs" | "getSimilarSongs2" => browsing::similar_songs(request, name),
    "getTopSongs" => browsing::top_songs(request),
    "getSonicSimilarTracks" => browsing::sonic_similar(request),
    "findSonicPath" => browsing::sonic_path(request),

    "getAlbumList" | "getAlbumList2" => lists::album_list(request, name),
    "getRandomSongs" => lists::random_songs(request),
    "getSongsByGenre" => lists::songs_by_genre(request),
    "getNowPlaying" => lists::now_playing(request),
    "getStarred" | "getStarred2" => lists::starred(request, name),
    "search" => lists::search_v1(request),
    "search2" | "search3" => lists::search(request, name),

    "getPlaylists" => playlists::list(request),
    "getPlaylist" => playlists::get(request),
    "createPlaylist" => playlists::create(request),
    "updatePlaylist" => playlists::update(request),
    "deletePlaylist" => playlists::delete(request),

    "getPodcasts" => podcasts::list(request),
    "getNewestPodcasts" => podcasts::newest(request),
    "getPodcastEpisode" => podcasts::episode(request),
    "refreshPodcasts" => podcasts::refresh(request),
    "createPodcastChannel" => podcasts::create_channel(request),
    "deletePodcastChannel" => podcasts::delete_channel(request),
    "deletePodcastEpisode" => podcasts::delete_episode(request),
    "downloadPodcastEpisode" => podcasts::download_episode(request),

    "getShares" => sharing::list(request),
    "createShare" => sharing::create(request),
    "updateShare" => sharing::update(request),
    "deleteShare" => sharing::delete(request),

    "getInternetRadioStations" => radio::list(request),
    "createInternetRadioStation" => radio::create(request),
    "updateInternetRadioStation" => radio::update(request),
    "deleteInternetRadioStation" => radio::delete(request),

    "stream" => media::stream(request),
    "download" => media::download(request),
    "hls.m3u8" | "hls" => hls::hls(request),
    "getCoverArt" => media::cover_art(request),
    "getLyrics" => media::lyrics(request),
    "getLyricsBySongId" => media::lyrics_by_song_id(request),
    "getTranscodeDecision" => transcoding::decision(request),
    "getTranscodeStream" => transcoding::stream(request),

    "star" => annotation::star(request, true),
    "unstar" => annotation::star(request, false),
    "setRating" => annotation::set_rating(request),
    "scrobble" => annotation::scrobble(request),
    "reportPlayback" => annotation::report_playback(request),
    "savePlayQueue" => annotation::save_play_queue(request),
    "getPlayQueue" => annotation::play_queue(request),
    "savePlayQueueByIndex" => annotation::save_play_queue_by_index(request),
    "getPlayQueueByIndex" => annotation::play_queue_by_index(request),
    "createBookmark" => annotation::create_bookmark(request),
    "getBookmarks" => annotation::bookmarks(request),
    "deleteBookmark" => annotation::delete_bookmark(request),
}

/// Parses an id of a kind; a malformed id is data not found (error 70), as for any id the
/// server does not know.
pub(crate) fn track_id(raw: &str) -> Result<TrackId, SubsonicError> {
    TrackId::parse(raw).map_err(|_| SubsonicError::not_found(format_args!("song {raw}")))
}

pub(crate) fn album_id(raw: &str) -> Result<AlbumId, SubsonicError> {
    AlbumId::parse(raw).map_err(|_| SubsonicError::not_found(format_args!("album {raw}")))
}

pub(crate) fn artist_id(raw: &str) -> Result<ArtistId, SubsonicError> {
    ArtistId::parse(raw).map_err(|_| SubsonicError::not_found(format_args!("artist {raw}")))
}

pub(crate) fn playlist_id(raw: &str) -> Result<PlaylistId, SubsonicError> {
    PlaylistId::parse(raw).map_err(|_| SubsonicError::not_found(format_args!("playlist {raw}")))
}

/// Every item of a paged core list (albums of an artist, tracks of an album, artists of the
/// index), fetched in pages of the largest size, up to `cap` items.
pub(crate) async fn all_pages<T, F, Fut>(cap: i64, mut fetch: F) -> Result<Vec<T>, SubsonicError>
where
    F: FnMut(Page) -> Fut,
    Fut: Future<Output = musiclib_core::Result<Paged<T>>>,
{
    let mut items = Vec::new();
    loop {
        let page = Page::clamped(Page::MAX_LIMIT, items.len() as i64, Page::MAX_LIMIT);
        let paged = fetch(page).await?;
        let got = paged.items.len() as i64;
        items.extend(paged.items);
        if got < Page::MAX_LIMIT || items.len() as i64 >= paged.total.min(cap) {
            return Ok(items);
        }
    }
}

/// A window of `size`/`count` items from `offset` (clamped to the protocol's limits).
pub(crate) fn window(
    request: &Request,
    size: &str,
    default: i64,
    offset: &str,
) -> Result<Option<Page>, SubsonicError> {
    let size = request.params.int(size)?.unwrap_or(default);
    let offset = request.params.int(offset)?.unwrap_or(0);
    Ok((size > 0).then(|| Page::clamped(size, offset, MAX_LIST)))
}
