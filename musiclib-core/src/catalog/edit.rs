//! Manual edits: [`TrackPatch`] (descriptive fields; the enrichment state stays) and
//! [`TrackMetadata`] (identity fields; the track becomes `manual`). Both lock the track's row
//! for the transaction, so an enrichment finishing meanwhile cannot undo them, and only the
//! uploader or an admin may make them ([`crate::auth::policy`]).

use super::resolve::Resolver;
use super::tracks::lock_track;
use super::writes::{self, Description, Identity, Names};
use super::Catalog;
use crate::auth::Caller;
use crate::domain::Track;
use crate::{Error, Result, TrackId};

/// A partial update of a track: `None` leaves a field alone. The
/// enrichment state is not changed.
#[derive(Debug, Clone, Default)]
pub struct TrackPatch {
    /// New title.
    pub title: Option<String>,
    /// New genre.
    pub genre: Option<String>,
    /// New year.
    pub year: Option<i64>,
    /// New track number.
    pub track_number: Option<i64>,
    /// New disc number.
    pub disc_number: Option<i64>,
}

/// A full manual metadata edit: the track becomes `manual`,
/// artist and album are resolved from the names given, absent fields are cleared.
#[derive(Debug, Clone, Default)]
pub struct TrackMetadata {
    /// Title (required).
    pub title: String,
    /// Track artist name.
    pub artist: Option<String>,
    /// Album title.
    pub album: Option<String>,
    /// Album artist name (defaults to the track artist).
    pub album_artist: Option<String>,
    /// Genre.
    pub genre: Option<String>,
    /// Year.
    pub year: Option<i64>,
    /// Track number.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// MusicBrainz recording id.
    pub musicbrainz_recording_id: Option<String>,
}

fn validate_year(year: Option<i64>) -> Result<()> {
    match year {
        Some(year) if !(0..=9999).contains(&year) => {
            Err(Error::invalid("year", "must be between 0 and 9999"))
        }
        _ => Ok(()),
    }
}

fn validate_position(field: &str, value: Option<i64>) -> Result<()> {
    match value {
        Some(value) if !(0..=100_000).contains(&value) => {
            Err(Error::invalid(field, "must be between 0 and 100000"))
        }
        _ => Ok(()),
    }
}

fn non_empty(field: &str, raw: &str) -> Result<String> {
    // Counted as sent, before trimming, so the documented maxLength is exact.
    if raw.chars().count() > crate::text::MAX_TEXT_CHARS {
        return Err(Error::invalid(
            field,
            format!("must be at most {} characters", crate::text::MAX_TEXT_CHARS),
        ));
    }
    if crate::text::has_control(raw) {
        return Err(Error::invalid(field, "must not contain control characters"));
    }
    let value = raw.trim();
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    Ok(value.to_string())
}

fn optional_text(field: &str, value: &Option<String>) -> Result<Option<String>> {
    let Some(raw) = value.as_deref() else {
        return Ok(None);
    };
    // Blank clears the field; a blank too long or with control characters is still refused.
    if raw.trim().is_empty()
        && raw.chars().count() <= crate::text::MAX_TEXT_CHARS
        && !crate::text::has_control(raw)
    {
        return Ok(None);
    }
    non_empty(field, raw).map(Some)
}

impl Catalog {
    /// Changes descriptive fields of a track (fields left `None` stay); the enrichment
    /// state is kept. The uploader or an admin only.
    pub async fn patch_track(
        &self,
        caller: &Caller,
        id: &TrackId,
        patch: &TrackPatch,
    ) -> Result<Track> {
        let title = patch
            .title
            .as_deref()
            .map(|title| non_empty("title", title))
            .transpose()?;
        validate_year(patch.year)?;
        validate_position("track_number", patch.track_number)?;
        validate_position("disc_number", patch.disc_number)?;
        let db = &self.db;
        let mut tx = db.begin().await?;
        let current = lock_track(db, &mut tx, id).await?;
        caller.may_change_track(current.added_by().as_ref())?;
        let mut description = Description::of(&current);
        let names = &mut description.names;
        if let Some(title) = title {
            names.title = title;
        }
        if let Some(genre) = patch.genre.as_deref() {
            names.genre = Some(genre.trim().to_string());
        }
        names.year = patch.year.or(names.year);
        names.track_number = patch.track_number.or(names.track_number);
        names.disc_number = patch.disc_number.or(names.disc_number);
        writes::describe(db, &mut tx, id, &description).await?;
        tx.commit().await?;
        self.get_track(id).await
    }

    /// Replaces a track's metadata by hand: artist and album are resolved from the names
    /// given, absent fields are cleared, and the track becomes `manual` (enrichment leaves it
    /// alone from now on). The uploader or an admin only.
    pub async fn set_track_metadata(
        &self,
        caller: &Caller,
        id: &TrackId,
        metadata: &TrackMetadata,
    ) -> Result<Track> {
        let title = non_empty("title", &metadata.title)?;
        let artist = optional_text("artist", &metadata.artist)?;
        let album = optional_text("album", &metadata.album)?;
        let album_artist =
            optional_text("album_artist", &metadata.album_artist)?.or(artist.clone());
        let genre = optional_text("genre", &metadata.genre)?;
        validate_year(metadata.year)?;
        validate_position("track_number", metadata.track_number)?;
        validate_position("disc_number", metadata.disc_number)?;
        let db = &self.db;
        let mut tx = db.begin().await?;
        let current = lock_track(db, &mut tx, id).await?;
        caller.may_change_track(current.added_by().as_ref())?;
        let mut resolver = Resolver::new(db.clone());
        let description = Names {
            title,
            artist,
            album,
            album_artist,
            genre,
            year: metadata.year,
            track_number: metadata.track_number,
            disc_number: metadata.disc_number,
        }
        .resolve(&mut tx, &mut resolver)
        .await?;
        writes::describe(db, &mut tx, id, &description).await?;
        let recording_id = metadata.musicbrainz_recording_id.as_deref();
        writes::identify(db, &mut tx, id, Identity::Manual { recording_id }).await?;
        let dropped = self
            .drop_orphans(
                &mut tx,
                current.album_id.as_deref(),
                current.artist_id.as_deref(),
            )
            .await?;
        tx.commit().await?;
        self.remove_dropped_cover(dropped).await;
        self.get_track(id).await
    }
}
