//! Metadata enrichment (spec: Enrichment rules, States): the `enrich_task` job.
//!
//! The pipeline, in order: embedded tags (read at ingest and kept on the track), the audio
//! fingerprint (`musiclib-fingerprint`, identical to `fpcalc`'s), the AcoustID lookup
//! ([`acoustid`], batched across concurrent jobs and throttled process-wide), the decision
//! ([`merge`]), artist and album resolution, then cover art ([`coverart`]) for an album that
//! has none. Each external step degrades: a failed fingerprint or lookup leaves the tags'
//! answer, a failed cover never changes the status. A crash is recorded as `failed` in a fresh
//! transaction, so no track stays `pending`; `manual` tracks are skipped.

pub mod acoustid;
pub mod coverart;
pub mod merge;
pub mod throttle;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use musiclib_fingerprint::{Fingerprint, DEFAULT_MAX_SECONDS};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::writes::{self, Identity, Names};
use crate::catalog::{Catalog, Resolver};
use crate::config::EnrichmentConfig;
use crate::cpu::CpuSlots;
use crate::db::Db;
use crate::domain::MetadataStatus;
use crate::jobs::{JobContext, JobError, JobKind, Jobs, Pool, Registry};
use crate::media::Media;
use crate::probe::EmbeddedTags;
use crate::storage::Storage;
use crate::{AlbumId, Error, JobId, Result, TrackId};

use self::acoustid::{LookupError, LookupQuery};
use self::merge::Current;

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

/// How one run ended (the job result's `outcome`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportOutcome {
    /// Identity found.
    #[default]
    Enriched,
    /// No identity (see `reason`).
    Failed,
    /// The track is manual.
    Skipped,
}

/// What happened at each step of one run, kept as the job's result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EnrichReport {
    /// How the run ended.
    pub outcome: ReportOutcome,
    /// The failure or skip reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `ok`, or why there is no fingerprint.
    pub fingerprint: String,
    /// `matched (score …)`, `no match`, `off`, or why the lookup failed.
    pub lookup: String,
    /// `embedded`, `archive`, `kept` (the album had one), `none`, or why it failed.
    pub cover: String,
}

/// A ranked fingerprint match offered for a track, applied to nothing.
pub use self::merge::Chosen as Candidate;

/// How the lookup went.
enum Lookup {
    Off,
    Skipped(String),
    Failed(String),
    Found(Vec<acoustid::Match>),
}

/// The `enrich_task` job: runs the pipeline for one track.
#[derive(Debug)]
pub struct EnrichTrack;

/// What an `enrich_task` job enriches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnrichPayload {
    /// The track.
    pub track_id: TrackId,
}

impl JobKind for EnrichTrack {
    const NAME: &'static str = "enrich_task";
    const POOL: Pool = Pool::Network;
    type Payload = EnrichPayload;
    type Service = Enrichment;

    /// One enrichment per track at a time.
    fn dedup_key(payload: &EnrichPayload) -> Option<String> {
        Some(format!("enrich:{}", payload.track_id))
    }

    async fn run(
        enrichment: &Enrichment,
        _context: &JobContext,
        payload: EnrichPayload,
    ) -> Result<Value, JobError> {
        let track_id = payload.track_id;
        match enrichment.enrich_track_report(&track_id).await {
            Ok(report) => Ok(serde_json::to_value(report).unwrap_or(Value::Null)),
            // The track was deleted since: nothing to do.
            Err(Error::NotFound { .. }) => {
                Ok(serde_json::json!({ "outcome": "skipped", "reason": "the track was deleted" }))
            }
            Err(error) => {
                let reason = crate::error_chain(&error);
                if let Err(record_error) = enrichment.record_crash(&track_id, &reason).await {
                    tracing::error!(%track_id, error = %crate::error_chain(&record_error), "could not record an enrichment failure");
                }
                Err(JobError::from(error))
            }
        }
    }

