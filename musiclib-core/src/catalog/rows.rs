//! Row structs of the catalogue queries and their conversion into domain types.

use crate::db::{flag, DatabaseKind};
use crate::domain::{Album, Artist, Availability, MetadataStatus, ReplayGain, Source, Track};
use crate::{AlbumId, ArtistId, Timestamp, TrackId, UserId};

/// The select list of a [`TrackRow`], on alias `t`. Whether the track's album has a cover is
/// a scalar subquery, a key lookup per row, which neither database can turn into a scan of
/// every album: PostgreSQL hashed every album into the query when it was a correlated
/// `EXISTS` (17 of a page's 21 ms at 1,000,000 tracks), and into a page of 500 when it was a
/// join (3.6 of 8.5 ms at 100,000).
macro_rules! track_fields {
    () => {
        "t.id, t.title, t.artist_id, t.artist_name, t.album_id, t.album_title,
    t.album_artist_name, t.genre, t.year, t.track_number, t.disc_number, t.duration_ms, t.format, t.mime_type,
    t.bitrate_kbps, t.sample_rate, t.channels, t.size_bytes, t.content_sha256, t.storage_uri, t.source,
    t.source_id, t.added_by, t.availability, t.metadata_status, t.metadata_error, t.enriched_at,
    t.musicbrainz_recording_id, t.acoustid_id, t.created_at, t.updated_at,
    t.rg_track_gain, t.rg_track_peak, t.rg_album_gain, t.rg_album_peak,
    COALESCE((SELECT 1 FROM albums a WHERE a.id = t.album_id AND a.cover_uri IS NOT NULL), 0) AS has_cover"
    };
}

/// Selects a [`TrackRow`]; callers append JOINs, WHERE and ORDER BY on alias `t`.
pub(crate) const TRACK_SELECT: &str = concat!("SELECT ", track_fields!(), "\n    FROM tracks t");

/// [`TRACK_SELECT`]'s select list alone, for a statement that reads more columns.
pub(crate) const TRACK_FIELDS: &str = track_fields!();

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TrackRow {
    pub id: String,
    pub title: String,
    pub artist_id: Option<String>,
    pub artist_name: Option<String>,
    pub album_id: Option<String>,
    pub album_title: Option<String>,
    pub album_artist_name: Option<String>,
    pub genre: Option<String>,
    pub year: Option<i64>,
    pub track_number: Option<i64>,
    pub disc_number: Option<i64>,
    pub duration_ms: Option<i64>,
    pub format: Option<String>,
    pub mime_type: Option<String>,
    pub bitrate_kbps: Option<i64>,
    pub sample_rate: Option<i64>,
    pub channels: Option<i64>,
    pub size_bytes: Option<i64>,
    pub content_sha256: Option<String>,
    pub storage_uri: String,
    pub source: String,
    pub source_id: String,
    pub added_by: Option<String>,
    pub availability: String,
    pub metadata_status: String,
    pub metadata_error: Option<String>,
    pub enriched_at: Option<i64>,
    pub musicbrainz_recording_id: Option<String>,
    pub acoustid_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub rg_track_gain: Option<f64>,
    pub rg_track_peak: Option<f64>,
    pub rg_album_gain: Option<f64>,
    pub rg_album_peak: Option<f64>,
    pub has_cover: i64,
}

impl TrackRow {
    /// The uploader, who may change the track.
    pub(crate) fn added_by(&self) -> Option<UserId> {
        self.added_by.clone().map(UserId::from_db)
    }
}

impl super::keyset::PageRow for TrackRow {
    fn page_id(&self) -> &str {
        &self.id
    }
}

