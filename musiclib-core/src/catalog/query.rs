//! Filters and sort keys of the catalogue lists, as core types the adapters parse into.

use crate::domain::{Availability, MetadataStatus, Source};
use crate::{AlbumId, ArtistId, Error, Result};

/// Filters of the track list (all that are set must match).
#[derive(Debug, Clone, Default)]
pub struct TrackFilter {
    /// Only this source (lists newest first unless a sort is given).
    pub source: Option<Source>,
    /// Only tracks by this artist.
    pub artist_id: Option<ArtistId>,
    /// Only tracks of this album.
    pub album_id: Option<AlbumId>,
    /// Genre, case-insensitive.
    pub genre: Option<String>,
    /// Release year.
    pub year: Option<i64>,
    /// Enrichment state.
    pub metadata_status: Option<MetadataStatus>,
    /// Audio presence.
    pub availability: Option<Availability>,
    /// Substring of title, artist or album.
    pub q: Option<String>,
    /// Only tracks whose audio is stored (no remote placeholder waiting for its download):
    /// for clients that cannot play a placeholder, so their pages come full.
    pub with_audio: bool,
}

/// A sort order: a key and a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort<K> {
    /// What to sort by.
    pub key: K,
    /// Descending when true.
    pub descending: bool,
}

/// Parses `key` or `-key` with `parse_key`; `field` names the parameter for errors.
pub fn parse_sort<K>(
    text: &str,
    field: &str,
    parse_key: impl Fn(&str) -> Option<K>,
) -> Result<Sort<K>> {
    let (descending, name) = match text.strip_prefix('-') {
        Some(name) => (true, name),
        None => (false, text),
    };
    parse_key(name)
        .map(|key| Sort { key, descending })
        .ok_or_else(|| Error::invalid(field, format!("unknown sort key {name:?}")))
}

/// Sort keys of the track list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackSortKey {
    /// Title.
    Title,
    /// Artist name, then album, disc and track number.
    Artist,
    /// Album title, then disc and track number.
    Album,
    /// Year.
    Year,
    /// Disc and track number.
    TrackNumber,
    /// Duration.
    Duration,
    /// Creation time.
    CreatedAt,
    /// Last change.
    UpdatedAt,
}

impl TrackSortKey {
    /// Parses a key name as the API spells it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "title" => Self::Title,
            "artist" => Self::Artist,
            "album" => Self::Album,
            "year" => Self::Year,
            "track_number" => Self::TrackNumber,
            "duration" => Self::Duration,
            "created_at" => Self::CreatedAt,
            "updated_at" => Self::UpdatedAt,
            _ => return None,
        })
    }

    /// Names accepted by [`TrackSortKey::parse`].
    pub const NAMES: &'static [&'static str] = &[
        "title",
        "artist",
        "album",
        "year",
        "track_number",
        "duration",
        "created_at",
        "updated_at",
    ];
}

pub(crate) fn direction(descending: bool) -> &'static str {
    if descending {
        "DESC"
    } else {
        "ASC"
    }
}

pub(crate) fn track_order(sort: Sort<TrackSortKey>) -> String {
    let dir = direction(sort.descending);
    let columns: &[&str] = match sort.key {
        // Each list heads an index (migration 0015; the expressions written as there), so
        // every sort reads its index in order.
        TrackSortKey::Title => &["lower(t.title)"],
        TrackSortKey::Artist => &[
            "lower(t.artist_name)",
            "lower(t.album_title)",
            "t.disc_number",
            "t.track_number",
        ],
        TrackSortKey::Album => &["lower(t.album_title)", "t.disc_number", "t.track_number"],
        TrackSortKey::Year => &["t.year"],
        TrackSortKey::TrackNumber => &["t.disc_number", "t.track_number"],
        TrackSortKey::Duration => &["t.duration_ms"],
        TrackSortKey::CreatedAt => &["t.created_at"],
        TrackSortKey::UpdatedAt => &["t.updated_at"],
    };
    let mut order: Vec<String> = columns
        .iter()
        .map(|column| format!("{column} {dir}"))
        .collect();
    // A unique tie-breaker keeps pages stable.
    order.push(format!("t.id {dir}"));
    order.join(", ")
}

/// Sort keys of the album list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlbumSortKey {
    /// Title.
    Title,
    /// Album artist, then title.
    Artist,
    /// Year.
    Year,
    /// Creation time (recently added).
    CreatedAt,
}

impl AlbumSortKey {
    /// Parses a key name as the API spells it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "title" => Self::Title,
            "artist" => Self::Artist,
            "year" => Self::Year,
            "created_at" => Self::CreatedAt,
            _ => return None,
        })
    }
}

/// The `ORDER BY` list of an album sort (on alias `al`, with the album artist as `ar`).
pub(crate) fn album_order(sort: Sort<AlbumSortKey>) -> String {
    let dir = direction(sort.descending);
    match sort.key {
        AlbumSortKey::Title => format!("al.title_key {dir}, al.id {dir}"),
        // Albums without an artist last, either way (as `Catalog::albums_by_artist`).
        AlbumSortKey::Artist => format!(
            "CASE WHEN ar.id IS NULL THEN 1 ELSE 0 END, LOWER(ar.name) {dir}, ar.id {dir}, al.title_key {dir}, al.id {dir}"
        ),
        AlbumSortKey::Year => format!("al.year {dir}, al.title_key {dir}, al.id {dir}"),
        AlbumSortKey::CreatedAt => format!("al.created_at {dir}, al.id {dir}"),
    }
}

