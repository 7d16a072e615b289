//! ReplayGain measured where a file's tags have none: each track's loudness by EBU R128
//! (ITU-R BS.1770: K-weighting, 400 ms gating blocks every 100 ms, the -70 LUFS absolute and
//! -10 LU relative gates), with the `ebur128` crate, over the samples the fingerprint's
//! decoding gives (`musiclib_fingerprint::pcm`: Symphonia, ffmpeg for Opus).
//!
//! - Track gain = -18 LUFS (ReplayGain 2.0's reference) - the track's integrated loudness;
//!   track peak = its largest sample, linear (sample peak).
//! - Album gain = -18 LUFS - the album's integrated loudness, gated over the blocks of all
//!   its tracks together (not the mean of their loudness); album peak = the largest track
//!   peak. Each measured track keeps its blocks in `track_loudness` as a histogram of their
//!   loudness (0.1 LU bins, each with its blocks' mean energy), so a track joining an album
//!   costs its own decoding only. An album gets a measured gain once none of its tracks
//!   waits for a measurement and none has gains from tags (an album mixing both keeps its
//!   tags' album gain on those tracks; the others have none, and players fall back to the
//!   track gain).
//!
//! What it costs next to decoding the file (`benches/loudness.rs`): `ebur128`'s K-weighting
//! in its momentary mode and one read of each 100 ms step (a 400 ms block is the mean of
//! four), the sample peak in a vectorised pass of its own, no true-peak oversampling. The
//! filter is most of it, about 4.7 ns per sample and channel, which next to the fastest
//! decoders (FLAC, AAC) is more than a fifth of the decoding: when a second CPU slot is free,
//! the metering runs on a thread beside the decoding, and the measurement then takes about
//! as long as the decoding alone.
//!
//! The `analyze_loudness` job measures the tracks that have neither gains from tags nor a
//! recorded failure, oldest first, one at a time on a CPU slot, and yields as the sound
//! analysis does: before each track it looks for queued or running imports and enrichment
//! and stops while there are any. The `loudness_sweep` task queues it (one live job at a
//! time) every `sweep_interval` when tracks wait and no import does. A file that cannot be
//! decoded keeps the reason in `tracks.rg_error` and is not tried again until it changes.
//! Measured values never replace gains read from tags (`catalog::writes`).

mod meter;

use std::collections::BTreeSet;
use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Media;
use crate::catalog::writes;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::probe::MAX_PEAK;
use crate::{AlbumId, Result, TrackId};

use meter::{album_loudness, gain_of, Blocks};
pub use meter::{measure_file, measure_file_beside, Measurement, REFERENCE_LUFS};

/// Tracks read per batch of the job.
const BATCH: usize = 20;

/// A peak as stored, to six decimals (as taggers write it), at most [`MAX_PEAK`] (a float
/// file may hold anything).
fn rounded_peak(peak: f64) -> f64 {
    ((peak * 1e6).round() / 1e6).min(MAX_PEAK)
}

/// How much of the library has ReplayGain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoudnessStatus {
    /// Tracks with gains from their tags.
    pub from_tags: i64,
    /// Tracks with measured gains.
    pub measured: i64,
    /// Tracks whose loudness could not be measured (kept with the reason).
    pub failed: i64,
    /// Playable tracks still waiting for a measurement.
    pub pending: i64,
}

/// What one run of the measurement did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoudnessReport {
    /// Tracks measured.
    pub measured: usize,
    /// Tracks whose loudness could not be measured (kept with the reason).
    pub failed: usize,
    /// Albums whose album gain was (re)computed.
    pub albums: usize,
    /// Whether it stopped to let imports run.
    pub yielded: bool,
}

/// The condition of a track waiting for a measurement (on alias `t`): what the partial index
/// `tracks_rg_pending` holds, and with audio in storage.
const PENDING: &str = "t.rg_source IS NULL AND t.rg_error IS NULL AND t.availability = 'available'
    AND t.storage_uri <> ''";

#[derive(sqlx::FromRow)]
struct Waiting {
    id: String,
    storage_uri: String,
    content_sha256: Option<String>,
    album_id: Option<String>,
}

