//! Getting tracks into the library: uploads and local-folder imports.
//!
//! Both paths share one shape: probe the file (tags and audio check, off the async runtime),
//! write the blob atomically, insert the row and resolve artist and album in a transaction,
//! and enqueue enrichment after the commit. A row is inserted only after its blob exists, and
//! a blob whose insert fails is deleted, so no row ever points at a missing blob.

mod local_folder;
pub mod probe;
mod upload;

use crate::catalog::Resolver;
use crate::db::{Db, Tx};
use crate::domain::Source;
use crate::jobs::{kind, NewJob};
use crate::{Result, TrackId};

pub(crate) use local_folder::run_scan_job;
pub use local_folder::{ScanFileError, ScanReport};
pub use probe::{AudioFacts, EmbeddedTags};
pub use upload::UploadOutcome;

/// Files of a folder import up to this size are read into memory once (hash, probe and
/// store from one buffer); larger ones are streamed from disk. Uploads are always probed in
/// staging, never read whole.
pub(crate) const IN_MEMORY_LIMIT: u64 = 64 * 1024 * 1024;

/// A track ready to be inserted: its blob is already stored.
#[derive(Debug)]
#[doc(hidden)]
pub struct NewTrack {
    #[allow(missing_docs)]
    pub id: TrackId,
    pub facts: AudioFacts,
    pub storage_uri: String,
    pub source: Source,
    pub source_id: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub mtime: Option<i64>,
    pub added_by: Option<crate::UserId>,
    /// Title to use when the tags have none (the file name without extension).
    pub fallback_title: String,
}

/// Blob key of a track's audio.
pub(crate) fn audio_key(id: &TrackId, format: &str) -> String {
    format!("audio/{id}.{format}")
}

/// Inserts a `pending` track with what its tags say, resolving artist and album. Returns
/// false when a track with the same (source, source_id) already exists.
#[doc(hidden)]
pub async fn insert_track(
    tx: &mut Tx,
    db: &Db,
    resolver: &mut Resolver,
    track: &NewTrack,
) -> Result<bool> {
    let tags = &track.facts.tags;
    let title = tags
        .title
        .clone()
        .unwrap_or_else(|| track.fallback_title.clone());
    let artist = tags.artist.clone();
    let album_artist = tags
        .album_artist
        .clone()
        .or_else(|| tags.compilation.then(|| "Various Artists".to_string()))
        .or_else(|| artist.clone());
    let artist_id = match &artist {
        Some(name) => Some(resolver.artist(tx, name).await?),
        None => None,
    };
    let album_id = match &tags.album {
        Some(album) => Some(
            resolver
                .album(
                    tx,
                    album,
                    album_artist.as_deref(),
                    tags.year,
                    tags.genre.as_deref(),
                )
                .await?,
        ),
        None => None,
    };
    if let Some(album_id) = &album_id {
        if tags.musicbrainz_album_id.is_some() || tags.musicbrainz_releasegroup_id.is_some() {
            sqlx::query(
                "UPDATE albums SET musicbrainz_album_id = COALESCE(musicbrainz_album_id, $2),
                     musicbrainz_releasegroup_id = COALESCE(musicbrainz_releasegroup_id, $3)
                 WHERE id = $1",
            )
            .bind(album_id.as_str())
            .bind(tags.musicbrainz_album_id.as_deref())
            .bind(tags.musicbrainz_releasegroup_id.as_deref())
            .execute(&mut **tx)
            .await?;
        }
    }
    let search_text = crate::text::search_key(&[
        &title,
        artist.as_deref().unwrap_or(""),
        tags.album.as_deref().unwrap_or(""),
    ]);
    let tags_json = serde_json::to_string(tags).unwrap_or_default();
    let query = db.sql(
        "INSERT INTO tracks (id, title, artist_id, album_id, artist_name, album_title, album_artist_name, genre,
             year, track_number, disc_number, duration_ms, format, mime_type, bitrate_kbps, sample_rate, channels,
             size_bytes, content_sha256, storage_uri, source, source_id, source_mtime, added_by, availability,
             metadata_status, musicbrainz_recording_id, has_embedded_cover, tags, search_text, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
                 $22, $23, $28, 'available', 'pending', $24, $25, $26, $27, {now}, {now})
         ON CONFLICT (source, source_id) DO NOTHING",
    );
    let facts = &track.facts;
    let inserted = sqlx::query(&query)
        .bind(track.id.as_str())
        .bind(&title)
        .bind(artist_id.as_ref().map(|id| id.to_string()))
        .bind(album_id.as_ref().map(|id| id.to_string()))
        .bind(artist.as_deref())
        .bind(tags.album.as_deref())
        .bind(album_artist.as_deref().filter(|_| tags.album.is_some()))
        .bind(tags.genre.as_deref())
        .bind(tags.year)
        .bind(tags.track_number)
        .bind(tags.disc_number)
        .bind(facts.duration_ms)
        .bind(facts.format)
        .bind(facts.mime_type)
        .bind(facts.bitrate_kbps)
        .bind(facts.sample_rate)
        .bind(facts.channels)
        .bind(track.size_bytes)
        .bind(&track.sha256)
        .bind(&track.storage_uri)
        .bind(track.source.as_str())
        .bind(&track.source_id)
        .bind(track.mtime)
        .bind(tags.musicbrainz_recording_id.as_deref())
        .bind(facts.has_embedded_cover as i64)
        .bind(tags_json)
        .bind(search_text)
        .bind(track.added_by.as_ref().map(|user| user.to_string()))
        .execute(&mut **tx)
        .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The enrichment job of a new track.
