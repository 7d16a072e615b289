//! Catalogue items as protocol elements: songs (`Child`), albums (`AlbumID3`, or `Child`
//! folders), artists (`ArtistID3`, or `Artist`), playlists, with the OpenSubsonic attributes
//! clients read (`mediaType`, `played`, `samplingRate`, `channelCount`, `musicBrainzId`,
//! `sortName`, `isCompilation`, `readonly`, and on songs the `replayGain` object).

use std::collections::HashMap;

use musiclib_core::domain::{Album, Artist, Track};
use musiclib_core::playlists::Playlist;
use musiclib_core::{catalog::ItemKind, social::Annotation};

use crate::response::{Element, SubsonicError};
use crate::Request;

/// The one music folder: the whole library.
pub const FOLDER_ID: i64 = 1;

/// Articles left out when artists are indexed by their first letter.
pub const IGNORED_ARTICLES: &str = "The El La Los Las Le Les";

fn seconds(ms: Option<i64>) -> Option<i64> {
    ms.map(|ms| (ms + 500) / 1000)
}

/// A song as `Child` under `name` (`song`, `entry`, `child`).
pub fn song(name: &'static str, track: &Track, marks: Option<&Annotation>) -> Element {
    let suffix = track.format.clone().or_else(|| {
        track
            .storage_uri
            .rsplit_once('.')
            .map(|(_, extension)| extension.to_string())
    });
    Element::new(name)
        .attr("id", track.id.to_string())
        .opt("parent", track.album_id.as_ref().map(|id| id.to_string()))
        .attr("isDir", false)
        .attr("title", track.title.as_str())
        .opt("album", track.album_title.as_deref())
        .opt("artist", track.artist_name.as_deref())
        .opt("track", track.track_number)
        .opt("year", track.year)
        .opt("genre", track.genre.as_deref())
        .attr("coverArt", cover_id(track))
        .opt("size", track.size_bytes)
        .opt("contentType", track.mime_type.as_deref())
        .opt("suffix", suffix)
        .opt("duration", seconds(track.duration_ms))
        .opt("bitRate", track.bitrate_kbps)
        .attr("isVideo", false)
        .opt("userRating", marks.and_then(|marks| marks.rating))
        .attr("playCount", marks.map_or(0, |marks| marks.play_count))
        .opt("discNumber", track.disc_number)
        .attr("created", track.created_at)
        .opt("starred", marks.and_then(|marks| marks.starred_at))
        .opt("albumId", track.album_id.as_ref().map(|id| id.to_string()))
        .opt(
            "artistId",
            track.artist_id.as_ref().map(|id| id.to_string()),
        )
        .attr("type", "music")
        .attr("mediaType", "song")
        .opt("played", marks.and_then(|marks| marks.last_played))
        .opt("samplingRate", track.sample_rate)
        .opt("channelCount", track.channels)
        .opt("musicBrainzId", track.musicbrainz_recording_id.as_deref())
        .opt_child(replay_gain(track))
}

/// A song's OpenSubsonic `replayGain` (`trackGain` and `albumGain` in dB, `trackPeak` and
/// `albumPeak` linear), with the values known; none while nothing is.
fn replay_gain(track: &Track) -> Option<Element> {
    let gain = &track.replay_gain;
    if !gain.is_present() && gain.album_gain.is_none() {
        return None;
    }
    Some(
        Element::new("replayGain")
            .opt("trackGain", gain.track_gain)
            .opt("albumGain", gain.album_gain)
            .opt("trackPeak", gain.track_peak)
            .opt("albumPeak", gain.album_peak),
    )
}

/// The `coverArt` id of a track: its album's (so the cover is fetched once per album), or
/// its own when it has no album.
fn cover_id(track: &Track) -> String {
    match &track.album_id {
        Some(album) => album.to_string(),
        None => track.id.to_string(),
    }
}