impl Media {
    /// How much of the library has ReplayGain.
    pub async fn loudness_status(&self) -> Result<LoudnessStatus> {
        let (from_tags, measured, failed, pending): (i64, i64, i64, i64) = self
            .db
            .sql(&format!(
                "SELECT COALESCE(SUM(CASE WHEN t.rg_source = $1 THEN 1 ELSE 0 END), 0),
                        COALESCE(SUM(CASE WHEN t.rg_source = $2 THEN 1 ELSE 0 END), 0),
                        COALESCE(SUM(CASE WHEN t.rg_source IS NULL AND t.rg_error IS NOT NULL THEN 1 ELSE 0 END), 0),
                        COALESCE(SUM(CASE WHEN {PENDING} THEN 1 ELSE 0 END), 0)
                 FROM tracks t"
            ))
            .bind(writes::GAIN_FROM_TAGS)
            .bind(writes::GAIN_MEASURED)
            .fetch_optional(self.db.pool())
            .await?
            .unwrap_or_default();
        Ok(LoudnessStatus {
            from_tags,
            measured,
            failed,
            pending,
        })
    }

    /// Whether any track waits for a measurement (read from the pending index).
    async fn loudness_pending(&self) -> Result<bool> {
        let found: Option<String> = self
            .db
            .sql(&format!(
                "SELECT t.id FROM tracks t WHERE {PENDING} ORDER BY t.created_at, t.id LIMIT 1"
            ))
            .fetch_scalar_optional(self.db.pool())
            .await?;
        Ok(found.is_some())
    }

    /// One `loudness_sweep` now: queues `analyze_loudness` when tracks wait and no import
    /// does.
    #[cfg(feature = "test-support")]
    pub async fn sweep_loudness(&self) -> Result<()> {
        sweep(self).await
    }

    /// Measures up to `limit` tracks waiting for a measurement (what the `analyze_loudness`
    /// job runs, without its yielding to imports), then their albums' gains.
    pub async fn measure_loudness(&self, limit: usize) -> Result<LoudnessReport> {
        self.measure_pending(limit, || async { false }).await
    }

    /// Measures up to `limit` waiting tracks, oldest first, asking `should_yield` before
    /// each; then recomputes the album gain of every album a measured track is on.
    async fn measure_pending<F, Fut>(&self, limit: usize, should_yield: F) -> Result<LoudnessReport>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = bool>,
    {
        let mut report = LoudnessReport::default();
        let waiting: Vec<Waiting> = self
            .db
            .sql(&format!(
                "SELECT t.id, t.storage_uri, t.content_sha256, t.album_id FROM tracks t
                 WHERE {PENDING} ORDER BY t.created_at, t.id LIMIT {limit}"
            ))
            .fetch_all(self.db.pool())
            .await?;
        let mut albums = BTreeSet::new();
        for track in waiting {
            if should_yield().await {
                report.yielded = true;
                break;
            }
            let id = TrackId::from_db(track.id);
            let outcome = match self.storage.local_file(&track.storage_uri).await {
                Ok(file) => {
                    let _slot = self.cpu.acquire().await;
                    // The metering beside the decoding when a second slot is free.
                    let beside = self.cpu.try_acquire();
                    let path = file.path.clone();
                    let two = beside.is_some();
                    tokio::task::spawn_blocking(move || {
                        if two {
                            measure_file_beside(&path)
                        } else {
                            measure_file(&path)
                        }
                    })
                    .await
                    .unwrap_or_else(|error| Err(format!("the measurement stopped: {error}")))
                }
                Err(error) => Err(crate::error_chain(&error)),
            };
            match outcome {
                Ok(measurement) => {
                    if self
                        .record_measurement(&id, track.content_sha256.as_deref(), &measurement)
                        .await?
                    {
                        report.measured += 1;
                        albums.extend(track.album_id);
                    }
                }
                Err(reason) => {
                    tracing::info!(track_id = %id, %reason, "cannot measure the loudness of a track");
                    writes::gain_unmeasurable(&self.db, &id, &reason).await?;
                    report.failed += 1;
                }
            }
        }
        for album in albums {
            if self.measure_album(&AlbumId::from_db(album)).await? {
                report.albums += 1;
            }
        }
        Ok(report)
    }

