//! Library statistics: one grouped scan of the tracks (a covering index makes it an index
//! scan), small counts of artists and albums, the top genres from the genre index, and the
//! volume's capacity from the file system.

use std::collections::BTreeMap;

use super::Maintenance;
use crate::auth::Caller;
use crate::Result;

/// How many genres `top_genres` lists.
pub const TOP_GENRES: usize = 10;

/// What the library holds (`GET /storage`).
#[derive(Debug, Clone)]
pub struct LibraryStats {
    /// Tracks, placeholders included.
    pub tracks: i64,
    /// Artists.
    pub artists: i64,
    /// Albums.
    pub albums: i64,
    /// Bytes stored, by kind.
    pub footprint: Footprint,
    /// Total duration of all tracks, in seconds.
    pub playtime_seconds: i64,
    /// Tracks and original bytes by audio format (`unknown` for a placeholder).
    pub by_format: Vec<Breakdown>,
    /// Tracks and original bytes by source.
    pub by_source: Vec<Breakdown>,
    /// Tracks and original bytes by metadata status.
    pub by_metadata_status: Vec<Breakdown>,
    /// The most common genres, most tracks first (at most [`TOP_GENRES`]).
    pub top_genres: Vec<GenreCount>,
    /// The volume of local storage; `None` on an object store.
    pub disk: Option<DiskUsage>,
}

/// Bytes stored, by kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Footprint {
    /// Original audio files.
    pub originals_bytes: i64,
    /// Opus and HLS renditions (a cache: cleanup may drop the least used).
    pub renditions_bytes: i64,
    /// Album and playlist covers (thumbnails, a cache made on request, not counted).
    pub covers_bytes: i64,
    /// The three together.
    pub total_bytes: i64,
}

/// One group of a breakdown.
#[derive(Debug, Clone)]
pub struct Breakdown {
    /// The group's value (`flac`, `upload`, `enriched`, …).
    pub key: String,
    /// Tracks in it.
    pub tracks: i64,
    /// Their original bytes.
    pub bytes: i64,
}

/// A genre and how many tracks have it.
#[derive(Debug, Clone)]
pub struct GenreCount {
    /// The genre as tagged.
    pub genre: String,
    /// Tracks with it.
    pub tracks: i64,
}

/// Capacity of the volume holding local storage.
#[derive(Debug, Clone, Copy)]
pub struct DiskUsage {
    /// Size of the volume.
    pub capacity_bytes: u64,
    /// Bytes in use (by anything, not only the library).
    pub used_bytes: u64,
    /// Bytes this server can still write.
    pub free_bytes: u64,
}

#[derive(sqlx::FromRow)]
struct GroupRow {
    format: Option<String>,
    source: String,
    metadata_status: String,
    tracks: i64,
    bytes: Option<i64>,
    duration_ms: Option<i64>,
}

impl Maintenance {
    /// Library statistics, for any signed-in user.
    pub async fn statistics(&self, _caller: &Caller) -> Result<LibraryStats> {
        let pool = self.db.pool();
        let groups: Vec<GroupRow> = self
            .db
            .sql(
                "SELECT format, source, metadata_status, COUNT(*) AS tracks,
                        CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) AS bytes,
                        CAST(COALESCE(SUM(duration_ms), 0) AS BIGINT) AS duration_ms
                 FROM tracks GROUP BY format, source, metadata_status",
            )
            .fetch_all(pool)
            .await?;
        let counts: (i64, i64, Option<i64>, Option<i64>, Option<i64>) = self
            .db
            .sql(
                "SELECT (SELECT COUNT(*) FROM artists), (SELECT COUNT(*) FROM albums),
                        (SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM renditions),
                        (SELECT CAST(COALESCE(SUM(cover_size_bytes), 0) AS BIGINT) FROM albums
                         WHERE cover_uri IS NOT NULL),
                        (SELECT CAST(COALESCE(SUM(cover_size_bytes), 0) AS BIGINT) FROM playlists
                         WHERE cover_uri IS NOT NULL)",
            )
            .fetch_optional(pool)
            .await?
            .unwrap_or_default();
        let top_genres: Vec<(String, i64)> = self
            .db
            .sql(&format!(
                "SELECT genre, COUNT(*) AS tracks FROM tracks
                 WHERE genre IS NOT NULL AND genre <> ''
                 GROUP BY genre ORDER BY tracks DESC, genre LIMIT {TOP_GENRES}"
            ))
            .fetch_all(pool)
            .await?;

        let mut by_format = BTreeMap::new();
        let mut by_source = BTreeMap::new();
        let mut by_status = BTreeMap::new();
        let (mut tracks, mut originals, mut duration_ms) = (0, 0, 0);
        for group in &groups {
            let bytes = group.bytes.unwrap_or(0);
            tracks += group.tracks;
            originals += bytes;
            duration_ms += group.duration_ms.unwrap_or(0);
            let format = group.format.clone().unwrap_or_else(|| "unknown".into());
            for (map, key) in [
                (&mut by_format, format),
                (&mut by_source, group.source.clone()),
                (&mut by_status, group.metadata_status.clone()),
            ] {
                let entry: &mut (i64, i64) = map.entry(key).or_default();
                entry.0 += group.tracks;
                entry.1 += bytes;
            }
        }
        let (artists, albums, renditions, album_covers, playlist_covers) = counts;
        let covers = album_covers.unwrap_or(0) + playlist_covers.unwrap_or(0);
        let renditions = renditions.unwrap_or(0);
        Ok(LibraryStats {
            tracks,
            artists,
            albums,
            footprint: Footprint {
                originals_bytes: originals,
                renditions_bytes: renditions,
                covers_bytes: covers,
                total_bytes: originals + renditions + covers,
            },
            playtime_seconds: duration_ms / 1000,
            by_format: breakdown(by_format),
            by_source: breakdown(by_source),
            by_metadata_status: breakdown(by_status),
            top_genres: top_genres
                .into_iter()
                .map(|(genre, tracks)| GenreCount { genre, tracks })
                .collect(),
            disk: self.disk_usage(),
        })
    }

    /// The capacity of the volume holding local storage (`None` on S3, or when the file
    /// system cannot tell).
    fn disk_usage(&self) -> Option<DiskUsage> {
        let root = self.storage.local_root()?;
        volume_usage(&root)
    }
}

/// Groups, most tracks first.
fn breakdown(groups: BTreeMap<String, (i64, i64)>) -> Vec<Breakdown> {
    let mut rows: Vec<Breakdown> = groups
        .into_iter()
        .map(|(key, (tracks, bytes))| Breakdown { key, tracks, bytes })
        .collect();
    rows.sort_by(|a, b| b.tracks.cmp(&a.tracks).then_with(|| a.key.cmp(&b.key)));
    rows
}

#[cfg(unix)]
fn volume_usage(path: &std::path::Path) -> Option<DiskUsage> {
    let stats = rustix::fs::statvfs(path).ok()?;
    let block = stats.f_frsize;
    let capacity = stats.f_blocks.saturating_mul(block);
    let free_for_root = stats.f_bfree.saturating_mul(block);
    Some(DiskUsage {
        capacity_bytes: capacity,
        used_bytes: capacity.saturating_sub(free_for_root),
        free_bytes: stats.f_bavail.saturating_mul(block),
    })
}

#[cfg(not(unix))]
fn volume_usage(_path: &std::path::Path) -> Option<DiskUsage> {
    None
}
