//! Lists: album lists by kind, random songs, songs of a genre, now playing, starred items,
//! and search.

use musiclib_core::catalog::AlbumList;
use musiclib_core::catalog::{AlbumFilter, AlbumSortKey, Sort, TrackFilter, TrackSortKey};

use super::{window, MAX_LIST};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// `getAlbumList` (folder model) and `getAlbumList2` (ID3): every `type` of the protocol.
pub(crate) async fn album_list(request: &Request, method: &str) -> Outcome {
    let params = &request.params;
    let kind = match params.required("type")? {
        "random" => AlbumList::Random,
        "newest" => AlbumList::Newest,
        "highest" => AlbumList::Highest,
        "frequent" => AlbumList::Frequent,
        "recent" => AlbumList::Recent,
        "alphabeticalByName" => AlbumList::AlphabeticalByName,
        "alphabeticalByArtist" => AlbumList::AlphabeticalByArtist,
        "starred" => AlbumList::Starred,
        "byYear" => AlbumList::ByYear {
            from: params.int("fromYear")?.ok_or_else(|| SubsonicError::missing("fromYear"))?,
            to: params.int("toYear")?.ok_or_else(|| SubsonicError::missing("toYear"))?,
        },
        "byGenre" => AlbumList::ByGenre(params.required("genre")?.to_string()),
        other => {
            return Err(SubsonicError::invalid(
                "type",
                format!("{other:?} is not an album list type (random, newest, highest, frequent, recent, alphabeticalByName, alphabeticalByArtist, starred, byYear, byGenre)"),
            ))
        }
    };
    let albums = match window(request, "size", 10, "offset")? {
        Some(page) => {
            request
                .library
                .catalog()
                .album_list(&request.caller, &kind, page)
                .await?
        }
        None => Vec::new(),
    };
    let element = if method == "getAlbumList" {
        Element::new("albumList").list("album", request.album_folders("album", &albums).await?)
    } else {
        Element::new("albumList2").list("album", request.albums(&albums).await?)
    };
    Ok(Reply::Envelope(Some(element)))
}

/// `getRandomSongs`.
pub(crate) async fn random_songs(request: &Request) -> Outcome {
    let params = &request.params;
    let size = params.int("size")?.unwrap_or(10).clamp(1, MAX_LIST);
    let tracks = request
        .library
        .recommend()
        .random_tracks(
            params.get("genre"),
            params.int("fromYear")?,
            params.int("toYear")?,
            size,
        )
        .await?;
    Ok(Reply::Envelope(Some(
        Element::new("randomSongs").list("song", request.songs("song", &tracks).await?),
    )))
}

/// `getSongsByGenre`, paged.
pub(crate) async fn songs_by_genre(request: &Request) -> Outcome {
    let genre = request.params.required("genre")?;
    let tracks = match window(request, "count", 10, "offset")? {
        Some(page) => {
            let filter = TrackFilter {
                genre: Some(genre.to_string()),
                with_audio: true,
                ..Default::default()
            };
            let sort = Sort {
                key: TrackSortKey::Artist,
                descending: false,
            };
            request
                .library
                .catalog()
                .track_page(&filter, Some(sort), page)
                .await?
        }
        None => Vec::new(),
    };
    Ok(Reply::Envelope(Some(
        Element::new("songsByGenre").list("song", request.songs("song", &tracks).await?),
    )))
}

/// A stable small number for a client name (`playerId` is an integer in the schema).
fn player_id(client: &str) -> i64 {
    client
        .bytes()
        .fold(17i64, |hash, byte| (hash * 31 + byte as i64) % 1_000_000)
}

/// `getNowPlaying`: what everyone is playing.
pub(crate) async fn now_playing(request: &Request) -> Outcome {
    let entries = request.library.social().now_playing().await?;
    let tracks: Vec<_> = entries.iter().map(|entry| entry.track.clone()).collect();
    let songs = request.songs("entry", &tracks).await?;
    let now = musiclib_core::Timestamp::now().as_micros();
    let entries = entries
        .iter()
        .zip(songs)
        .map(|(entry, song)| {
            song.attr("username", entry.username.as_str())
                .attr(
                    "minutesAgo",
                    ((now - entry.since.as_micros()) / 60_000_000).max(0),
                )
                .attr("playerId", player_id(&entry.client))
                .attr("playerName", entry.client.as_str())
                // `playbackReport`'s timeline, where the player reports one.
                .opt("state", entry.timeline.as_ref().map(|t| t.state.as_str()))
                .opt("positionMs", entry.timeline.as_ref().map(|t| t.position_ms))
                .opt(
                    "playbackRate",
                    entry.timeline.as_ref().map(|t| t.playback_rate),
                )
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("nowPlaying").list("entry", entries),
    )))
}

/// `getStarred` (folder model) and `getStarred2` (ID3).
pub(crate) async fn starred(request: &Request, method: &str) -> Outcome {
    let starred = request.library.social().starred(&request.caller).await?;
    let folder = method == "getStarred";
    let element = Element::new(if folder { "starred" } else { "starred2" })
        .list("artist", request.artists(&starred.artists, folder).await?)
        .list(
            "album",
            if folder {
                request.album_folders("album", &starred.albums).await?
            } else {
                request.albums(&starred.albums).await?
            },
        )
        .list("song", request.songs("song", &starred.tracks).await?);
    Ok(Reply::Envelope(Some(element)))
}

