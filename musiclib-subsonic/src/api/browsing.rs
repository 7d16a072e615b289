//! Browsing: folders, indexes, artists, albums, songs, genres, info, similar and top songs.

use std::collections::BTreeMap;

use musiclib_core::catalog::ItemKind;
use musiclib_core::domain::Artist;

use super::model::{self, FOLDER_ID, IGNORED_ARTICLES};
use super::{album_id, all_pages, artist_id, track_id, MAX_LIST};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// Most artists an index lists.
const MAX_INDEXED: i64 = 100_000;
/// Most tracks of one album, or albums of one artist, listed.
const MAX_CHILDREN: i64 = 10_000;

fn envelope(element: Element) -> Outcome {
    Ok(Reply::Envelope(Some(element)))
}

/// Every artist, grouped by index letter (`#` last), each group by name.
async fn indexed_artists(
    request: &Request,
) -> Result<BTreeMap<String, Vec<Artist>>, SubsonicError> {
    let artists = all_pages(MAX_INDEXED, |page| {
        request.library.catalog().list_artists(None, page)
    })
    .await?;
    let mut groups: BTreeMap<String, Vec<Artist>> = BTreeMap::new();
    for artist in artists {
        let letter = model::index_letter(&artist.name);
        // `~` sorts after every letter, so `#` comes last as clients expect.
        let key = if letter == "#" {
            "~".to_string()
        } else {
            letter
        };
        groups.entry(key).or_default().push(artist);
    }
    Ok(groups)
}

async fn index_elements(request: &Request, folder: bool) -> Result<Vec<Element>, SubsonicError> {
    let groups = indexed_artists(request).await?;
    let every: Vec<Artist> = groups.values().flatten().cloned().collect();
    // One query for the marks of every artist, then split by letter in order.
    let mut elements = request.artists(&every, folder).await?.into_iter();
    Ok(groups
        .into_iter()
        .map(|(key, artists)| {
            let name = if key == "~" { "#".to_string() } else { key };
            let group = elements.by_ref().take(artists.len()).collect();
            Element::new("index")
                .attr("name", name)
                .list("artist", group)
        })
        .collect())
}

/// `getArtists`: the ID3 artist index.
pub(crate) async fn artists(request: &Request) -> Outcome {
    let indexes = index_elements(request, false).await?;
    envelope(
        Element::new("artists")
            .attr("ignoredArticles", IGNORED_ARTICLES)
            .list("index", indexes),
    )
}

/// `getMusicDirectory`: an artist (its albums as folders) or an album (its songs).
pub(crate) async fn music_directory(request: &Request) -> Outcome {
    let id = request.params.required("id")?;
    if let Some((folder_library, path)) = super::folders::parse_folder_id(id) {
        return super::folders::directory(request, id, folder_library, &path).await;
    }
    let library = &request.library;
    match library.catalog().item_kind(id).await? {
        Some(ItemKind::Artist) => {
            let artist_id = artist_id(id)?;
            let artist = library.catalog().get_artist(&artist_id).await?;
            let albums = all_pages(MAX_CHILDREN, |page| {
                library.catalog().artist_albums(&artist_id, page)
            })
            .await?;
            let marks = request
                .marks(ItemKind::Artist, vec![id.to_string()])
                .await?;
            let marks = marks.get(id);
            envelope(
                Element::new("directory")
                    .attr("id", id)
                    .attr("parent", FOLDER_ID)
                    .attr("name", artist.name.as_str())
                    .opt("starred", marks.and_then(|marks| marks.starred_at))
                    .opt("userRating", marks.and_then(|marks| marks.rating))
                    .list("child", request.album_folders("child", &albums).await?),
            )
        }
        Some(ItemKind::Album) => {
            let album_id = album_id(id)?;
            let album = library.catalog().get_album(&album_id).await?;
            let tracks = all_pages(MAX_CHILDREN, |page| {
                library.catalog().album_tracks(&album_id, page)
            })
            .await?;
            let marks = request.marks(ItemKind::Album, vec![id.to_string()]).await?;
            let marks = marks.get(id);
            envelope(
                Element::new("directory")
                    .attr("id", id)
                    .opt("parent", album.artist_id.as_ref().map(|id| id.to_string()))
                    .attr("name", album.title.as_str())
                    .opt("starred", marks.and_then(|marks| marks.starred_at))
                    .opt("userRating", marks.and_then(|marks| marks.rating))
                    .attr("playCount", marks.map_or(0, |marks| marks.play_count))
                    .list("child", request.songs("child", &tracks).await?),
            )
        }
        _ => Err(SubsonicError::not_found(format_args!("directory {id}"))),
    }
}

