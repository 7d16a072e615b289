//! The protocol's methods, grouped as in the Subsonic documentation.

pub(crate) mod annotation;
pub(crate) mod browsing;
pub(crate) mod lists;
pub(crate) mod media;
pub(crate) mod model;
pub(crate) mod playlists;
pub(crate) mod system;

use std::future::Future;

use musiclib_core::domain::{Page, Paged};
use musiclib_core::{AlbumId, ArtistId, PlaylistId, TrackId};

use crate::response::SubsonicError;
use crate::{Outcome, Request};

/// Largest list a client may ask for in one call (`size`, `count`).
pub(crate) const MAX_LIST: i64 = 500;

/// Runs the method `name`.
pub(crate) async fn dispatch(name: &str, request: &Request) -> Outcome {
    match name {
        "ping" => system::ping(request).await,
        "getLicense" => system::license(request).await,
        "tokenInfo" => system::token_info(request).await,
        "getUser" => system::user(request).await,
        "startScan" => system::start_scan(request).await,
        "getScanStatus" => system::scan_status(request).await,

        "getMusicFolders" => browsing::music_folders(request).await,
        "getIndexes" => browsing::indexes(request).await,
        "getMusicDirectory" => browsing::music_directory(request).await,
        "getGenres" => browsing::genres(request).await,
        "getArtists" => browsing::artists(request).await,
        "getArtist" => browsing::artist(request).await,
        "getAlbum" => browsing::album(request).await,
        "getSong" => browsing::song(request).await,
        "getArtistInfo" | "getArtistInfo2" => browsing::artist_info(request, name).await,
        "getAlbumInfo" | "getAlbumInfo2" => browsing::album_info(request).await,
        "getSimilarSongs" | "getSimilarSongs2" => browsing::similar_songs(request, name).await,
        "getTopSongs" => browsing::top_songs(request).await,

        "getAlbumList" | "getAlbumList2" => lists::album_list(request, name).await,
        "getRandomSongs" => lists::random_songs(request).await,
        "getSongsByGenre" => lists::songs_by_genre(request).await,
        "getNowPlaying" => lists::now_playing(request).await,
        "getStarred" | "getStarred2" => lists::starred(request, name).await,
        "search2" | "search3" => lists::search(request, name).await,

        "getPlaylists" => playlists::list(request).await,
        "getPlaylist" => playlists::get(request).await,
        "createPlaylist" => playlists::create(request).await,
        "updatePlaylist" => playlists::update(request).await,
        "deletePlaylist" => playlists::delete(request).await,

        "stream" => media::stream(request).await,
        "download" => media::download(request).await,
        "getCoverArt" => media::cover_art(request).await,
        "getLyrics" => media::lyrics(request).await,
        "getLyricsBySongId" => media::lyrics_by_song_id(request).await,

        "star" => annotation::star(request, true).await,
        "unstar" => annotation::star(request, false).await,
        "setRating" => annotation::set_rating(request).await,
        "scrobble" => annotation::scrobble(request).await,
        "savePlayQueue" => annotation::save_play_queue(request).await,
        "getPlayQueue" => annotation::play_queue(request).await,

        other => Err(SubsonicError::not_supported(other)),
    }
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
