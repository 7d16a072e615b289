//! The one writer of the `tracks` table.
//!
//! Every INSERT and UPDATE of `tracks` is in this file, and so is every column derived from
//! others: `search_text` (from the title, artist and album), `shuffle_key`, `updated_at`,
//! and the rule that an album artist is stored only with an album. Callers (uploads, folder
//! imports, enrichment, edits, remote placeholders and fetches, cleanup) say what changed in
//! the catalogue's words, a [`Description`], a file's [`StoredAudio`], an availability, and
//! never name a column. A new column is added here, in the migrations of both dialects and
//! in the read row (`rows.rs`).
//!
//! ReplayGain (`rg_*`) comes from a file's tags wherever it is read (insert, re-read, a
//! filled placeholder), or from `analyze_loudness`'s measurement, which never replaces what
//! the tags said.

use super::refresh::FileFacts;
use super::resolve::Resolver;
use super::rows::TrackRow;
use crate::db::{Db, Sql, Tx, CHUNK};
use crate::domain::{Availability, MetadataStatus, ReplayGain, Source};
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

    /// The columns a description is stored in, each with its value bound in `sql` (the
    /// derived `search_text` too): an insert and an update write the same list.
    fn columns(&self, sql: &mut Sql) -> Vec<(&'static str, String)> {
        let names = &self.names;
        vec![
            ("title", sql.arg(names.title.as_str())),
            ("artist_id", sql.arg(self.artist_id.as_ref())),
            ("artist_name", sql.arg(names.artist.as_deref())),
            ("album_id", sql.arg(self.album_id.as_ref())),
            ("album_title", sql.arg(names.album.as_deref())),
            ("album_artist_name", sql.arg(self.album_artist())),
            ("genre", sql.arg(names.genre.as_deref())),
            ("year", sql.arg(names.year)),
            ("track_number", sql.arg(names.track_number)),
            ("disc_number", sql.arg(names.disc_number)),
            ("search_text", sql.arg(self.search_text())),
        ]
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
    let facts = row.audio.map(|audio| audio.facts);
    let availability = match row.audio {
        Some(_) => Availability::Available,
        None => Availability::Placeholder,
    };
    let mut sql = db.sql("");
    let mut columns = row.description.columns(&mut sql);
    columns.extend([
        ("id", sql.arg(row.id)),
        (
            "duration_ms",
            sql.arg(facts.map_or(row.announced_duration_ms, |facts| Some(facts.duration_ms))),
        ),
        ("format", sql.arg(facts.map(|facts| facts.format))),
        ("mime_type", sql.arg(facts.map(|facts| facts.mime_type))),
        (
            "bitrate_kbps",
            sql.arg(facts.and_then(|facts| facts.bitrate_kbps)),
        ),
        (
            "sample_rate",
            sql.arg(facts.and_then(|facts| facts.sample_rate)),
        ),
        ("channels", sql.arg(facts.and_then(|facts| facts.channels))),
        (
            "size_bytes",
            sql.arg(row.audio.map(|audio| audio.size_bytes)),
        ),
        (
            "content_sha256",
            sql.arg(row.audio.map(|audio| audio.sha256)),
        ),
        (
            "storage_uri",
            sql.arg(row.audio.map_or("", |audio| audio.key)),
        ),
        ("source", sql.arg(row.source.as_str())),
        ("source_id", sql.arg(row.source_id)),
        ("source_mtime", sql.arg(row.source_mtime)),
        ("added_by", sql.arg(row.added_by)),
        ("availability", sql.arg(availability.as_str())),
        ("metadata_status", sql.arg(MetadataStatus::Pending.as_str())),
        (
            "musicbrainz_recording_id",
            sql.arg(row.musicbrainz_recording_id),
        ),
        (
            "has_embedded_cover",
            sql.arg(facts.is_some_and(|facts| facts.has_embedded_cover)),
        ),
        (
            "tags",
            sql.arg(facts.map(|facts| serde_json::to_string(&facts.tags).unwrap_or_default())),
        ),
        ("shuffle_key", sql.arg(crate::domain::shuffle_key())),
        ("created_at", "{now}".to_string()),
        ("updated_at", "{now}".to_string()),
    ]);
    columns.extend(gain_columns(
        &mut sql,
        facts.map_or(ReplayGain::NONE, |facts| facts.replay_gain),
    ));
    let (names, values): (Vec<&str>, Vec<String>) = columns.into_iter().unzip();
    sql.push(&format!(
        "INSERT INTO tracks ({}) VALUES ({}) ON CONFLICT (source, source_id) DO NOTHING",
        names.join(", "),
        values.join(", ")
    ));
    Ok(sql.execute(&mut **tx).await? == 1)
}

/// Writes a track's description (and the search text derived from it).
pub(crate) async fn describe(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    description: &Description,
) -> Result<()> {
    let mut sql = db.sql("");
    let sets: Vec<String> = description
        .columns(&mut sql)
        .into_iter()
        .map(|(column, value)| format!("{column} = {value}"))
        .collect();
    let id = sql.arg(id);
    sql.push(&format!(
        "UPDATE tracks SET {}, updated_at = {{now}} WHERE id = {id}",
        sets.join(", ")
    ));
    sql.execute(&mut **tx).await?;
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
    retag_gain(db, tx, id, facts.replay_gain, file.is_some()).await
}