/// `getGenres`.
pub(crate) async fn genres(request: &Request) -> Outcome {
    let genres = request
        .library
        .catalog()
        .genres()
        .await?
        .into_iter()
        .map(|genre| {
            Element::new("genre")
                .attr("songCount", genre.track_count)
                .attr("albumCount", genre.album_count)
                .text(genre.name)
        })
        .collect();
    envelope(Element::new("genres").list("genre", genres))
}

/// `getArtist`: an artist with its albums.
pub(crate) async fn artist(request: &Request) -> Outcome {
    let raw = request.params.required("id")?;
    let id = artist_id(raw)?;
    let library = &request.library;
    let artist = library.catalog().get_artist(&id).await?;
    let albums = all_pages(MAX_CHILDREN, |page| {
        library.catalog().artist_albums(&id, page)
    })
    .await?;
    let marks = request
        .marks(ItemKind::Artist, vec![raw.to_string()])
        .await?;
    envelope(
        model::artist_id3("artist", &artist, marks.get(raw))
            .list("album", request.albums(&albums).await?),
    )
}

/// `getAlbum`: an album with its songs in disc and track order.
pub(crate) async fn album(request: &Request) -> Outcome {
    let raw = request.params.required("id")?;
    let id = album_id(raw)?;
    let library = &request.library;
    let album = library.catalog().get_album(&id).await?;
    let tracks = all_pages(MAX_CHILDREN, |page| {
        library.catalog().album_tracks(&id, page)
    })
    .await?;
    let marks = request
        .marks(ItemKind::Album, vec![raw.to_string()])
        .await?;
    envelope(
        model::album_id3(&album, marks.get(raw))
            .list("song", request.songs("song", &tracks).await?),
    )
}

/// `getSong`.
pub(crate) async fn song(request: &Request) -> Outcome {
    let id = track_id(request.params.required("id")?)?;
    let track = request.library.catalog().get_track(&id).await?;
    let mut songs = request
        .every_song("song", std::slice::from_ref(&track))
        .await?;
    envelope(songs.remove(0))
}

/// `getArtistInfo` / `getArtistInfo2`: the MusicBrainz id and the similar artists of the
/// recommendation engine (shared genres, co-listening, co-liking, shared playlists). No
/// biography or images: musiclib keeps none.
pub(crate) async fn artist_info(request: &Request, method: &str) -> Outcome {
    let raw = request.params.required("id")?;
    let id = artist_id(raw)?;
    let count = request
        .params
        .int("count")?
        .unwrap_or(20)
        .clamp(0, musiclib_core::recommend::SIMILAR_MAX as i64);
    let library = &request.library;
    let artist = library.catalog().get_artist(&id).await?;
    let similar: Vec<Artist> = if count > 0 {
        library
            .recommend()
            .similar_artists(&id, count as usize)
            .await?
            .into_iter()
            .map(|similar| similar.artist)
            .collect()
    } else {
        Vec::new()
    };
    let folder = method == "getArtistInfo";
    let marks = request
        .marks(
            ItemKind::Artist,
            similar.iter().map(|artist| artist.id.to_string()).collect(),
        )
        .await?;
    let similar = similar
        .iter()
        .map(|artist| {
            let marks = marks.get(artist.id.as_str());
            if folder {
                model::artist_folder(artist, marks).renamed("similarArtist")
            } else {
                model::artist_id3("similarArtist", artist, marks)
            }
        })
        .collect();
    let mut info = Element::new(if folder { "artistInfo" } else { "artistInfo2" });
    if let Some(mbid) = &artist.musicbrainz_id {
        info = info.child(Element::new("musicBrainzId").text(mbid.as_str()));
    }
    envelope(info.list("similarArtist", similar))
}

