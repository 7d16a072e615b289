//! The one writer of the `tracks` table.
//!
//! Every INSERT and UPDATE of `tracks` is in this file, and so is every column derived from
//! others: `search_text` (from the title, artist and album), `shuffle_key`, `updated_at`,
//! and the rule that an album artist is stored only with an album. Callers (uploads, folder
//! imports, enrichment, edits, remote placeholders and fetches, cleanup) say what changed in
//! the catalogue's words, a [`Description`], a file's [`StoredAudio`], an availability, and
//! never name a column. A new column is added here, in the migrations of both dialects and
//! in the read row (`rows.rs`).

use super::refresh::FileFacts;
use super::resolve::Resolver;
use super::rows::TrackRow;
use crate::db::{Db, Tx, CHUNK};
use crate::domain::{Availability, MetadataStatus, Source};
use crate::probe::AudioFacts;
use crate::{AlbumId, ArtistId, Result, TrackId, UserId};

/// The names a track is read and found by, before its artist and album are resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Names {
    pub(crate) title: String,
    pub(crate) artist: Option<String>,
    pub(crate) album: Option<String>,
    /// Kept only with an album.
    pub(crate) album_artist: Option<String>,
    pub(crate) genre: Option<String>,
    pub(crate) year: Option<i64>,
    pub(crate) track_number: Option<i64>,
    pub(crate) disc_number: Option<i64>,
}

impl Names {
    /// Resolves the artist and the album (by its album artist) to ids, creating them when
    /// new.
    pub(crate) async fn resolve(self, tx: &mut Tx, resolver: &mut Resolver) -> Result<Description> {
        let artist_id = match &self.artist {
            Some(name) => Some(resolver.artist(tx, name).await?),
            None => None,
        };
        let album_id = match &self.album {
            Some(album) => Some(
                resolver
                    .album(
                        tx,
                        album,
                        self.album_artist.as_deref(),
                        self.year,
                        self.genre.as_deref(),
                    )
                    .await?,
            ),
            None => None,
        };
        Ok(Description {
            names: self,
            artist_id,
            album_id,
        })
    }
}

/// How a track is described: its names with its artist and album resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Description {
    pub(crate) names: Names,
    pub(crate) artist_id: Option<ArtistId>,
    pub(crate) album_id: Option<AlbumId>,
}

impl Description {
    /// What a track's row says now.
    pub(crate) fn of(row: &TrackRow) -> Description {
        Description {
            names: Names {
                title: row.title.clone(),
                artist: row.artist_name.clone(),
                album: row.album_title.clone(),
                album_artist: row.album_artist_name.clone(),
                genre: row.genre.clone(),
                year: row.year,
                track_number: row.track_number,
                disc_number: row.disc_number,
            },
            artist_id: row.artist_id.clone().map(ArtistId::from_db),
            album_id: row.album_id.clone().map(AlbumId::from_db),
        }
    }

    fn album_artist(&self) -> Option<&str> {
        self.names
            .album_artist
            .as_deref()
            .filter(|_| self.names.album.is_some())
    }

    fn search_text(&self) -> String {
        search_text(
            &self.names.title,
            self.names.artist.as_deref(),
            self.names.album.as_deref(),
        )
    }
}

/// The text a track is found by in search (`tracks.search_text`).
pub(crate) fn search_text(title: &str, artist: Option<&str>, album: Option<&str>) -> String {
    crate::text::search_key(&[title, artist.unwrap_or(""), album.unwrap_or("")])
}

/// A file's audio, already in storage.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredAudio<'a> {
    /// The blob key.
    pub(crate) key: &'a str,
    pub(crate) facts: &'a AudioFacts,
    pub(crate) size_bytes: i64,
    pub(crate) sha256: &'a str,
}

/// A track to insert: with its audio (`available`), or a remote placeholder without.
#[derive(Debug)]
pub(crate) struct NewRow<'a> {
    pub(crate) id: &'a TrackId,
    pub(crate) description: &'a Description,
    pub(crate) audio: Option<StoredAudio<'a>>,
    /// The length a placeholder's source announces (a track with audio has its own).
    pub(crate) announced_duration_ms: Option<i64>,
    pub(crate) source: Source,
    pub(crate) source_id: &'a str,
    pub(crate) source_mtime: Option<i64>,
    pub(crate) added_by: Option<&'a UserId>,
    pub(crate) musicbrainz_recording_id: Option<&'a str>,
}

