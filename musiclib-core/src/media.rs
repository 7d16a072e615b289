//! Media: everything served as bytes rather than JSON.
//!
//! - `audio`: a track's original audio ([`TrackAudio`]) as byte ranges, from disk or S3.
//! - [`renditions`]: cached Opus renditions (the `transcode_track` job) and live transcodes.
//! - [`hls`]: the segmented HLS rendition, encoded ahead of the player.
//! - [`covers`]: album covers, thumbnails and the placeholder image.
//! - [`decision`]: transcode decisions from a client's profiles (OpenSubsonic `transcoding`)
//!   and the live encodes they lead to (Opus, MP3, AAC).
//! - `transcoder`: ffmpeg, the one outside program media runs.
//! - [`loudness`]: ReplayGain measured where tags have none (the `analyze_loudness` job and
//!   the `loudness_sweep` that queues it).
//!
//! Range requests, validators and status codes are the adapters' (musiclib-media-http); this
//! service answers "what are these bytes" and "give me these bytes of them".

mod audio;
pub mod covers;
pub mod decision;
pub mod hls;
pub mod loudness;
mod open;
pub mod renditions;
mod transcoder;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use audio::TrackAudio;
pub use covers::{placeholder_cover, Cover, THUMBNAIL_SIZES};
pub use loudness::{AnalyzeLoudness, LoudnessReport, LoudnessStatus};
pub use open::{Delivery, Encoding, Want};
pub use renditions::{Quality, TranscodeTrack};

pub(crate) use transcoder::Transcoder;

use crate::cache::TtlCache;
use crate::catalog::Catalog;
use crate::cpu::CpuSlots;
use crate::db::{Db, Tx};
use crate::jobs::{Jobs, Registry};
use crate::storage::Storage;
use crate::{Result, TrackId};

/// How long a stream request may reuse a track's audio row read by an earlier one. Deleting
/// the track in this process forgets it at once; other replicas within this time.
const LOOKUP_TTL: Duration = Duration::from_secs(5);

/// The media service.
#[derive(Clone, Debug)]
pub struct Media {
    db: Db,
    storage: Storage,
    jobs: Jobs,
    catalog: Catalog,
    transcoder: Transcoder,
    /// Bound on the total size of cached renditions (`RENDITION_CACHE_MAX_BYTES`).
    cache_max_bytes: u64,
    /// Bound on the total size of cached thumbnails (`THUMBNAIL_CACHE_MAX_BYTES`).
    thumbnail_cache_max_bytes: u64,
    /// CPU slots, for scaling covers and measuring loudness.
    cpu: CpuSlots,
    /// Whether tracks without ReplayGain tags are measured (`LOUDNESS_ANALYSIS`).
    loudness_analysis: bool,
    state: Arc<MediaState>,
}

/// What media keeps in this process.
#[derive(Debug)]
struct MediaState {
    /// Audio rows of recently streamed tracks (see [`Media::track_audio`]).
    audio: TtlCache<TrackId, TrackAudio>,
    /// When this process last stamped each rendition's access (see
    /// [`Media::should_stamp_access`]).
    access_stamps: Mutex<HashMap<String, Instant>>,
    /// HLS encodes running in this process, by track.
    live_encodes: hls::LiveEncodes,
    /// Thumbnails being made, by key: one build per thumbnail however many ask.
    thumbnail_builds: crate::cache::KeyedLocks<String>,
    /// The bound on live encodes (`MAX_LIVE_ENCODES`, `MAX_LIVE_ENCODES_PER_USER`).
    live_budget: Arc<transcoder::LiveEncodeBudget>,
}