    /// A worker that died on the last attempt is a crash too: the track says so, instead of
    /// staying `pending` for ever.
    async fn abandoned(enrichment: &Enrichment, payload: EnrichPayload, reason: &str) {
        if let Err(error) = enrichment.record_crash(&payload.track_id, reason).await {
            tracing::error!(track_id = %payload.track_id, error = %crate::error_chain(&error), "could not record an enrichment failure");
        }
    }
}

/// The enrichment service, with its outside clients.
#[derive(Clone, Debug)]
pub struct Enrichment {
    db: Db,
    storage: Storage,
    jobs: Jobs,
    catalog: Catalog,
    media: Media,
    cpu: CpuSlots,
    config: EnrichmentConfig,
    http: reqwest::Client,
    /// The batching AcoustID lookup queue (started on first use, inside the runtime; `None`
    /// without an API key).
    lookups: Arc<OnceLock<Option<acoustid::Lookups>>>,
    cover_archive: coverart::Client,
}

impl Enrichment {
    /// Registers the enrichment job kind.
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<EnrichTrack>(self.clone(), config);
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        db: Db,
        storage: Storage,
        jobs: Jobs,
        catalog: Catalog,
        media: Media,
        cpu: CpuSlots,
        config: EnrichmentConfig,
        http: reqwest::Client,
    ) -> Enrichment {
        let cover_archive = coverart::Client::new(http.clone(), &config.coverart_base_url);
        Enrichment {
            db,
            storage,
            jobs,
            catalog,
            media,
            cpu,
            config,
            http,
            lookups: Arc::new(OnceLock::new()),
            cover_archive,
        }
    }

    /// The AcoustID lookup queue, or `None` when no API key is configured. Must be called
    /// inside a tokio runtime (it starts the batching task).
    fn lookups(&self) -> Option<&acoustid::Lookups> {
        self.lookups
            .get_or_init(|| {
                let api_key = self.config.acoustid_api_key.clone()?;
                let client = acoustid::Client::new(
                    self.http.clone(),
                    acoustid::ClientConfig {
                        base_url: self.config.acoustid_base_url.clone(),
                        api_key,
                        requests_per_second: self.config.acoustid_requests_per_second,
                        attempts: 4,
                        retry_base: self.config.acoustid_retry_base,
                        timeout: std::time::Duration::from_secs(20),
                    },
                );
                Some(acoustid::Lookups::start(client))
            })
            .as_ref()
    }

    /// Queues the enrichment pipeline for one track (a `manual` track will be skipped). The
    /// pipeline rewrites the track's metadata, so only who may change the track may ask for
    /// it: its uploader, or an admin.
    pub async fn request_enrichment(
        &self,
        caller: &crate::auth::Caller,
        id: &TrackId,
    ) -> Result<JobId> {
        let track = self.catalog.get_track(id).await?;
        caller.may_change_track(track.added_by.as_ref())?;
        self.jobs
            .enqueue::<EnrichTrack>(
                &EnrichPayload {
                    track_id: id.clone(),
                },
                Some(&caller.user.id),
            )
            .await
    }

    /// Runs enrichment for one track now.
    pub async fn enrich_track(&self, id: &TrackId) -> Result<EnrichOutcome> {
        let report = self.enrich_track_report(id).await?;
        Ok(match report.outcome {
            ReportOutcome::Enriched => EnrichOutcome::Enriched,
            ReportOutcome::Skipped => EnrichOutcome::SkippedManual,
            ReportOutcome::Failed => EnrichOutcome::Failed(report.reason.unwrap_or_default()),
        })
    }

    /// Runs enrichment for one track now and tells what each step did.
    pub async fn enrich_track_report(&self, id: &TrackId) -> Result<EnrichReport> {
        let track = self.catalog.get_track(id).await?;
        if track.metadata_status == MetadataStatus::Manual {
            return Ok(skipped_manual());
        }
        let tags = self.catalog.track_tags(id).await?;
        let mut report = EnrichReport::default();

        // Audio: fingerprint it, then look it up.
        let audio = match self.storage.local_file(&track.storage_uri).await {
            Ok(audio) => Some(audio),
            Err(error) => {
                report.fingerprint = format!("no audio: {}", crate::error_chain(&error));
                None
            }
        };
        let fingerprint = match &audio {
            Some(audio) => match self.fingerprint_path(&audio.path).await {
                Ok(fingerprint) => {
                    report.fingerprint = "ok".into();
                    Some(fingerprint)
                }
                Err(reason) => {
                    tracing::warn!(track_id = %id, %reason, "cannot fingerprint the track");
                    report.fingerprint = reason;
                    None
                }
            },
            None => None,
        };
        let lookup = self.lookup(fingerprint.as_ref()).await;
        let current = Current {
            title: track.title.clone(),
            artist: track.artist_name.clone(),
            album: track.album_title.clone(),
            album_artist: track.album_artist_name.clone(),
            year: track.year,
            genre: track.genre.clone(),
            track_number: track.track_number,
            disc_number: track.disc_number,
            recording_id: track.musicbrainz_recording_id.clone(),
            duration_secs: track.duration_ms.map(|ms| ms as f64 / 1000.0),
        };
        let chosen = match &lookup {
            Lookup::Found(matches) => merge::choose(matches, &current, &tags),
            _ => None,
        };
        report.lookup = match (&lookup, &chosen) {
            (Lookup::Off, _) => "off: ACOUSTID_API_KEY is not set".into(),
            (Lookup::Skipped(reason), _) => format!("skipped: {reason}"),
            (Lookup::Failed(reason), _) => format!("failed: {reason}"),
            (Lookup::Found(_), Some(chosen)) => format!("matched (score {:.2})", chosen.score),
            (Lookup::Found(_), None) => "no match".into(),
        };
        let trust = self.config.acoustid_trust_score;
        let mut decision = merge::decide(&current, &tags, chosen.as_ref(), trust);
        // What AcoustID says is as long as it likes: cut it as tags are.
        decision.title = crate::text::cap(&decision.title);
        for text in [
            &mut decision.artist,
            &mut decision.album,
            &mut decision.album_artist,
            &mut decision.genre,
        ] {
            *text = text
                .as_deref()
                .map(crate::text::cap)
                .filter(|text| !text.is_empty());
        }
        let failure = (!decision.identified).then(|| no_identity_reason(&tags, &current, &lookup));

        // Record the outcome, on the track's row locked for the transaction: a manual edit
        // made meanwhile is seen here (and wins), and none can land between this read and
        // the write below.
        let db = &self.db;
        let mut tx = db.begin().await?;
        let locked = crate::catalog::lock_track(db, &mut tx, id).await?;
        if locked.metadata_status == MetadataStatus::Manual.as_str() {
            return Ok(skipped_manual());
        }
        let mut resolver = Resolver::new(db.clone());
        let description = Names {
            title: decision.title.clone(),
            artist: decision.artist.clone(),
            album: decision.album.clone(),
            album_artist: decision.album_artist.clone(),
            genre: decision.genre.clone(),
            year: decision.year,
            track_number: decision.track_number,
            disc_number: decision.disc_number,
        }
        .resolve(&mut tx, &mut resolver)
        .await?;
        let artist_id = description
            .artist_id
            .as_ref()
            .map(|id| id.as_str().to_string());
        let album_id = description
            .album_id
            .as_ref()
            .map(|id| id.as_str().to_string());
        if let (Some(album_id), Some(group)) = (&album_id, &decision.releasegroup_id) {
            db.sql(
                "UPDATE albums SET musicbrainz_releasegroup_id = $2, updated_at = {now}
                 WHERE id = $1 AND musicbrainz_releasegroup_id IS NULL",
            )
            .bind(album_id)
            .bind(group)
            .execute(&mut *tx)
            .await?;
        }
        writes::describe(db, &mut tx, id, &description).await?;
        let compressed = fingerprint.as_ref().map(Fingerprint::compressed);
        let identity = Identity::Enriched {
            failure: failure.as_deref(),
            recording_id: decision.recording_id.as_deref(),
            acoustid: chosen
                .as_ref()
                .map(|chosen| (chosen.acoustid_id.as_str(), chosen.score)),
            fingerprint: compressed
                .as_deref()
                .zip(fingerprint.as_ref().map(|fp| fp.duration.round() as i64)),
        };
        writes::identify(db, &mut tx, id, identity).await?;
        let dropped = self
            .catalog
            .drop_orphans(
                &mut tx,
                locked
                    .album_id
                    .as_deref()
                    .filter(|old| Some(*old) != album_id.as_deref()),
                locked
                    .artist_id
                    .as_deref()
                    .filter(|old| Some(*old) != artist_id.as_deref()),
            )
            .await?;
        tx.commit().await?;
        self.catalog.remove_dropped_cover(dropped).await;

        // Cover art: never changes the outcome.
        report.cover = match album_id.map(AlbumId::from_db) {
            Some(album_id) => self
                .resolve_cover(
                    &album_id,
                    audio.as_ref().map(|audio| audio.path.as_path()),
                    decision.releasegroup_id.as_deref(),
                )
                .await
                .unwrap_or_else(|error| {
                    let reason = crate::error_chain(&error);
                    tracing::warn!(track_id = %id, %album_id, %reason, "cover art failed");
                    format!("failed: {reason}")
                }),
            None => "none: the track has no album".into(),
        };
        report.outcome = match &failure {
            None => ReportOutcome::Enriched,
            Some(_) => ReportOutcome::Failed,
        };
        report.reason = failure;
        Ok(report)
    }

    /// Ranked fingerprint matches for a track, applied to nothing: a user picks one and
    /// applies it as a manual edit ([`crate::catalog::Catalog::set_track_metadata`]).
    pub async fn metadata_candidates(&self, id: &TrackId) -> Result<Vec<Candidate>> {
        let track = self.catalog.get_track(id).await?;
        let Some(lookups) = self.lookups() else {
            // Not configured on this server, not a thing the API never does: unavailable.
            return Err(Error::Unavailable(
                "fingerprint lookups are off: the server has no ACOUSTID_API_KEY".into(),
            ));
        };
        let stored: Option<(Option<String>, Option<i64>)> = self
            .db
            .sql("SELECT fingerprint, fingerprint_duration FROM tracks WHERE id = $1")
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let query = match stored {
            Some((Some(fingerprint), Some(duration))) => LookupQuery {
                fingerprint,
                duration: duration.clamp(0, u32::MAX as i64) as u32,
            },
            _ => {
                let audio = self.storage.local_file(&track.storage_uri).await?;
                let fingerprint = self
                    .fingerprint_path(&audio.path)
                    .await
                    .map_err(|reason| Error::invalid("track", reason))?;
                query_of(&fingerprint)
            }
        };
        let matches = lookups.lookup(query).await.map_err(|error| match error {
            LookupError::Transient(_) => Error::Unavailable(error.to_string()),
            LookupError::Permanent(_) => Error::Unavailable(error.to_string()),
        })?;
        let tags = self.catalog.track_tags(id).await?;
        let current = Current {
            title: track.title.clone(),
            duration_secs: track.duration_ms.map(|ms| ms as f64 / 1000.0),
            ..Current::default()
        };
        Ok(merge::candidates(&matches, &current, &tags))
    }

    /// Fingerprints a file on a blocking thread, at most one per core at a time.
    async fn fingerprint_path(&self, path: &Path) -> std::result::Result<Fingerprint, String> {
        let _slot = self.cpu.acquire().await;
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            musiclib_fingerprint::fingerprint_file(&path, DEFAULT_MAX_SECONDS)
        })
        .await
        .map_err(|error| format!("the fingerprint task failed: {error}"))?
        .map_err(|error| format!("cannot fingerprint the audio: {error}"))
    }

    async fn lookup(&self, fingerprint: Option<&Fingerprint>) -> Lookup {
        let Some(lookups) = self.lookups() else {
            return Lookup::Off;
        };
        let Some(fingerprint) = fingerprint else {
            return Lookup::Skipped("the audio has no fingerprint".into());
        };
        match lookups.lookup(query_of(fingerprint)).await {
            Ok(matches) => Lookup::Found(matches),
            Err(error) => {
                tracing::warn!(error = %error, "AcoustID lookup failed; keeping the tags");
                Lookup::Failed(error.to_string())
            }
        }
    }

    /// Gives the album a cover when it has none: the file's embedded picture first, then the
    /// Cover Art Archive by release group. Returns what happened.
    async fn resolve_cover(
        &self,
        album_id: &AlbumId,
        audio: Option<&Path>,
        releasegroup_id: Option<&str>,
    ) -> Result<String> {
        if self.media.album_has_cover(album_id).await? {
            return Ok("kept: the album has a cover".into());
        }
        if let Some(path) = audio {
            let path = path.to_path_buf();
            let picture = tokio::task::spawn_blocking(move || crate::probe::cover_picture(&path))
                .await
                .map_err(Error::task("embedded picture"))?;
            if let Some(bytes) = picture {
                match coverart::Image::checked(bytes.into()) {
                    Ok(image) => {
                        self.media.store_album_cover(album_id, &image).await?;
                        return Ok("embedded".into());
                    }
                    Err(why) => {
                        tracing::info!(%album_id, %why, "the embedded picture is not used as a cover")
                    }
                }
            }
        }
        let group = match releasegroup_id {
            Some(group) => Some(group.to_string()),
            None => self
                .db
                .sql("SELECT musicbrainz_releasegroup_id FROM albums WHERE id = $1")
                .bind(album_id)
                .fetch_scalar_optional::<Option<String>, _>(self.db.pool())
                .await?
                .flatten(),
        };
        let Some(group) = group else {
            return Ok("none: no embedded picture and no release group".into());
        };
        if !self.config.coverart_enabled {
            return Ok("none: the Cover Art Archive is off".into());
        }
        match self.cover_archive.front(&group).await {
            Ok(image) => {
                self.media.store_album_cover(album_id, &image).await?;
                Ok("archive".into())
            }
            Err(coverart::CoverError::NotFound) => {
                Ok("none: the archive has no front image".into())
            }
            Err(error) => Ok(format!("failed: {error}")),
        }
    }

    /// Records an unexpected enrichment failure in a fresh transaction (the one that failed
    /// is gone), unless the track is `manual`.
    async fn record_crash(&self, id: &TrackId, reason: &str) -> Result<()> {
        let reason = format!("enrichment crashed: {reason}");
        writes::enrichment_failed(&self.db, id, &reason).await?;
        Ok(())
    }
}