/// `getAlbumInfo` / `getAlbumInfo2`: the album's MusicBrainz id.
pub(crate) async fn album_info(request: &Request) -> Outcome {
    let id = album_id(request.params.required("id")?)?;
    let album = request.library.catalog().get_album(&id).await?;
    let mut info = Element::new("albumInfo");
    if let Some(mbid) = &album.musicbrainz_album_id {
        info = info.child(Element::new("musicBrainzId").text(mbid.as_str()));
    }
    envelope(info)
}

/// `getSimilarSongs` / `getSimilarSongs2`: songs like a song, album or artist, from the
/// recommendation engine (the radio's signals: artist, similar artists, genre and era,
/// listened together, likes, sound), ranked, at most two per artist in twenty.
pub(crate) async fn similar_songs(request: &Request, method: &str) -> Outcome {
    let id = request.params.required("id")?;
    let count = request
        .params
        .int("count")?
        .unwrap_or(50)
        .clamp(1, musiclib_core::recommend::SIMILAR_MAX as i64);
    let tracks = request
        .library
        .recommend()
        .similar_tracks(&request.caller, id, count)
        .await?;
    let name = if method == "getSimilarSongs" {
        "similarSongs"
    } else {
        "similarSongs2"
    };
    envelope(Element::new(name).list("song", request.songs("song", &tracks).await?))
}

/// `getTopSongs`: an artist's most played songs, by `artist` name or by `id`
/// (OpenSubsonic `topSongsByArtistId`; `id` wins).
pub(crate) async fn top_songs(request: &Request) -> Outcome {
    let count = request
        .params
        .int("count")?
        .unwrap_or(50)
        .clamp(1, MAX_LIST);
    let recommend = request.library.recommend();
    let tracks = match request.params.get("id") {
        Some(raw) => {
            let id = artist_id(raw)?;
            request.library.catalog().get_artist(&id).await?;
            recommend.top_tracks_of(&id, count).await?
        }
        None => {
            let artist = request.params.required("artist")?;
            recommend.top_tracks(artist, count).await?
        }
    };
    envelope(Element::new("topSongs").list("song", request.songs("song", &tracks).await?))
}

/// `getSonicSimilarTracks` (OpenSubsonic `sonicSimilarity`): the playable songs nearest to a
/// song by its analysed sound, each with its similarity (1 the same sound). Empty while the
/// song's sound is not analysed.
pub(crate) async fn sonic_similar(request: &Request) -> Outcome {
    let id = track_id(request.params.required("id")?)?;
    let count = request.params.int("count")?.unwrap_or(10).clamp(1, 100);
    let matches = request
        .library
        .recommend()
        .sonic_similar(&id, count as usize)
        .await?;
    sonic_matches(request, matches).await
}

/// `findSonicPath` (OpenSubsonic `sonicSimilarity`): about `count` playable songs (default
/// 25) leading by sound from `startSongId` to `endSongId`, both included, each with its
/// similarity to the starting song (1 for the start itself).
pub(crate) async fn sonic_path(request: &Request) -> Outcome {
    let from = track_id(request.params.required("startSongId")?)?;
    let to = track_id(request.params.required("endSongId")?)?;
    let count = request.params.int("count")?.unwrap_or(25).clamp(2, 100);
    let matches = request
        .library
        .recommend()
        .sonic_path(&from, &to, count as usize)
        .await?;
    sonic_matches(request, matches).await
}

/// `sonicMatch` entries: `{"entry": Child, "similarity": number}`.
async fn sonic_matches(
    request: &Request,
    matches: Vec<musiclib_core::recommend::SonicMatch>,
) -> Outcome {
    let tracks: Vec<musiclib_core::domain::Track> =
        matches.iter().map(|found| found.track.clone()).collect();
    let entries = request.every_song("entry", &tracks).await?;
    let items = entries
        .into_iter()
        .zip(&matches)
        .map(|(entry, found)| {
            Element::new("sonicMatch")
                .child(entry)
                .attr("similarity", found.similarity)
        })
        .collect();
    envelope(Element::bare().list("sonicMatch", items))
}
