//! [`Library`]: the one cheap, cloneable handle that adapters and embedding programs hold.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio::sync::{Notify, Semaphore};

use crate::blobs::{BlobStore, StorageKind};
use crate::db::{Backend, Db};
use crate::enrichment::{acoustid, coverart};
use crate::jobs::{JobQueue, SqlQueue};
use crate::{Config, Error, Result};

/// The music library: every service of musiclib behind one handle. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Library {
    inner: Arc<Inner>,
}

/// How long a stream request may reuse an account or audio row read by an earlier one.
/// Changes made in this process apply at once; other replicas see them within this time.
const LOOKUP_TTL: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug)]
struct Inner {
    config: Config,
    db: Db,
    blobs: BlobStore,
    queue: Arc<dyn JobQueue>,
    /// Wakes this process's idle workers after an in-process enqueue.
    wake: Notify,
    staging_dir: PathBuf,
    /// Bounds CPU-heavy work (decoding, fingerprinting) to the machine's cores, however many
    /// jobs run at once.
    cpu_slots: Semaphore,
    /// HTTP client for the public web services (built on first use).
    http: OnceLock<reqwest::Client>,
    /// The batching AcoustID lookup queue (started on first use; `None` without an API key).
    lookups: OnceLock<Option<acoustid::Lookups>>,
    /// The Cover Art Archive client (built on first use).
    cover_archive: OnceLock<coverart::Client>,
    /// Whether ffmpeg runs (checked on first use).
    transcoder: OnceLock<bool>,
    /// When this process last stamped each rendition's access (see
    /// [`Library::should_stamp_access`]).
    access_stamps: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// HLS encodes running in this process, by track.
    live_encodes: crate::hls::LiveEncodes,
    /// Accounts of recent tokens (see [`Library::authenticate`]).
    users: crate::cache::TtlCache<crate::UserId, crate::auth::User>,
    /// Legacy-interface accounts with their app passwords, by name or key digest.
    legacy: crate::cache::TtlCache<String, crate::auth::legacy::LegacyAccount>,
    /// Audio rows of recently streamed tracks (see [`Library::track_audio`]).
    audio: crate::cache::TtlCache<crate::TrackId, crate::streaming::TrackAudio>,
}

/// Health of the library's dependencies (`GET /health`).
#[derive(Debug, Clone)]
pub struct Health {
    /// Whether the database answered.
    pub database_ok: bool,
    /// Database engine.
    pub database_backend: Backend,
    /// Storage backend.
    pub storage_backend: StorageKind,
    /// Whether ffmpeg runs (renditions; originals stream without it).
    pub transcoder_available: bool,
}

impl Library {
    /// Connects to the database, applies migrations and opens the blob store.
    ///
    /// Migrating on open is safe with several replicas: sqlx takes a lock around migrations.
    pub async fn open(config: Config) -> Result<Library> {
        let db = Db::connect(&config.database_url).await?;
        db.migrate().await?;
        let blobs = BlobStore::open(&config.storage)?;
        let queue = Arc::new(SqlQueue::new(db.clone(), config.jobs.max_attempts));
        Library::from_parts(config, db, blobs, queue)
    }

    /// Assembles a library from parts (tests substitute the queue).
    pub fn from_parts(
        config: Config,
        db: Db,
        blobs: BlobStore,
        queue: Arc<dyn JobQueue>,
    ) -> Result<Library> {
        let staging_dir = config.data_dir.join("tmp");
        std::fs::create_dir_all(&staging_dir).map_err(|error| Error::io(&staging_dir, error))?;
        Ok(Library {
            inner: Arc::new(Inner {
                config,
                db,
                blobs,
                queue,
                wake: Notify::new(),
                staging_dir,
                cpu_slots: Semaphore::new(
                    std::thread::available_parallelism().map_or(2, |cores| cores.get()),
                ),
                http: OnceLock::new(),
                lookups: OnceLock::new(),
                cover_archive: OnceLock::new(),
                transcoder: OnceLock::new(),
                access_stamps: Default::default(),
                live_encodes: Default::default(),
                users: crate::cache::TtlCache::new(LOOKUP_TTL, 10_000),
                audio: crate::cache::TtlCache::new(LOOKUP_TTL, 10_000),
                legacy: crate::cache::TtlCache::new(LOOKUP_TTL, 10_000),
            }),
        })
    }

