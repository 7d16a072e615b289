//! The protocol's methods, grouped as in the Subsonic documentation.

pub(crate) mod annotation;
pub(crate) mod browsing;
pub(crate) mod lists;
pub(crate) mod media;
pub(crate) mod model;
pub(crate) mod playlists;
pub(crate) mod system;

use std::future::Future;

use futures::future::BoxFuture;

use musiclib_core::domain::{Page, Paged};
use musiclib_core::{AlbumId, ArtistId, PlaylistId, TrackId};

use crate::response::SubsonicError;
use crate::{Outcome, Request};

/// Largest list a client may ask for in one call (`size`, `count`).
pub(crate) const MAX_LIST: i64 = 500;

/// Runs the method `name`.
///
/// Each method's future is boxed: the future of a `match` over every handler would be as
/// large as the largest of them, allocated and moved for every request, even a `ping`.
pub(crate) async fn dispatch(name: &str, request: &Request) -> Outcome {
    let method: BoxFuture<'_, Outcome> = match name {
        "ping" => Box::pin(system::ping(request)),
        "getLicense" => Box::pin(system::license(request)),
        "tokenInfo" => Box::pin(system::token_info(request)),
        "getUser" => Box::pin(system::user(request)),
        "getUsers" => Box::pin(system::users(request)),
        "startScan" => Box::pin(system::start_scan(request)),
        "getScanStatus" => Box::pin(system::scan_status(request)),

        "getMusicFolders" => Box::pin(browsing::music_folders(request)),
        "getIndexes" => Box::pin(browsing::indexes(request)),
        "getMusicDirectory" => Box::pin(browsing::music_directory(request)),
        "getGenres" => Box::pin(browsing::genres(request)),
        "getArtists" => Box::pin(browsing::artists(request)),
        "getArtist" => Box::pin(browsing::artist(request)),
        "getAlbum" => Box::pin(browsing::album(request)),
        "getSong" => Box::pin(browsing::song(request)),
        "getArtistInfo" | "getArtistInfo2" => Box::pin(browsing::artist_info(request, name)),
        "getAlbumInfo" | "getAlbumInfo2" => Box::pin(browsing::album_info(request)),
        "getSimilarSongs" | "getSimilarSongs2" => Box::pin(browsing::similar_songs(request, name)),
        "getTopSongs" => Box::pin(browsing::top_songs(request)),
        "getSonicSimilarTracks" => Box::pin(browsing::sonic_similar(request)),
        "findSonicPath" => Box::pin(browsing::sonic_path(request)),

        "getAlbumList" | "getAlbumList2" => Box::pin(lists::album_list(request, name)),
        "getRandomSongs" => Box::pin(lists::random_songs(request)),
        "getSongsByGenre" => Box::pin(lists::songs_by_genre(request)),
        "getNowPlaying" => Box::pin(lists::now_playing(request)),
        "getStarred" | "getStarred2" => Box::pin(lists::starred(request, name)),
        "search2" | "search3" => Box::pin(lists::search(request, name)),

        "getPlaylists" => Box::pin(playlists::list(request)),
        "getPlaylist" => Box::pin(playlists::get(request)),
        "createPlaylist" => Box::pin(playlists::create(request)),
        "updatePlaylist" => Box::pin(playlists::update(request)),
        "deletePlaylist" => Box::pin(playlists::delete(request)),

        "stream" => Box::pin(media::stream(request)),
        "download" => Box::pin(media::download(request)),
        "getCoverArt" => Box::pin(media::cover_art(request)),
        "getLyrics" => Box::pin(media::lyrics(request)),
        "getLyricsBySongId" => Box::pin(media::lyrics_by_song_id(request)),

        "star" => Box::pin(annotation::star(request, true)),
        "unstar" => Box::pin(annotation::star(request, false)),
        "setRating" => Box::pin(annotation::set_rating(request)),
        "scrobble" => Box::pin(annotation::scrobble(request)),
        "savePlayQueue" => Box::pin(annotation::save_play_queue(request)),
        "getPlayQueue" => Box::pin(annotation::play_queue(request)),
        "createBookmark" => Box::pin(annotation::create_bookmark(request)),
        "getBookmarks" => Box::pin(annotation::bookmarks(request)),
        "deleteBookmark" => Box::pin(annotation::delete_bookmark(request)),

        other => return Err(SubsonicError::not_supported(other)),
    };
    method.await
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