pub(crate) fn enrich_job(track_id: &TrackId) -> NewJob {
    NewJob::new(
        kind::ENRICH,
        serde_json::json!({ "track_id": track_id.to_string() }),
    )
    .dedup(format!("enrich:{track_id}"))
}

/// The file name without its extension, for tracks whose tags have no title.
pub(crate) fn title_from_file_name(name: &str) -> String {
    let stem = std::path::Path::new(name)
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = unicode_normalization::UnicodeNormalization::nfc(stem.trim()).collect::<String>();
    if stem.is_empty() {
        "Untitled".to_string()
    } else {
        stem
    }
}

/// A configured ingest source (`GET /sources`).
#[derive(Debug, Clone)]
pub struct SourceInfo {
    /// Which source.
    pub source: Source,
    /// Whether it can be used on this server.
    pub enabled: bool,
    /// Whether it can be scanned.
    pub scannable: bool,
    /// The folder of `local_folder`.
    pub path: Option<std::path::PathBuf>,
    /// Tracks from it.
    pub track_count: i64,
}

impl crate::Library {
    /// The ingest sources and their track counts.
    pub async fn sources(&self) -> Result<Vec<SourceInfo>> {
        let counts: Vec<(String, i64)> =
            sqlx::query_as("SELECT source, COUNT(*) FROM tracks GROUP BY source")
                .fetch_all(self.db().pool())
                .await?;
        let count = |source: Source| {
            counts
                .iter()
                .find(|(name, _)| name == source.as_str())
                .map(|(_, count)| *count)
                .unwrap_or(0)
        };
        let folder = self.config().local_media_import_path.clone();
        Ok(vec![
            SourceInfo {
                source: Source::Upload,
                enabled: true,
                scannable: false,
                path: None,
                track_count: count(Source::Upload),
            },
            SourceInfo {
                source: Source::LocalFolder,
                enabled: folder.is_some(),
                scannable: true,
                path: folder,
                track_count: count(Source::LocalFolder),
            },
            SourceInfo {
                source: Source::Remote,
                enabled: false,
                scannable: false,
                path: None,
                track_count: count(Source::Remote),
            },
        ])
    }
}