    /// Accounts of recently verified tokens.
    pub(crate) fn user_cache(&self) -> &crate::cache::TtlCache<crate::UserId, crate::auth::User> {
        &self.inner.users
    }

    /// Legacy-interface accounts of recent requests.
    pub(crate) fn legacy_cache(
        &self,
    ) -> &crate::cache::TtlCache<String, crate::auth::legacy::LegacyAccount> {
        &self.inner.legacy
    }

    /// Audio rows of recently streamed tracks.
    pub(crate) fn audio_cache(
        &self,
    ) -> &crate::cache::TtlCache<crate::TrackId, crate::streaming::TrackAudio> {
        &self.inner.audio
    }

    /// The HLS encodes running in this process.
    pub(crate) fn inner_live_encodes(&self) -> &crate::hls::LiveEncodes {
        &self.inner.live_encodes
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    /// The blob store.
    pub fn blobs(&self) -> &BlobStore {
        &self.inner.blobs
    }

    /// The job queue.
    pub fn queue(&self) -> &Arc<dyn JobQueue> {
        &self.inner.queue
    }

    /// Directory for temporary files of uploads (same machine, not necessarily same disk as blobs).
    pub fn staging_dir(&self) -> &Path {
        &self.inner.staging_dir
    }

    /// Waits for a slot for CPU-heavy work.
    pub(crate) async fn cpu_slot(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.inner
            .cpu_slots
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    fn http(&self) -> &reqwest::Client {
        self.inner.http.get_or_init(|| {
            reqwest::Client::builder()
                .user_agent(concat!(
                    "musiclib/",
                    env!("CARGO_PKG_VERSION"),
                    " (self-hosted music library server)"
                ))
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()
                .expect("a TLS backend is compiled in")
        })
    }

    /// The AcoustID lookup queue, or `None` when no API key is configured. Must be called
    /// inside a tokio runtime (it starts the batching task).
    pub(crate) fn lookups(&self) -> Option<&acoustid::Lookups> {
        self.inner
            .lookups
            .get_or_init(|| {
                let enrichment = &self.config().enrichment;
                let api_key = enrichment.acoustid_api_key.clone()?;
                let client = acoustid::Client::new(
                    self.http().clone(),
                    acoustid::ClientConfig {
                        base_url: enrichment.acoustid_base_url.clone(),
                        api_key,
                        requests_per_second: enrichment.acoustid_requests_per_second,
                        attempts: 4,
                        retry_base: enrichment.acoustid_retry_base,
                        timeout: std::time::Duration::from_secs(20),
                    },
                );
                Some(acoustid::Lookups::start(client))
            })
            .as_ref()
    }

    /// The Cover Art Archive client.
    pub(crate) fn cover_archive(&self) -> &coverart::Client {
        self.inner.cover_archive.get_or_init(|| {
            coverart::Client::new(
                self.http().clone(),
                &self.config().enrichment.coverart_base_url,
            )
        })
    }

    pub(crate) fn transcoder_check(&self) -> &OnceLock<bool> {
        &self.inner.transcoder
    }

    /// Whether a rendition's `last_access_at` should be written now: at most once a minute
    /// per rendition and process, so a player's stream of range requests costs one write,
    /// not one per request. LRU eviction needs no finer clock than that.
    pub(crate) fn should_stamp_access(&self, rendition_id: &str) -> bool {
        const EVERY: std::time::Duration = std::time::Duration::from_secs(60);
        let now = std::time::Instant::now();
        let mut stamps = self.inner.access_stamps.lock().expect("not poisoned");
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

    pub(crate) fn wake_workers(&self) {
        self.inner.wake.notify_waiters();
    }

    pub(crate) async fn workers_woken(&self) {
        self.inner.wake.notified().await
    }

    /// Checks the dependencies.
    pub async fn health(&self) -> Health {
        Health {
            database_ok: self.db().ping().await.is_ok(),
            database_backend: self.db().backend(),
            storage_backend: self.blobs().kind(),
            transcoder_available: self.transcoder_ready().await,
        }
    }
}