/// An album as `AlbumID3`.
pub fn album_id3(album: &Album, marks: Option<&Annotation>) -> Element {
    Element::new("album")
        .attr("id", album.id.to_string())
        .attr("name", album.title.as_str())
        .opt("artist", album.artist_name.as_deref())
        .opt(
            "artistId",
            album.artist_id.as_ref().map(|id| id.to_string()),
        )
        .attr("coverArt", album.id.to_string())
        .attr("songCount", album.track_count)
        .attr("duration", (album.duration_ms + 500) / 1000)
        .attr("playCount", marks.map_or(0, |marks| marks.play_count))
        .attr("created", album.created_at)
        .opt("starred", marks.and_then(|marks| marks.starred_at))
        .opt("year", album.year)
        .opt("genre", album.genre.as_deref())
        .opt("userRating", marks.and_then(|marks| marks.rating))
        .opt("played", marks.and_then(|marks| marks.last_played))
        .opt("musicBrainzId", album.musicbrainz_album_id.as_deref())
        .attr("isCompilation", album.is_compilation)
}

/// An album as a folder `Child` (the folder model of `getAlbumList`, `getMusicDirectory`).
pub fn album_folder(name: &'static str, album: &Album, marks: Option<&Annotation>) -> Element {
    Element::new(name)
        .attr("id", album.id.to_string())
        .opt("parent", album.artist_id.as_ref().map(|id| id.to_string()))
        .attr("isDir", true)
        .attr("title", album.title.as_str())
        .attr("album", album.title.as_str())
        .opt("artist", album.artist_name.as_deref())
        .opt("year", album.year)
        .opt("genre", album.genre.as_deref())
        .attr("coverArt", album.id.to_string())
        .attr("duration", (album.duration_ms + 500) / 1000)
        .opt("userRating", marks.and_then(|marks| marks.rating))
        .attr("playCount", marks.map_or(0, |marks| marks.play_count))
        .attr("created", album.created_at)
        .opt("starred", marks.and_then(|marks| marks.starred_at))
        .attr("albumId", album.id.to_string())
        .opt(
            "artistId",
            album.artist_id.as_ref().map(|id| id.to_string()),
        )
}

/// An artist as `ArtistID3` under `name` (`artist`, `similarArtist`).
pub fn artist_id3(name: &'static str, artist: &Artist, marks: Option<&Annotation>) -> Element {
    Element::new(name)
        .attr("id", artist.id.to_string())
        .attr("name", artist.name.as_str())
        .attr("coverArt", artist.id.to_string())
        .attr("albumCount", artist.album_count)
        .opt("starred", marks.and_then(|marks| marks.starred_at))
        .opt("musicBrainzId", artist.musicbrainz_id.as_deref())
        .opt("sortName", artist.sort_name.as_deref())
}

/// An artist as a folder-model `Artist`.
pub fn artist_folder(artist: &Artist, marks: Option<&Annotation>) -> Element {
    Element::new("artist")
        .attr("id", artist.id.to_string())
        .attr("name", artist.name.as_str())
        .opt("starred", marks.and_then(|marks| marks.starred_at))
        .opt("userRating", marks.and_then(|marks| marks.rating))
}

/// A playlist without its entries.
pub fn playlist(playlist: &Playlist, caller_id: &str) -> Element {
    Element::new("playlist")
        .attr("id", playlist.id.to_string())
        .attr("name", playlist.name.as_str())
        .opt("comment", playlist.description.as_deref())
        .attr("owner", playlist.owner_name.as_str())
        .attr("public", playlist.public)
        .attr("songCount", playlist.track_ids.len() as i64)
        .attr("duration", (playlist.duration_ms + 500) / 1000)
        .attr("created", playlist.created_at)
        .attr("changed", playlist.updated_at)
        .attr("coverArt", playlist.id.to_string())
        // A smart playlist's tracks follow its rules: no app may edit them.
        .attr(
            "readonly",
            playlist.owner_id.as_str() != caller_id || playlist.rules.is_some(),
        )
}

/// The letter an artist is indexed under: the first of its name after a leading article,
/// upper case; `#` for anything that is not a letter.
pub fn index_letter(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let mut rest = lower.as_str();
    for article in IGNORED_ARTICLES.split(' ') {
        let article = article.to_lowercase();
        if let Some(after) = rest
            .strip_prefix(&article)
            .and_then(|after| after.strip_prefix(' '))
        {
            rest = after.trim_start();
            break;
        }
    }
    match rest.chars().next() {
        Some(first) if first.is_alphabetic() => first.to_uppercase().collect(),
        _ => "#".into(),
    }
}