/// The words of a search: Subsonic clients wrap them in quotes or add `*` wildcards.
fn search_words(query: &str) -> String {
    query
        .chars()
        .filter(|c| *c != '"' && *c != '*')
        .collect::<String>()
        .trim()
        .to_string()
}

/// `search2` (folder model) and `search3` (ID3): artists, albums and songs matching the
/// query, each paged on its own. An empty query returns everything (clients sync this way),
/// artists and albums by name, songs in the order they were added; a query's songs come by
/// title.
pub(crate) async fn search(request: &Request, method: &str) -> Outcome {
    let words = search_words(request.params.get("query").unwrap_or(""));
    let q = (!words.is_empty()).then_some(words);
    let library = &request.library;
    let artists = match window(request, "artistCount", 20, "artistOffset")? {
        Some(page) => {
            library
                .catalog()
                .list_artists(q.as_deref(), page)
                .await?
                .items
        }
        None => Vec::new(),
    };
    let albums = match window(request, "albumCount", 20, "albumOffset")? {
        Some(page) => {
            let filter = AlbumFilter {
                q: q.clone(),
                ..Default::default()
            };
            let sort = Sort {
                key: AlbumSortKey::Title,
                descending: false,
            };
            library
                .catalog()
                .list_albums(&filter, Some(sort), page)
                .await?
                .items
        }
        None => Vec::new(),
    };
    let tracks = match window(request, "songCount", 20, "songOffset")? {
        Some(page) => {
            // Only songs with audio, filtered before paging: an app syncing page after page
            // stops at a short page.
            let filter = TrackFilter {
                q: q.clone(),
                with_audio: true,
                ..Default::default()
            };
            // Everything is listed in the order it was added, as a sync app reads it page
            // after page: a track added meanwhile comes last instead of shifting the pages
            // still to read, and the walk follows the order rows are stored in.
            let sort = Sort {
                key: if filter.q.is_some() {
                    TrackSortKey::Title
                } else {
                    TrackSortKey::CreatedAt
                },
                descending: false,
            };
            library
                .catalog()
                .track_page(&filter, Some(sort), page)
                .await?
        }
        None => Vec::new(),
    };
    let folder = method == "search2";
    let element = Element::new(if folder {
        "searchResult2"
    } else {
        "searchResult3"
    })
    .list("artist", request.artists(&artists, folder).await?)
    .list(
        "album",
        if folder {
            request.album_folders("album", &albums).await?
        } else {
            request.albums(&albums).await?
        },
    )
    .list("song", request.songs("song", &tracks).await?);
    Ok(Reply::Envelope(Some(element)))
}

/// Most songs `search` considers: the matches of its most selective field, read whole
/// before the other fields and `newerThan` narrow them.
const MAX_SEARCH_CANDIDATES: i64 = 5_000;

/// `search` (1.0.0, deprecated by `search2` but still in 1.16.1): songs whose title contains
/// `title`, artist `artist`, album `album` (case and accents aside), and any of the three
/// `any`; added after `newerThan` (ms since the epoch) when given; by title, `count` (default
/// 20, at most 500) from `offset`, with `totalHits`. The library's text search finds the
/// candidates by the first field given (title, album, artist, any), at most
/// [`MAX_SEARCH_CANDIDATES`]; the other fields are checked on them.
pub(crate) async fn search_v1(request: &Request) -> Outcome {
    use musiclib_core::text::name_key;
    let params = &request.params;
    let term = |name: &str| {
        params
            .get(name)
            .map(search_words)
            .filter(|words| !words.is_empty())
    };
    let [title, album, artist, any] = ["title", "album", "artist", "any"].map(term);
    let primary = [&title, &album, &artist, &any]
        .into_iter()
        .find_map(|term| term.clone());
    let newer_than = params
        .int("newerThan")?
        .map(|ms| musiclib_core::Timestamp::from_micros(ms.saturating_mul(1000)));
    let count = params.int("count")?.unwrap_or(20).clamp(0, MAX_LIST) as usize;
    let offset = params.int("offset")?.unwrap_or(0).max(0) as usize;
    let filter = TrackFilter {
        q: primary,
        with_audio: true,
        ..Default::default()
    };
    let sort = Sort {
        key: TrackSortKey::Title,
        descending: false,
    };
    let candidates = super::all_pages(MAX_SEARCH_CANDIDATES, |page| {
        request
            .library
            .catalog()
            .list_tracks(&filter, Some(sort), page)
    })
    .await?;
    let contains = |field: Option<&str>, term: &Option<String>| match term {
        None => true,
        Some(term) => field.is_some_and(|field| name_key(field).contains(&name_key(term))),
    };
    let matches: Vec<_> = candidates
        .into_iter()
        .filter(|track| {
            let album_title = track.album_title.as_deref();
            let artist_name = track.artist_name.as_deref();
            contains(Some(&track.title), &title)
                && contains(album_title, &album)
                && contains(artist_name, &artist)
                && (contains(Some(&track.title), &any)
                    || contains(album_title, &any)
                    || contains(artist_name, &any))
                && newer_than.is_none_or(|since| track.created_at > since)
        })
        .collect();
    let shown: Vec<_> = matches.iter().skip(offset).take(count).cloned().collect();
    let element = Element::new("searchResult")
        .attr("offset", offset as i64)
        .attr("totalHits", matches.len() as i64)
        .list("match", request.songs("match", &shown).await?);
    Ok(Reply::Envelope(Some(element)))
}