impl Media {
    /// Registers the renditions' and the loudness measurement's job kinds, and the sweep
    /// that queues the measurement (as often as the recommendations' sweep).
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<TranscodeTrack>(self.clone(), config);
        registry.kind::<AnalyzeLoudness>(self.clone(), config);
        let media = self.clone();
        let interval = config.recommend.sweep_interval;
        registry.periodic("loudness_sweep", move |shutdown| {
            loudness::sweep_forever(media.clone(), interval, shutdown)
        });
    }

    pub(crate) fn new(
        db: Db,
        storage: Storage,
        jobs: Jobs,
        catalog: Catalog,
        transcoder: Transcoder,
        config: &crate::config::TranscodeConfig,
        cpu: CpuSlots,
    ) -> Media {
        Media {
            db,
            storage,
            jobs,
            catalog,
            transcoder,
            cache_max_bytes: config.rendition_cache_max_bytes,
            thumbnail_cache_max_bytes: config.thumbnail_cache_max_bytes,
            cpu,
            loudness_analysis: config.loudness_analysis,
            state: Arc::new(MediaState {
                audio: TtlCache::new("track_audio", LOOKUP_TTL, 10_000),
                access_stamps: Mutex::new(HashMap::new()),
                live_encodes: Default::default(),
                thumbnail_builds: Default::default(),
                live_budget: transcoder::LiveEncodeBudget::new(
                    config.max_live_encodes,
                    config.max_live_encodes_per_user,
                ),
            }),
        }
    }

    /// Live encodes (transcoded streams, HLS encodes for listeners) running in this process.
    pub fn live_encodes(&self) -> usize {
        self.state.live_budget.running()
    }

    /// Whether ffmpeg (the transcoder) can be run: checked once per process. Originals
    /// stream without it; renditions and HLS need it.
    pub fn transcoder_available(&self) -> bool {
        self.transcoder.available()
    }

    /// [`Media::transcoder_available`] for async callers: the first check runs ffmpeg on the
    /// blocking pool, not on a request's thread.
    pub async fn transcoder_ready(&self) -> bool {
        self.transcoder.ready().await
    }

    /// Decodes a whole file with ffmpeg: `None` when it decodes cleanly, else ffmpeg's
    /// complaint. Unavailable without ffmpeg.
    pub(crate) async fn decode_check(&self, path: &std::path::Path) -> Result<Option<String>> {
        self.transcoder.decode_check(path).await
    }

    /// The media part of deleting a track, inside the deletion's transaction: its rendition
    /// rows. Returns their blob keys, to delete after commit.
    pub(crate) async fn delete_renditions(&self, tx: &mut Tx, id: &TrackId) -> Result<Vec<String>> {
        let keys: Vec<String> = self
            .db
            .sql("SELECT storage_uri FROM renditions WHERE track_id = $1")
            .bind(id)
            .fetch_scalars(&mut **tx)
            .await?;
        self.db
            .sql("DELETE FROM renditions WHERE track_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        Ok(keys)
    }

    /// Forgets what this process cached of a track (after it is deleted or changed).
    pub(crate) fn forget_track(&self, id: &TrackId) {
        self.state.audio.remove(id);
    }

    /// Whether a rendition's `last_access_at` should be written now: at most once a minute
    /// per rendition and process, so a player's stream of range requests costs one write,
    /// not one per request. LRU eviction needs no finer clock than that.
    fn should_stamp_access(&self, rendition_id: &str) -> bool {
        const EVERY: Duration = Duration::from_secs(60);
        let now = Instant::now();
        let mut stamps = self.state.access_stamps.lock().expect("not poisoned");
        if stamps
            .get(rendition_id)
            .is_some_and(|at| now.duration_since(*at) < EVERY)
        {
            return false;
        }
        if stamps.len() >= 4096 {
            stamps.retain(|_, at| now.duration_since(*at) < EVERY);
        }
        stamps.insert(rendition_id.to_string(), now);
        true
    }

    /// Stamps a rendition's last access for the LRU, at most once a minute per process.
    async fn stamp_rendition_access(&self, rendition: &str) {
        if !self.should_stamp_access(rendition) {
            return;
        }
        let stamped = self
            .db
            .sql("UPDATE renditions SET last_access_at = {now} WHERE id = $1")
            .bind(rendition)
            .execute(self.db.pool())
            .await;
        if let Err(error) = stamped {
            tracing::warn!(error = %crate::error_chain(&error), "could not stamp a rendition's access");
        }
    }
}