/// Filters of the album list (all that are set must match).
#[derive(Debug, Clone, Default)]
pub struct AlbumFilter {
    /// Album artist.
    pub artist_id: Option<ArtistId>,
    /// Year.
    pub year: Option<i64>,
    /// Genre, case-insensitive.
    pub genre: Option<String>,
    /// Substring of the title.
    pub q: Option<String>,
}

impl AlbumFilter {
    /// Whether no filter is set (every album is listed).
    pub fn is_empty(&self) -> bool {
        self.artist_id.is_none() && self.year.is_none() && self.genre.is_none() && self.q.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;

    const TRACK_KEYS: [TrackSortKey; 8] = [
        TrackSortKey::Title,
        TrackSortKey::Artist,
        TrackSortKey::Album,
        TrackSortKey::Year,
        TrackSortKey::TrackNumber,
        TrackSortKey::Duration,
        TrackSortKey::CreatedAt,
        TrackSortKey::UpdatedAt,
    ];

    /// SQLite's plan of `query`, one step a line.
    async fn query_plan(db: &Db, query: &str) -> String {
        let steps: Vec<(i64, i64, i64, String)> = db
            .sql(&format!("EXPLAIN QUERY PLAN {query}"))
            .fetch_all(db.pool())
            .await
            .unwrap();
        steps
            .into_iter()
            .map(|(_, _, _, detail)| detail)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every documented sort walks an index in order: a page at any offset never sorts the
    /// library (the plan has no temporary B-tree for the ORDER BY), and the offset is
    /// skipped on the index alone (a covering index for the keys).
    #[tokio::test]
    async fn every_sort_reads_an_index_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&format!(
            "sqlite://{}",
            dir.path().join("plan.db").display()
        ))
        .await
        .unwrap();
        db.migrate().await.unwrap();
        for key in TRACK_KEYS {
            for descending in [false, true] {
                let order = track_order(Sort { key, descending });
                let plan = query_plan(
                    &db,
                    &format!("SELECT t.id FROM tracks t ORDER BY {order} LIMIT 50 OFFSET 90000"),
                )
                .await;
                assert!(
                    !plan.contains("TEMP B-TREE"),
                    "{key:?} {descending}: {plan}"
                );
                assert!(
                    plan.contains("COVERING INDEX"),
                    "{key:?} {descending}: {plan}"
                );
            }
        }
        for key in [
            AlbumSortKey::Title,
            AlbumSortKey::Year,
            AlbumSortKey::CreatedAt,
        ] {
            for descending in [false, true] {
                let order = album_order(Sort { key, descending });
                let plan = query_plan(&db, &format!("SELECT al.id FROM albums al LEFT JOIN artists ar ON ar.id = al.artist_id ORDER BY {order} LIMIT 50 OFFSET 9000")).await;
                assert!(
                    !plan.contains("TEMP B-TREE"),
                    "{key:?} {descending}: {plan}"
                );
            }
        }
        // Albums by album artist: the artists' index, then each one's albums from theirs.
        for dir in ["ASC", "DESC"] {
            let plan = query_plan(&db, &format!("SELECT al.id FROM {} ORDER BY LOWER(ar.name) {dir}, ar.id {dir}, al.title_key {dir}, al.id {dir} LIMIT 50 OFFSET 9000", db.kind().albums_under_artists())).await;
            // (Sorting only within an artist's albums, never all of them.)
            assert!(
                plan.contains("albums_artist") && !plan.contains("TEMP B-TREE FOR ORDER BY"),
                "albums by artist: {plan}"
            );
        }
        let plan = query_plan(
            &db,
            "SELECT ar.id FROM artists ar ORDER BY ar.name_key, ar.id LIMIT 50",
        )
        .await;
        assert!(!plan.contains("TEMP B-TREE"), "artists: {plan}");
        // The library search's short queries: shortest titles first, from an index.
        let plan = query_plan(&db, "SELECT t.id FROM tracks t WHERE t.search_text LIKE '%e%' ORDER BY length(t.title), t.title, t.id LIMIT 20").await;
        assert!(!plan.contains("TEMP B-TREE"), "search: {plan}");
        // A rare short query reads every track from the narrow index, never the rows.
        let plan = query_plan(&db, "SELECT t.id FROM tracks t WHERE t.search_text LIKE '%q%' ORDER BY length(t.title) + 0, t.title, t.id LIMIT 20").await;
        assert!(
            plan.contains("COVERING INDEX tracks_search_scan"),
            "search scan: {plan}"
        );
        // A track's album and length by its id (a playlist's length, plays per album) come
        // from an index, never the track's row.
        let tracks = db.kind().tracks_by_id_covered();
        let plan = query_plan(&db, &format!("SELECT pt.playlist_id, t.duration_ms FROM playlist_tracks pt JOIN {tracks} ON t.id = pt.track_id WHERE pt.playlist_id IN ('a', 'b')")).await;
        assert!(
            plan.contains("COVERING INDEX tracks_id_album"),
            "playlist lengths: {plan}"
        );
    }

    #[test]
    fn sort_parses_prefix() {
        let sort = parse_sort("-created_at", "sort", TrackSortKey::parse).unwrap();
        assert_eq!(
            sort,
            Sort {
                key: TrackSortKey::CreatedAt,
                descending: true
            }
        );
        assert!(parse_sort("bogus", "sort", TrackSortKey::parse).is_err());
    }
}