/// Inserts a `pending` track. False when a track with the same (source, source_id) is
/// already there.
pub(crate) async fn insert(db: &Db, tx: &mut Tx, row: &NewRow<'_>) -> Result<bool> {
    let description = row.description;
    let names = &description.names;
    let facts = row.audio.map(|audio| audio.facts);
    let availability = match row.audio {
        Some(_) => Availability::Available,
        None => Availability::Placeholder,
    };
    let inserted = db
        .sql(
            "INSERT INTO tracks (id, title, artist_id, album_id, artist_name, album_title, album_artist_name, genre,
                 year, track_number, disc_number, duration_ms, format, mime_type, bitrate_kbps, sample_rate, channels,
                 size_bytes, content_sha256, storage_uri, source, source_id, source_mtime, added_by, availability,
                 metadata_status, musicbrainz_recording_id, has_embedded_cover, tags, search_text, shuffle_key,
                 created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                 $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, {now}, {now})
             ON CONFLICT (source, source_id) DO NOTHING",
        )
        .bind(row.id)
        .bind(names.title.as_str())
        .bind(description.artist_id.as_ref())
        .bind(description.album_id.as_ref())
        .bind(names.artist.as_deref())
        .bind(names.album.as_deref())
        .bind(description.album_artist())
        .bind(names.genre.as_deref())
        .bind(names.year)
        .bind(names.track_number)
        .bind(names.disc_number)
        .bind(facts.map_or(row.announced_duration_ms, |facts| Some(facts.duration_ms)))
        .bind(facts.map(|facts| facts.format))
        .bind(facts.map(|facts| facts.mime_type))
        .bind(facts.and_then(|facts| facts.bitrate_kbps))
        .bind(facts.and_then(|facts| facts.sample_rate))
        .bind(facts.and_then(|facts| facts.channels))
        .bind(row.audio.map(|audio| audio.size_bytes))
        .bind(row.audio.map(|audio| audio.sha256))
        .bind(row.audio.map_or("", |audio| audio.key))
        .bind(row.source.as_str())
        .bind(row.source_id)
        .bind(row.source_mtime)
        .bind(row.added_by)
        .bind(availability.as_str())
        .bind(MetadataStatus::Pending.as_str())
        .bind(row.musicbrainz_recording_id)
        .bind(facts.is_some_and(|facts| facts.has_embedded_cover))
        .bind(facts.map(|facts| serde_json::to_string(&facts.tags).unwrap_or_default()))
        .bind(description.search_text())
        .bind(crate::domain::shuffle_key())
        .execute(&mut **tx)
        .await?;
    Ok(inserted == 1)
}