    /// Stores a track's measurement: its blocks, and its gains unless its tags have some by
    /// now or its file changed meanwhile. Returns whether the track took them.
    async fn record_measurement(
        &self,
        id: &TrackId,
        sha256: Option<&str>,
        measurement: &Measurement,
    ) -> Result<bool> {
        let db = &self.db;
        let peak = rounded_peak(measurement.peak);
        let mut tx = db.begin().await?;
        let took =
            writes::set_measured_gain(db, &mut tx, id, sha256, measurement.gain(), peak).await?;
        if took {
            db.sql(
                "INSERT INTO track_loudness (track_id, content_sha256, loudness, peak, blocks, measured_at)
                 VALUES ($1, $2, $3, $4, $5, {now})
                 ON CONFLICT (track_id) DO UPDATE SET content_sha256 = excluded.content_sha256,
                   loudness = excluded.loudness, peak = excluded.peak, blocks = excluded.blocks,
                   measured_at = excluded.measured_at",
            )
            .bind(id)
            .bind(sha256)
            .bind(measurement.loudness)
            .bind(peak)
            .bind(measurement.blocks.to_text())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(took)
    }

    /// Computes an album's gain and peak from its tracks' stored blocks and sets them on its
    /// tracks, once every playable track of it has measured gains or cannot be measured (none
    /// waits, none has gains from tags). Returns whether it did.
    async fn measure_album(&self, album: &AlbumId) -> Result<bool> {
        let db = &self.db;
        let members: Vec<AlbumMember> = db
            .sql(
                "SELECT t.id, t.rg_source, t.rg_error, t.content_sha256, l.content_sha256 AS measured_sha256,
                        l.blocks, l.peak
                 FROM tracks t LEFT JOIN track_loudness l ON l.track_id = t.id
                 WHERE t.album_id = $1 AND t.availability = 'available'",
            )
            .bind(album)
            .fetch_all(db.pool())
            .await?;
        let mut measured = Vec::new();
        let mut blocks = Vec::new();
        let mut peak: f64 = 0.0;
        for member in &members {
            match member.rg_source.as_deref() {
                Some(writes::GAIN_MEASURED) => {
                    let current = member.measured_sha256 == member.content_sha256;
                    let Some(found) = member
                        .blocks
                        .as_deref()
                        .filter(|_| current)
                        .and_then(Blocks::from_text)
                    else {
                        return Ok(false);
                    };
                    blocks.push(found);
                    peak = peak.max(member.peak.unwrap_or(0.0));
                    measured.push(member.id.as_str());
                }
                // Cannot be measured: left out.
                None if member.rg_error.is_some() => {}
                // Waits for its measurement, or has gains from its tags.
                _ => return Ok(false),
            }
        }
        let Some(loudness) = album_loudness(&blocks) else {
            return Ok(false);
        };
        let mut tx = db.begin().await?;
        writes::set_measured_album_gain(db, &mut tx, &measured, gain_of(loudness), peak).await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// A track of an album, as its album gain is computed from it.
#[derive(sqlx::FromRow)]
struct AlbumMember {
    id: String,
    rg_source: Option<String>,
    rg_error: Option<String>,
    content_sha256: Option<String>,
    measured_sha256: Option<String>,
    blocks: Option<String>,
    peak: Option<f64>,
}

/// The `analyze_loudness` job: measures tracks without ReplayGain until none is left or
/// imports are waiting (one live job at a time).
#[derive(Debug)]
pub struct AnalyzeLoudness;

/// The job's payload (nothing to say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalyzeLoudnessPayload {}

impl JobKind for AnalyzeLoudness {
    const NAME: &'static str = "analyze_loudness";
    const POOL: Pool = Pool::General;
    type Payload = AnalyzeLoudnessPayload;
    type Service = Media;

    fn dedup_key(_payload: &AnalyzeLoudnessPayload) -> Option<String> {
        Some(Self::NAME.to_string())
    }

    async fn run(
        media: &Media,
        context: &JobContext,
        _payload: AnalyzeLoudnessPayload,
    ) -> std::result::Result<Value, JobError> {
        let jobs = media.jobs.clone();
        let mut total = LoudnessReport::default();
        loop {
            let report = media
                .measure_pending(BATCH, || jobs.imports_waiting())
                .await?;
            total.measured += report.measured;
            total.failed += report.failed;
            total.albums += report.albums;
            total.yielded = report.yielded;
            context
                .progress(&serde_json::json!({
                    "measured": total.measured, "failed": total.failed, "albums": total.albums
                }))
                .await;
            if report.yielded || report.measured + report.failed == 0 {
                break;
            }
        }
        Ok(serde_json::to_value(total).unwrap_or_default())
    }
}

/// One sweep: queues `analyze_loudness` when tracks wait and no import does.
pub(crate) async fn sweep(media: &Media) -> Result<()> {
    if media.loudness_analysis
        && !media.jobs.imports_waiting().await
        && media.loudness_pending().await?
    {
        media
            .jobs
            .enqueue::<AnalyzeLoudness>(&AnalyzeLoudnessPayload::default(), None)
            .await?;
    }
    Ok(())
}

/// Sweeps every `interval` until `shutdown` resolves.
pub(crate) async fn sweep_forever(
    media: Media,
    interval: std::time::Duration,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        if let Err(error) = sweep(&media).await {
            tracing::warn!(error = %crate::error_chain(&error), "cannot look for tracks to measure");
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