impl From<TrackRow> for Track {
    fn from(row: TrackRow) -> Track {
        Track {
            id: TrackId::from_db(row.id),
            title: row.title,
            artist_id: row.artist_id.map(ArtistId::from_db),
            artist_name: row.artist_name,
            album_id: row.album_id.map(AlbumId::from_db),
            album_title: row.album_title,
            album_artist_name: row.album_artist_name,
            genre: row.genre,
            year: row.year,
            track_number: row.track_number,
            disc_number: row.disc_number,
            duration_ms: row.duration_ms,
            format: row.format,
            mime_type: row.mime_type,
            bitrate_kbps: row.bitrate_kbps,
            sample_rate: row.sample_rate,
            channels: row.channels,
            size_bytes: row.size_bytes,
            content_sha256: row.content_sha256,
            storage_uri: row.storage_uri,
            // Stored values are written by this crate only; fall back rather than fail a read.
            source: Source::parse(&row.source, "source").unwrap_or(Source::Upload),
            source_id: row.source_id,
            added_by: row.added_by.map(UserId::from_db),
            availability: Availability::parse(&row.availability, "availability")
                .unwrap_or(Availability::Missing),
            metadata_status: MetadataStatus::parse(&row.metadata_status, "metadata_status")
                .unwrap_or(MetadataStatus::Pending),
            metadata_error: row.metadata_error,
            enriched_at: row.enriched_at.map(Timestamp::from_micros),
            musicbrainz_recording_id: row.musicbrainz_recording_id,
            acoustid_id: row.acoustid_id,
            has_cover: flag(row.has_cover),
            replay_gain: ReplayGain {
                track_gain: row.rg_track_gain,
                track_peak: row.rg_track_peak,
                album_gain: row.rg_album_gain,
                album_peak: row.rg_album_peak,
            },
            created_at: Timestamp::from_micros(row.created_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        }
    }
}

/// Selects an [`AlbumRow`]; callers append WHERE / ORDER BY on alias `al`. Each album's
/// track count and length are read from `tracks_album`, which holds both
/// ([`DatabaseKind::album_tally`]).
pub(crate) fn album_select(kind: DatabaseKind) -> String {
    let (tally, join) = kind.album_tally();
    format!(
        "SELECT al.id, al.title, al.artist_id, ar.name AS artist_name, al.year,
    al.genre, al.is_compilation, al.musicbrainz_album_id, al.musicbrainz_releasegroup_id, al.cover_uri,
    al.remote_source, al.remote_source_id, al.created_at, al.updated_at, {tally}
    FROM albums al LEFT JOIN artists ar ON ar.id = al.artist_id{join}"
    )
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct AlbumRow {
    pub id: String,
    pub title: String,
    pub artist_id: Option<String>,
    pub artist_name: Option<String>,
    pub year: Option<i64>,
    pub genre: Option<String>,
    pub is_compilation: i64,
    pub musicbrainz_album_id: Option<String>,
    pub musicbrainz_releasegroup_id: Option<String>,
    pub cover_uri: Option<String>,
    pub remote_source: Option<String>,
    pub remote_source_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub track_count: i64,
    pub duration_ms: i64,
}

impl From<AlbumRow> for Album {
    fn from(row: AlbumRow) -> Album {
        Album {
            id: AlbumId::from_db(row.id),
            title: row.title,
            artist_id: row.artist_id.map(ArtistId::from_db),
            artist_name: row.artist_name,
            year: row.year,
            genre: row.genre,
            is_compilation: flag(row.is_compilation),
            musicbrainz_album_id: row.musicbrainz_album_id,
            musicbrainz_releasegroup_id: row.musicbrainz_releasegroup_id,
            cover_uri: row.cover_uri,
            remote_source: row.remote_source,
            remote_source_id: row.remote_source_id,
            track_count: row.track_count,
            duration_ms: row.duration_ms,
            created_at: Timestamp::from_micros(row.created_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        }
    }
}

/// Selects an [`ArtistRow`]; callers append WHERE / ORDER BY on alias `ar`.
pub(crate) const ARTIST_SELECT: &str =
    "SELECT ar.id, ar.name, ar.sort_name, ar.musicbrainz_id, ar.remote_source,
    ar.remote_source_id, ar.created_at,
    (SELECT COUNT(*) FROM albums al WHERE al.artist_id = ar.id) AS album_count,
    (SELECT COUNT(*) FROM tracks t WHERE t.artist_id = ar.id) AS track_count
    FROM artists ar";

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ArtistRow {
    pub id: String,
    pub name: String,
    pub sort_name: Option<String>,
    pub musicbrainz_id: Option<String>,
    pub remote_source: Option<String>,
    pub remote_source_id: Option<String>,
    pub created_at: i64,
    pub album_count: i64,
    pub track_count: i64,
}

impl From<ArtistRow> for Artist {
    fn from(row: ArtistRow) -> Artist {
        Artist {
            id: ArtistId::from_db(row.id),
            name: row.name,
            sort_name: row.sort_name,
            musicbrainz_id: row.musicbrainz_id,
            remote_source: row.remote_source,
            remote_source_id: row.remote_source_id,
            album_count: row.album_count,
            track_count: row.track_count,
            created_at: Timestamp::from_micros(row.created_at),
        }
    }
}
