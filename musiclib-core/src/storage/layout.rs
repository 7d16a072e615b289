//! The storage layout: every blob key the library writes, built here and nowhere else, and
//! the row that references each namespace. Cleanup and statistics read [`NAMESPACES`] to know
//! what a key belongs to and which table says whether it is still wanted.
//!
//! A row points at a blob only after the blob is whole (ARCHITECTURE.md, "Invariants"), so a
//! blob no row references is an orphan: left by a crash between the two writes, or by a
//! delete whose blob removal failed.

use crate::{AlbumId, EpisodeId, PlaylistId, PodcastId, TrackId, UserId};

/// A family of blobs with one key shape and one referencing column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// Original audio of tracks.
    Audio,
    /// Album covers.
    Covers,
    /// Scaled copies of album covers, made on request.
    Thumbnails,
    /// Opus renditions of tracks.
    OpusRenditions,
    /// HLS renditions of tracks: a playlist and its segments under one prefix.
    HlsRenditions,
    /// Playlist cover images.
    PlaylistCovers,
    /// Downloaded podcast episodes and the channels' images.
    Podcasts,
    /// Users' uploaded pictures.
    Avatars,
    /// Writes in flight on the local backend (renamed into place when whole).
    Staging,
}

/// Where a namespace lives and what keeps its blobs alive.
#[derive(Debug, Clone, Copy)]
pub struct NamespaceInfo {
    /// The namespace.
    pub namespace: Namespace,
    /// The key prefix every blob of it has.
    pub prefix: &'static str,
    /// The key shape, for people.
    pub shape: &'static str,
    /// The `table.column` whose values reference its blobs (`None`: nothing does; a blob is
    /// wanted only while its owner exists, see `owner`).
    pub referenced_by: Option<&'static str>,
    /// What owns a blob of it, when no column names it directly.
    pub owner: &'static str,
}

/// Every namespace, in key order.
pub const NAMESPACES: &[NamespaceInfo] = &[
    NamespaceInfo {
        namespace: Namespace::Staging,
        prefix: ".staging/",
        shape: ".staging/{uuid}",
        referenced_by: None,
        owner: "a write in progress; older than a day is abandoned",
    },
    NamespaceInfo {
        namespace: Namespace::Avatars,
        prefix: "avatars/",
        shape: "avatars/{user_id}/{uuid}.{ext}",
        referenced_by: Some("users.avatar_uri"),
        owner: "the user",
    },
    NamespaceInfo {
        namespace: Namespace::Audio,
        prefix: "audio/",
        shape: "audio/{track_id}[.{revision}].{format}",
        referenced_by: Some("tracks.storage_uri"),
        owner: "the track",
    },
    NamespaceInfo {
        namespace: Namespace::Thumbnails,
        prefix: "covers/thumbs/",
        shape: "covers/thumbs/{album_id}/{size}.{jpg|png}",
        referenced_by: Some("thumbnails.storage_uri"),
        owner: "the album (a cache bounded by THUMBNAIL_CACHE_MAX_BYTES)",
    },
    NamespaceInfo {
        namespace: Namespace::Covers,
        prefix: "covers/",
        shape: "covers/{album_id}.{ext}",
        referenced_by: Some("albums.cover_uri"),
        owner: "the album",
    },
    NamespaceInfo {
        namespace: Namespace::PlaylistCovers,
        prefix: "playlist-covers/",
        shape: "playlist-covers/{playlist_id}/{uuid}.{ext}",
        referenced_by: Some("playlists.cover_uri"),
        owner: "the playlist",
    },
    NamespaceInfo {
        namespace: Namespace::Podcasts,
        prefix: "podcasts/",
        shape:
            "podcasts/{podcast_id}/{episode_id}.{format} | podcasts/{podcast_id}/image-{uuid}.{ext}",
        referenced_by: Some("podcast_episodes.storage_uri, podcast_channels.image_uri"),
        owner: "the podcast channel",
    },
    NamespaceInfo {
        namespace: Namespace::HlsRenditions,
        prefix: "renditions/",
        shape: "renditions/{track_id}/hls/{build}/{playlist.m3u8|seg-NNNNN.ts}",
        referenced_by: Some("renditions.storage_uri (kind hls: the build's prefix)"),
        owner: "the track",
    },
    NamespaceInfo {
        namespace: Namespace::OpusRenditions,
        prefix: "renditions/",
        shape: "renditions/{track_id}/{quality}.opus",
        referenced_by: Some("renditions.storage_uri (kind opus)"),
        owner: "the track",
    },
];