/// The ReplayGain columns of a track whose file carries `gain` in its tags (none when it
/// carries none), each with its value bound in `sql`.
///
/// A missing value is written as the literal `NULL`, never bound: sqlx 0.9's `Any` driver
/// declares a NULL `f64` as a 4-byte float to PostgreSQL, and a statement it prepared so
/// (its cache keys on the text alone) then refuses a real 8-byte value bound to the same
/// placeholder ("incorrect binary data format"). With the literal, a statement's text says
/// which values it binds, and every one it binds is a `f64`.
fn gain_columns(sql: &mut Sql, gain: ReplayGain) -> Vec<(&'static str, String)> {
    let gain = if gain.is_present() {
        gain
    } else {
        ReplayGain::NONE
    };
    let mut float = |value: Option<f64>| match value {
        Some(value) => sql.arg(value),
        None => "NULL".to_string(),
    };
    let values = [
        ("rg_track_gain", float(gain.track_gain)),
        ("rg_track_peak", float(gain.track_peak)),
        ("rg_album_gain", float(gain.album_gain)),
        ("rg_album_peak", float(gain.album_peak)),
    ];
    let mut columns = values.to_vec();
    columns.push((
        "rg_source",
        sql.arg(gain.is_present().then_some(GAIN_FROM_TAGS)),
    ));
    columns.push(("rg_error", "NULL".to_string()));
    columns
}

/// `rg_source` of ReplayGain read from a file's tags.
pub(crate) const GAIN_FROM_TAGS: &str = "tags";
/// `rg_source` of ReplayGain measured by `analyze_loudness`.
pub(crate) const GAIN_MEASURED: &str = "measured";

/// Writes the ReplayGain a re-read of a track's file found in its tags. Tags with a gain
/// replace whatever the track had; without one, gains that came from tags are cleared (the
/// tags lost them), and so are measured ones when the file `changed` (its audio may be
/// another's): either way the track waits for a measurement again.
async fn retag_gain(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    gain: ReplayGain,
    changed: bool,
) -> Result<()> {
    let mut sql = db.sql("");
    let sets: Vec<String> = gain_columns(&mut sql, gain)
        .into_iter()
        .map(|(column, value)| format!("{column} = {value}"))
        .collect();
    let id = sql.arg(id);
    sql.push(&format!(
        "UPDATE tracks SET {} WHERE id = {id}",
        sets.join(", ")
    ));
    if !gain.is_present() {
        let from_tags = sql.arg(GAIN_FROM_TAGS);
        sql.push(&format!(" AND (rg_source = {from_tags}"));
        if changed {
            sql.push(" OR rg_source IS NOT NULL OR rg_error IS NOT NULL");
        }
        sql.push(")");
    }
    sql.execute(&mut **tx).await?;
    Ok(())
}

/// Records a track's measured ReplayGain (`gain`, its track values): only while it has none
/// from its tags and its audio is still the file measured (`sha256`). Measured values leave
/// `updated_at` alone: they describe the audio the track already had, not an edit (the sync
/// stamp still moves, so clients see them). Returns whether the track took them.
pub(crate) async fn set_measured_gain(
    db: &Db,
    tx: &mut Tx,
    id: &TrackId,
    sha256: Option<&str>,
    track_gain: f64,
    track_peak: f64,
) -> Result<bool> {
    let changed = db
        .sql(
            "UPDATE tracks SET rg_track_gain = $2, rg_track_peak = $3, rg_album_gain = NULL,
                 rg_album_peak = NULL, rg_source = $4, rg_error = NULL
             WHERE id = $1 AND (rg_source IS NULL OR rg_source = $4)
               AND (content_sha256 = $5 OR (content_sha256 IS NULL AND $5 IS NULL))",
        )
        .bind(id)
        .bind(track_gain)
        .bind(track_peak)
        .bind(GAIN_MEASURED)
        .bind(sha256)
        .execute(&mut **tx)
        .await?;
    Ok(changed == 1)
}

/// Records why a track's loudness cannot be measured (it is not tried again until its file
/// changes), unless it has ReplayGain by now.
pub(crate) async fn gain_unmeasurable(db: &Db, id: &TrackId, reason: &str) -> Result<()> {
    db.sql("UPDATE tracks SET rg_error = $2 WHERE id = $1 AND rg_source IS NULL")
        .bind(id)
        .bind(reason)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Sets the measured album gain and peak of `ids` (tracks of one album whose gains were all
/// measured; a track with gains from tags keeps them).
pub(crate) async fn set_measured_album_gain(
    db: &Db,
    tx: &mut Tx,
    ids: &[&str],
    album_gain: f64,
    album_peak: f64,
) -> Result<()> {
    for chunk in ids.chunks(CHUNK) {
        let mut sql = db.sql("UPDATE tracks SET rg_album_gain = ");
        sql.push_bind(album_gain)
            .push(", rg_album_peak = ")
            .push_bind(album_peak)
            .push(" WHERE rg_source = ")
            .push_bind(GAIN_MEASURED)
            .push(" AND id IN (")
            .push_list(chunk.iter().copied())
            .push(")");
        sql.execute(&mut **tx).await?;
    }
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
    retag_gain(db, tx, id, facts.replay_gain, true).await
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
