//! Metadata enrichment (spec: Enrichment rules, States): the `enrich_task` job.
//!
//! Today the pipeline has its first stage, embedded tags: gap-fill the track from its tags,
//! resolve artist and album, and record `enriched` (identity found) or `failed` (a readable
//! reason). The fingerprint and lookup stages plug in after the tags. A crash is recorded as
//! `failed` in a fresh transaction, so no track stays `pending`; `manual` tracks are skipped.

use serde_json::Value;

use crate::catalog::{lock_track, Resolver};
use crate::domain::MetadataStatus;
use crate::ingest::EmbeddedTags;
use crate::jobs::{kind, JobError, NewJob};
use crate::{Error, JobId, Library, Result, TrackId};

/// What one enrichment run decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnrichOutcome {
    /// Identity found; the track is `enriched`.
    Enriched,
    /// No identity; the track is `failed` with this reason.
    Failed(String),
    /// The track is `manual` and was left alone.
    SkippedManual,
}

impl EnrichOutcome {
    fn to_json(&self) -> Value {
        match self {
            EnrichOutcome::Enriched => serde_json::json!({ "outcome": "enriched" }),
            EnrichOutcome::Failed(reason) => {
                serde_json::json!({ "outcome": "failed", "reason": reason })
            }
            EnrichOutcome::SkippedManual => {
                serde_json::json!({ "outcome": "skipped", "reason": "the track is manual" })
            }
        }
    }
}

impl Library {
    /// `POST /tracks/{id}/metadata/enrich`: queues the pipeline for one track.
    pub async fn request_enrichment(
        &self,
        id: &TrackId,
        requested_by: &crate::UserId,
    ) -> Result<JobId> {
        self.get_track(id).await?;
        self.enqueue(
            NewJob::new(
                kind::ENRICH,
                serde_json::json!({ "track_id": id.to_string() }),
            )
            .dedup(format!("enrich:{id}"))
            .by(requested_by),
        )
        .await
    }

    /// Runs enrichment for one track now.
    pub async fn enrich_track(&self, id: &TrackId) -> Result<EnrichOutcome> {
        let db = self.db();
        let mut tx = db.begin().await?;
        let track = lock_track(&mut tx, id).await?;
        if track.metadata_status == MetadataStatus::Manual.as_str() {
            return Ok(EnrichOutcome::SkippedManual);
        }
        let tags: EmbeddedTags = track
            .tags
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();

        // Gap-fill: a field the track already has is never erased or replaced.
        let title = tags.title.clone().unwrap_or(track.title.clone());
        let artist = track.artist_name.clone().or(tags.artist.clone());
        let album = track.album_title.clone().or(tags.album.clone());
        let album_artist = track
            .album_artist_name
            .clone()
            .or(tags.album_artist.clone())
            .or_else(|| tags.compilation.then(|| "Various Artists".to_string()))
            .or(artist.clone());
        let year = track.year.or(tags.year);
        let genre = track.genre.clone().or(tags.genre.clone());
        let mut resolver = Resolver::new(db.clone());
        let artist_id = match (&track.artist_id, &artist) {
            (Some(id), _) => Some(id.clone()),
            (None, Some(name)) => Some(resolver.artist(&mut tx, name).await?.to_string()),
            (None, None) => None,
        };
        let album_id = match (track.album_id(), &album) {
            (Some(id), _) => Some(id.to_string()),
            (None, Some(title)) => Some(
                resolver
                    .album(
                        &mut tx,
                        title,
                        album_artist.as_deref(),
                        year,
                        genre.as_deref(),
                    )
                    .await?
                    .to_string(),
            ),
            (None, None) => None,
        };

        let identified =
            tags.identifies_track() || (track.artist_name.is_some() && tags.title.is_some());
        let (status, error) = if identified {
            (MetadataStatus::Enriched, None)
        } else {
            let missing = match (tags.title.is_some(), artist.is_some()) {
                (false, false) => "the file has no title or artist tags",
                (false, true) => "the file has no title tag",
                _ => "the file has no artist tag",
            };
            (
                MetadataStatus::Failed,
                Some(format!("{missing}, and no fingerprint match was found")),
            )
        };
        let search_text = crate::text::search_key(&[
            &title,
            artist.as_deref().unwrap_or(""),
            album.as_deref().unwrap_or(""),
        ]);
        let query = db.sql(
            "UPDATE tracks SET title = $2, artist_id = $3, artist_name = $4, album_id = $5, album_title = $6,
                 album_artist_name = $7, year = $8, genre = $9,
                 track_number = COALESCE(track_number, $10), disc_number = COALESCE(disc_number, $11),
                 musicbrainz_recording_id = COALESCE(musicbrainz_recording_id, $12),
                 metadata_status = $13, metadata_error = $14, enriched_at = {now}, search_text = $15,
                 updated_at = {now}
             WHERE id = $1",
        );
        sqlx::query(&query)
            .bind(id.as_str())
            .bind(&title)
            .bind(artist_id)
            .bind(artist.as_deref())
            .bind(album_id)
            .bind(album.as_deref())
            .bind(album_artist.as_deref().filter(|_| album.is_some()))
            .bind(year)
            .bind(genre.as_deref())
            .bind(tags.track_number)
            .bind(tags.disc_number)
            .bind(tags.musicbrainz_recording_id.as_deref())
            .bind(status.as_str())
            .bind(error.as_deref())
            .bind(search_text)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(match error {
            None => EnrichOutcome::Enriched,
            Some(reason) => EnrichOutcome::Failed(reason),
        })
    }

    /// Records an unexpected enrichment failure in a fresh transaction (the one that failed
    /// is gone), unless the track is `manual`.
    async fn record_enrichment_crash(&self, id: &TrackId, reason: &str) -> Result<()> {
        let query = self.db().sql(
            "UPDATE tracks SET metadata_status = 'failed', metadata_error = $2, enriched_at = {now}, updated_at = {now}
             WHERE id = $1 AND metadata_status <> 'manual'",
        );
        sqlx::query(&query)
            .bind(id.as_str())
            .bind(format!("enrichment crashed: {reason}"))
            .execute(self.db().pool())
            .await?;
        Ok(())
    }
}

/// The `enrich_task` job.
pub(crate) async fn run_job(
    library: &Library,
    payload: &Value,
) -> std::result::Result<Value, JobError> {
    let track_id = payload
        .get("track_id")
        .and_then(Value::as_str)
        .ok_or_else(|| JobError::permanent("the job has no track_id"))?;
    let track_id = TrackId::parse(track_id)
        .map_err(|_| JobError::permanent("the job's track_id is not an id"))?;
    match library.enrich_track(&track_id).await {
        Ok(outcome) => Ok(outcome.to_json()),
        // The track was deleted since: nothing to do.
        Err(Error::NotFound { .. }) => {
            Ok(serde_json::json!({ "outcome": "skipped", "reason": "the track was deleted" }))
        }
        Err(error) => {
            let reason = crate::error_chain(&error);
            if let Err(record_error) = library.record_enrichment_crash(&track_id, &reason).await {
                tracing::error!(%track_id, error = %crate::error_chain(&record_error), "could not record an enrichment failure");
            }
            Err(JobError::from(error))
        }
    }
}