impl Request {
    /// The caller's marks on `ids` of `kind`.
    pub async fn marks(
        &self,
        kind: ItemKind,
        ids: Vec<String>,
    ) -> Result<HashMap<String, Annotation>, SubsonicError> {
        Ok(self
            .library
            .social()
            .annotations(&self.caller, kind, &ids)
            .await?)
    }

    /// `items` as elements built by `build`, with the caller's marks on each (one query).
    async fn marked<T>(
        &self,
        kind: ItemKind,
        items: &[T],
        id: impl Fn(&T) -> &str,
        build: impl Fn(&T, Option<&Annotation>) -> Element,
    ) -> Result<Vec<Element>, SubsonicError> {
        let marks = self
            .marks(
                kind,
                items.iter().map(|item| id(item).to_string()).collect(),
            )
            .await?;
        Ok(items
            .iter()
            .map(|item| build(item, marks.get(id(item))))
            .collect())
    }

    /// Songs as elements named `name`, with the caller's marks. Placeholders of remote items
    /// (no audio yet) are left out: Subsonic apps list and cache songs to play them, and one
    /// they could not play would fail there. Playlists keep them ([`Request::every_song`]).
    pub async fn songs(
        &self,
        name: &'static str,
        tracks: &[Track],
    ) -> Result<Vec<Element>, SubsonicError> {
        if tracks.iter().all(musiclib_core::remote::has_audio) {
            return self.every_song(name, tracks).await;
        }
        let playable: Vec<Track> = tracks
            .iter()
            .filter(|track| musiclib_core::remote::has_audio(track))
            .cloned()
            .collect();
        self.every_song(name, &playable).await
    }

    /// Songs as elements named `name`, with the caller's marks, placeholders included: for a
    /// playlist, whose entries are addressed by position, and a song asked for by id.
    /// Streaming a placeholder fetches its audio first.
    pub async fn every_song(
        &self,
        name: &'static str,
        tracks: &[Track],
    ) -> Result<Vec<Element>, SubsonicError> {
        self.marked(
            ItemKind::Track,
            tracks,
            |track| track.id.as_str(),
            |track, marks| song(name, track, marks),
        )
        .await
    }

    /// Albums as `AlbumID3`, with the caller's marks.
    pub async fn albums(&self, albums: &[Album]) -> Result<Vec<Element>, SubsonicError> {
        self.marked(
            ItemKind::Album,
            albums,
            |album| album.id.as_str(),
            album_id3,
        )
        .await
    }

    /// Albums as folder `Child` elements named `name`, with the caller's marks.
    pub async fn album_folders(
        &self,
        name: &'static str,
        albums: &[Album],
    ) -> Result<Vec<Element>, SubsonicError> {
        self.marked(
            ItemKind::Album,
            albums,
            |album| album.id.as_str(),
            |album, marks| album_folder(name, album, marks),
        )
        .await
    }

    /// Artists as `ArtistID3` (`folder` false) or `Artist` (`folder` true).
    pub async fn artists(
        &self,
        artists: &[Artist],
        folder: bool,
    ) -> Result<Vec<Element>, SubsonicError> {
        self.marked(
            ItemKind::Artist,
            artists,
            |artist| artist.id.as_str(),
            |artist, marks| {
                if folder {
                    artist_folder(artist, marks)
                } else {
                    artist_id3("artist", artist, marks)
                }
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artists_are_indexed_past_their_article() {
        assert_eq!(index_letter("The Beatles"), "B");
        assert_eq!(index_letter("théâtre"), "T");
        assert_eq!(index_letter("Theatre"), "T");
        assert_eq!(index_letter("Los Lobos"), "L");
        assert_eq!(index_letter("ásgeir"), "Á");
        assert_eq!(index_letter("2Pac"), "#");
        assert_eq!(index_letter(""), "#");
    }
}