fn skipped_manual() -> EnrichReport {
    EnrichReport {
        outcome: ReportOutcome::Skipped,
        reason: Some("the track is manual: its metadata was edited by hand".into()),
        ..EnrichReport::default()
    }
}

fn query_of(fingerprint: &Fingerprint) -> LookupQuery {
    LookupQuery {
        fingerprint: fingerprint.compressed(),
        duration: fingerprint.duration.round().clamp(0.0, u32::MAX as f64) as u32,
    }
}

/// A readable reason for "no identity": what the tags lack and why the lookup did not help.
fn no_identity_reason(tags: &EmbeddedTags, current: &Current, lookup: &Lookup) -> String {
    let has_artist = tags.artist.is_some() || current.artist.is_some();
    let missing = match (tags.title.is_some(), has_artist) {
        (false, false) => "the file has no title or artist tags",
        (false, true) => "the file has no title tag",
        _ => "the file has no artist tag",
    };
    let lookup = match lookup {
        Lookup::Off => "fingerprint lookup is off (no ACOUSTID_API_KEY)".to_string(),
        Lookup::Skipped(reason) => format!("the fingerprint lookup was skipped ({reason})"),
        Lookup::Failed(reason) => format!("the fingerprint lookup failed ({reason})"),
        Lookup::Found(_) => "no fingerprint match was found".to_string(),
    };
    format!("{missing}, and {lookup}")
}