/// Which namespace `key` belongs to, if any.
pub fn namespace_of(key: &str) -> Option<Namespace> {
    if key.starts_with("renditions/") {
        return Some(if key.contains("/hls/") {
            Namespace::HlsRenditions
        } else {
            Namespace::OpusRenditions
        });
    }
    NAMESPACES
        .iter()
        .find(|info| key.starts_with(info.prefix))
        .map(|info| info.namespace)
}

/// The original audio of a new track.
pub(crate) fn audio(track: &TrackId, format: &str) -> String {
    format!("audio/{track}.{format}")
}

/// New original audio of an existing track (a changed file read again, a remote item
/// fetched): a key of its own, so the bytes the row points at are never overwritten before
/// the row points elsewhere, and two writers never share one.
pub(crate) fn audio_revision(track: &TrackId, format: &str) -> String {
    let revision = &uuid::Uuid::new_v4().simple().to_string()[..12];
    format!("audio/{track}.{revision}.{format}")
}

/// An album's cover.
pub(crate) fn cover(album: &AlbumId, extension: &str) -> String {
    format!("covers/{album}.{extension}")
}

/// The prefix of an album's thumbnails (deleted with its cover).
pub(crate) fn thumbnails(album: &AlbumId) -> String {
    format!("covers/thumbs/{album}")
}

/// One thumbnail of an album's cover.
pub(crate) fn thumbnail(album: &AlbumId, size: u32, extension: &str) -> String {
    format!("covers/thumbs/{album}/{size}.{extension}")
}

/// An Opus rendition of a track.
pub(crate) fn opus_rendition(track: &TrackId, quality: &str) -> String {
    format!("renditions/{track}/{quality}.opus")
}

/// The prefix of one HLS build of a track (its playlist and segments; a new build never
/// overwrites another's files).
pub(crate) fn hls_build(track: &TrackId) -> String {
    format!("renditions/{track}/hls/{}/", uuid::Uuid::now_v7())
}

/// A playlist's cover (a new key per image, so a replaced cover is never half-visible).
pub(crate) fn playlist_cover(playlist: &PlaylistId, extension: &str) -> String {
    format!(
        "playlist-covers/{playlist}/{}.{extension}",
        uuid::Uuid::now_v7()
    )
}

/// A downloaded podcast episode.
pub(crate) fn podcast_episode(channel: &PodcastId, episode: &EpisodeId, format: &str) -> String {
    format!("podcasts/{channel}/{episode}.{format}")
}

/// A podcast channel's image (a new key per image, so a replaced image is never
/// half-visible).
pub(crate) fn podcast_image(channel: &PodcastId, extension: &str) -> String {
    format!(
        "podcasts/{channel}/image-{}.{extension}",
        uuid::Uuid::now_v7()
    )
}

/// A user's uploaded picture (a new key per image, so a replaced one is never half-visible).
pub(crate) fn avatar(user: &UserId, extension: &str) -> String {
    format!("avatars/{user}/{}.{extension}", uuid::Uuid::now_v7())
}

/// Where a local store stages a write before renaming it into place.
pub(crate) const STAGING: &str = ".staging";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_the_library_writes_has_its_namespace() {
        let track = TrackId::new();
        let album = AlbumId::new();
        let cases = [
            (audio(&track, "flac"), Namespace::Audio),
            (cover(&album, "jpg"), Namespace::Covers),
            (thumbnail(&album, 300, "jpg"), Namespace::Thumbnails),
            (opus_rendition(&track, "low"), Namespace::OpusRenditions),
            (
                format!("{}seg-00000.ts", hls_build(&track)),
                Namespace::HlsRenditions,
            ),
            (
                playlist_cover(&PlaylistId::new(), "png"),
                Namespace::PlaylistCovers,
            ),
            (
                podcast_episode(&PodcastId::new(), &EpisodeId::new(), "mp3"),
                Namespace::Podcasts,
            ),
            (podcast_image(&PodcastId::new(), "jpg"), Namespace::Podcasts),
            (avatar(&UserId::new(), "png"), Namespace::Avatars),
            (format!("{STAGING}/x"), Namespace::Staging),
        ];
        for (key, namespace) in cases {
            assert_eq!(namespace_of(&key), Some(namespace), "{key}");
        }
        assert_eq!(namespace_of("elsewhere/x"), None);
    }
}