/// Writes a track's description (and the search text derived from it).
pub(crate) async fn describe(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    description: &Description,
) -> Result<()> {
    let names = &description.names;
    db.sql(
        "UPDATE tracks SET title = $2, artist_id = $3, artist_name = $4, album_id = $5, album_title = $6,
             album_artist_name = $7, genre = $8, year = $9, track_number = $10, disc_number = $11,
             search_text = $12, updated_at = {now}
         WHERE id = $1",
    )
    .bind(id)
    .bind(names.title.as_str())
    .bind(description.artist_id.as_ref())
    .bind(names.artist.as_deref())
    .bind(description.album_id.as_ref())
    .bind(names.album.as_deref())
    .bind(description.album_artist())
    .bind(names.genre.as_deref())
    .bind(names.year)
    .bind(names.track_number)
    .bind(names.disc_number)
    .bind(description.search_text())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Who said what a track is: a person (`manual`, enrichment leaves it alone from then on),
/// or an enrichment run.
#[derive(Debug)]
pub(crate) enum Identity<'a> {
    /// Edited by hand; a recording id given replaces the one known.
    Manual { recording_id: Option<&'a str> },
    /// An enrichment run's outcome: `enriched`, or `failed` with the reason. The AcoustID
    /// match and the fingerprint, when this run has them, replace the ones known.
    Enriched {
        failure: Option<&'a str>,
        recording_id: Option<&'a str>,
        acoustid: Option<(&'a str, f64)>,
        fingerprint: Option<(&'a str, i64)>,
    },
}

/// Records who identified a track.
pub(crate) async fn identify(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    identity: Identity<'_>,
) -> Result<()> {
    match identity {
        Identity::Manual { recording_id } => {
            db.sql(
                "UPDATE tracks SET musicbrainz_recording_id = COALESCE($2, musicbrainz_recording_id),
                     metadata_status = $3, metadata_error = NULL, updated_at = {now}
                 WHERE id = $1",
            )
            .bind(id)
            .bind(recording_id)
            .bind(MetadataStatus::Manual.as_str())
            .execute(&mut **tx)
            .await?;
        }
        Identity::Enriched {
            failure,
            recording_id,
            acoustid,
            fingerprint,
        } => {
            let status = match failure {
                None => MetadataStatus::Enriched,
                Some(_) => MetadataStatus::Failed,
            };
            db.sql(
                "UPDATE tracks SET musicbrainz_recording_id = $2, acoustid_id = COALESCE($3, acoustid_id),
                     acoustid_score = COALESCE($4, acoustid_score),
                     fingerprint = COALESCE($5, fingerprint), fingerprint_duration = COALESCE($6, fingerprint_duration),
                     metadata_status = $7, metadata_error = $8, enriched_at = {now}, updated_at = {now}
                 WHERE id = $1",
            )
            .bind(id)
            .bind(recording_id)
            .bind(acoustid.map(|(id, _)| id))
            .bind(acoustid.map(|(_, score)| score))
            .bind(fingerprint.map(|(fingerprint, _)| fingerprint))
            .bind(fingerprint.map(|(_, duration)| duration))
            .bind(status.as_str())
            .bind(failure)
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(())
}

/// Marks a track's enrichment `failed` with `reason` (unless it was edited by hand).
pub(crate) async fn enrichment_failed(db: &Db, id: &TrackId, reason: &str) -> Result<()> {
    db.sql(
        "UPDATE tracks SET metadata_status = $2, metadata_error = $3, enriched_at = {now}, updated_at = {now}
         WHERE id = $1 AND metadata_status <> $4",
    )
    .bind(id)
    .bind(MetadataStatus::Failed.as_str())
    .bind(reason)
    .bind(MetadataStatus::Manual.as_str())
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Writes what a re-read of a track's file found in it (and, for a changed file, its new
/// size, hash and time).
pub(crate) async fn reread(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    facts: &AudioFacts,
    file: Option<&FileFacts>,
) -> Result<()> {
    db.sql(
        "UPDATE tracks SET duration_ms = $2, bitrate_kbps = $3, sample_rate = $4, channels = $5,
             has_embedded_cover = $6, tags = $7, size_bytes = COALESCE($8, size_bytes),
             content_sha256 = COALESCE($9, content_sha256), source_mtime = COALESCE($10, source_mtime),
             updated_at = {now}
         WHERE id = $1",
    )
    .bind(id)
    .bind(facts.duration_ms)
    .bind(facts.bitrate_kbps)
    .bind(facts.sample_rate)
    .bind(facts.channels)
    .bind(facts.has_embedded_cover)
    .bind(serde_json::to_string(&facts.tags).unwrap_or_default())
    .bind(file.map(|file| file.size_bytes))
    .bind(file.map(|file| file.sha256.as_str()))
    .bind(file.and_then(|file| file.mtime))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Points a track at a new blob of its audio (a changed file stored again): it is
/// `available`.
pub(crate) async fn point_at(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    key: &str,
    facts: &AudioFacts,
) -> Result<()> {
    db.sql(
        "UPDATE tracks SET storage_uri = $2, format = $3, mime_type = $4, availability = $5,
             updated_at = {now}
         WHERE id = $1",
    )
    .bind(id)
    .bind(key)
    .bind(facts.format)
    .bind(facts.mime_type)
    .bind(Availability::Available.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Fills a placeholder with its fetched audio: it is `available`, and the file's tags fill
/// what its source did not say (never replacing what it did).
pub(crate) async fn fill_placeholder(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    audio: StoredAudio<'_>,
) -> Result<()> {
    let facts = audio.facts;
    let tags = &facts.tags;
    db.sql(
        "UPDATE tracks SET storage_uri = $2, format = $3, mime_type = $4, bitrate_kbps = $5,
             sample_rate = $6, channels = $7, size_bytes = $8, content_sha256 = $9, duration_ms = $10,
             has_embedded_cover = $11, tags = $12, availability = $13,
             genre = COALESCE(genre, $14), year = COALESCE(year, $15),
             track_number = COALESCE(track_number, $16), disc_number = COALESCE(disc_number, $17),
             musicbrainz_recording_id = COALESCE(musicbrainz_recording_id, $18), updated_at = {now}
         WHERE id = $1",
    )
    .bind(id)
    .bind(audio.key)
    .bind(facts.format)
    .bind(facts.mime_type)
    .bind(facts.bitrate_kbps)
    .bind(facts.sample_rate)
    .bind(facts.channels)
    .bind(audio.size_bytes)
    .bind(audio.sha256)
    .bind(facts.duration_ms)
    .bind(facts.has_embedded_cover)
    .bind(serde_json::to_string(tags).unwrap_or_default())
    .bind(Availability::Available.as_str())
    .bind(tags.genre.as_deref())
    .bind(tags.year)
    .bind(tags.track_number)
    .bind(tags.disc_number)
    .bind(tags.musicbrainz_recording_id.as_deref())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Points a folder track at the path its file moved to: it is `available` again.
pub(crate) async fn relink(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    source_id: &str,
    mtime: Option<i64>,
) -> Result<()> {
    db.sql(
        "UPDATE tracks SET source_id = $2, source_mtime = $3, availability = $4, updated_at = {now}
         WHERE id = $1",
    )
    .bind(id)
    .bind(source_id)
    .bind(mtime)
    .bind(Availability::Available.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Which tracks [`set_availability`] changes, besides their ids.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Only {
    /// Tracks of this source only.
    pub(crate) source: Option<Source>,
    /// Tracks in this state only.
    pub(crate) from: Option<Availability>,
}

/// Sets the availability of `ids` (those `only` allows); returns how many changed.
pub(crate) async fn set_availability(
    db: &Db,
    ids: &[&str],
    to: Availability,
    only: Only,
) -> Result<u64> {
    let mut changed = 0;
    for chunk in ids.chunks(CHUNK) {
        let mut sql = db.sql("UPDATE tracks SET availability = ");
        sql.push_bind(to.as_str())
            .push(", updated_at = {now} WHERE availability <> ")
            .push_bind(to.as_str());
        if let Some(source) = only.source {
            sql.push(" AND source = ").push_bind(source.as_str());
        }
        if let Some(from) = only.from {
            sql.push(" AND availability = ").push_bind(from.as_str());
        }
        sql.push(" AND id IN (")
            .push_list(chunk.iter().copied())
            .push(")");
        changed += sql.execute(db.pool()).await?;
    }
    Ok(changed)
}

/// Replaces a track's search text (a rebuild after the key's rules changed).
pub(crate) async fn set_search_text(db: &Db, tx: &mut Tx, id: &str, text: &str) -> Result<()> {
    db.sql("UPDATE tracks SET search_text = $2 WHERE id = $1")
        .bind(id)
        .bind(text)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Test set-ups that put a track in a state no request reaches directly.
#[cfg(feature = "test-support")]
pub(crate) mod testing {
    use super::*;

    /// Makes a track a placeholder without audio.
    pub(crate) async fn make_placeholder(db: &Db, id: &TrackId) -> Result<()> {
        db.sql("UPDATE tracks SET availability = $2, storage_uri = '' WHERE id = $1")
            .bind(id)
            .bind(Availability::Placeholder.as_str())
            .execute(db.pool())
            .await?;
        Ok(())
    }

    /// Makes `user` the uploader of every track.
    pub(crate) async fn set_uploader(db: &Db, user: &UserId) -> Result<()> {
        db.sql("UPDATE tracks SET added_by = $1")
            .bind(user)
            .execute(db.pool())
            .await?;
        Ok(())
    }
}
