//! Test support (feature `test-support`): a [`TestLibrary`] on a fresh database and blob
//! store per test, on SQLite + local disk or on PostgreSQL + S3.
//!
//! The PostgreSQL + S3 pairing is chosen by the test (see [`Backend`]) and needs
//! `MUSICLIB_TEST_POSTGRES_URL` (an admin URL: a database is created per test) and
//! `MUSICLIB_TEST_S3_ENDPOINT` (an S3-compatible server with bucket `MUSICLIB_TEST_S3_BUCKET`,
//! default `musiclib-test`), which the README's test command starts.

mod acoustid_mock;
pub use acoustid_mock::RateLimitedAcoustId;

use std::sync::Arc;

use crate::blobs::BlobStore;
use crate::config::{S3Config, StorageConfig};
use crate::db::Db;
use crate::jobs::{JobQueue, SqlQueue};
use crate::{Config, Library};

/// Which engines a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite file + local disk: the embedded default.
    Embedded,
    /// PostgreSQL + S3-compatible store: scale-out.
    ScaleOut,
}

/// A library for one test, with its own scratch directory (removed on drop).
pub struct TestLibrary {
    /// The library.
    pub library: Library,
    /// The scratch directory (`data_dir`).
    pub dir: tempfile::TempDir,
    /// Engines in use.
    pub backend: Backend,
}

impl std::ops::Deref for TestLibrary {
    type Target = Library;
    fn deref(&self) -> &Library {
        &self.library
    }
}

/// The scale-out services, when configured. Under `CI=true` they must be.
pub fn scale_out_available() -> bool {
    let available = std::env::var("MUSICLIB_TEST_POSTGRES_URL").is_ok()
        && std::env::var("MUSICLIB_TEST_S3_ENDPOINT").is_ok();
    if !available && std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI=true but MUSICLIB_TEST_POSTGRES_URL / MUSICLIB_TEST_S3_ENDPOINT are not set: run the README test command");
    }
    if !available {
        eprintln!(
            "note: PostgreSQL/S3 not configured; the scale-out variant of this test did not run"
        );
    }
    available
}

/// Builds a [`TestLibrary`].
pub struct TestLibraryBuilder {
    backend: Backend,
    configure: Vec<Box<dyn FnOnce(&mut Config) + Send>>,
    queue: Option<Box<dyn FnOnce(Db) -> Arc<dyn JobQueue> + Send>>,
}

impl TestLibrary {
    /// A builder for `backend`.
    pub fn builder(backend: Backend) -> TestLibraryBuilder {
        TestLibraryBuilder {
            backend,
            configure: Vec::new(),
            queue: None,
        }
    }

    /// A default library on `backend`.
    pub async fn new(backend: Backend) -> TestLibrary {
        TestLibrary::builder(backend).build().await
    }
}

impl TestLibraryBuilder {
    /// Adjusts the config before opening.
    pub fn config(mut self, change: impl FnOnce(&mut Config) + Send + 'static) -> Self {
        self.configure.push(Box::new(change));
        self
    }

    /// Replaces the job queue.
    pub fn queue(mut self, make: impl FnOnce(Db) -> Arc<dyn JobQueue> + Send + 'static) -> Self {
        self.queue = Some(Box::new(make));
        self
    }

    /// Opens the library.
    pub async fn build(self) -> TestLibrary {
        let dir = tempfile::Builder::new()
            .prefix("musiclib-test-")
            .tempdir()
            .expect("scratch dir");
        let mut config = Config::embedded(dir.path());
        // Fast retries so tests can watch them.
        config.jobs.retry_base = std::time::Duration::from_millis(10);
        config.jobs.retry_max = std::time::Duration::from_millis(100);
        if self.backend == Backend::ScaleOut {
            config.database_url = create_postgres_database().await;
            config.storage = StorageConfig::S3(test_s3_config());
        }
        for change in self.configure {
            change(&mut config);
        }
        let db = Db::connect(&config.database_url)
            .await
            .expect("connect test database");
        db.migrate().await.expect("migrate test database");
        let blobs = BlobStore::open(&config.storage).expect("open test blob store");
        let queue = match self.queue {
            Some(make) => make(db.clone()),
            None => Arc::new(SqlQueue::new(db.clone(), config.jobs.max_attempts)),
        };
        let library = Library::from_parts(config, db, blobs, queue).expect("open test library");
        TestLibrary {
            library,
            dir,
            backend: self.backend,
        }
    }
}

/// S3 settings of the test server, with a fresh key prefix per call.
pub fn test_s3_config() -> S3Config {
    S3Config {
        bucket: std::env::var("MUSICLIB_TEST_S3_BUCKET").unwrap_or_else(|_| "musiclib-test".into()),
        endpoint: Some(
            std::env::var("MUSICLIB_TEST_S3_ENDPOINT").expect("MUSICLIB_TEST_S3_ENDPOINT"),
        ),
        region: "us-east-1".into(),
        access_key_id: Some("test".into()),
        secret_access_key: Some("test".into()),
        allow_http: true,
        prefix: Some(format!("t-{}", uuid::Uuid::new_v4().simple())),
    }
}

/// Creates a fresh database on the test PostgreSQL server and returns its URL.
pub async fn create_postgres_database() -> String {
    let admin_url =
        std::env::var("MUSICLIB_TEST_POSTGRES_URL").expect("MUSICLIB_TEST_POSTGRES_URL");
    let name = format!("musiclib_test_{}", uuid::Uuid::new_v4().simple());
    let admin = Db::connect(&admin_url)
        .await
        .expect("connect to the test PostgreSQL server");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(admin.pool())
        .await
        .expect("create test database");
    admin.close().await;
    let base = match admin_url.rfind('/') {
        Some(slash) if slash > "postgres://".len() => &admin_url[..slash],
        _ => admin_url.as_str(),
    };
    format!("{base}/{name}")
}

/// A queue that is always down, to test how callers answer when enqueueing fails.
#[derive(Debug)]
pub struct UnavailableQueue;

#[async_trait::async_trait]
impl JobQueue for UnavailableQueue {
    async fn enqueue(&self, _job: crate::jobs::NewJob) -> crate::Result<crate::JobId> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn enqueue_many(&self, _jobs: Vec<crate::jobs::NewJob>) -> crate::Result<()> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn claim_of(
        &self,
        _worker_id: &str,
        _lease: std::time::Duration,
        _kinds: &[&'static str],
    ) -> crate::Result<Option<crate::jobs::Job>> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn heartbeat(
        &self,
        _id: &crate::JobId,
        _worker_id: &str,
        _lease: std::time::Duration,
        _progress: Option<&serde_json::Value>,
    ) -> crate::Result<bool> {
        Ok(false)
    }
    async fn complete(
        &self,
        _id: &crate::JobId,
        _worker_id: &str,
        _result: &serde_json::Value,
    ) -> crate::Result<()> {
        Ok(())
    }
    async fn fail(
        &self,
        _id: &crate::JobId,
        _worker_id: &str,
        _error: &str,
        _retry_in: Option<std::time::Duration>,
    ) -> crate::Result<()> {
        Ok(())
    }
    async fn get(&self, id: &crate::JobId) -> crate::Result<crate::jobs::Job> {
        Err(crate::Error::not_found("job", id))
    }
}

/// Runs queued jobs in this task until none is ready.
pub async fn drain_jobs(library: &Library) -> usize {
    let worker = crate::jobs::Worker::new(library.clone(), "test");
    let mut ran = 0;
    while let crate::jobs::Outcome::Ran(_) = worker.run_once().await.expect("run job") {
        ran += 1;
    }
    ran
}

/// Runs queued jobs with `concurrency` workers at once until none is ready (and none of
/// the workers is busy), as a server's worker pool would: concurrent enrichment jobs share
/// AcoustID batches.
pub async fn drain_jobs_concurrently(library: &Library, concurrency: usize) -> usize {
    let mut tasks = Vec::new();
    for index in 0..concurrency {
        let worker = crate::jobs::Worker::new(library.clone(), &format!("test{index}"));
        tasks.push(tokio::spawn(async move {
            let mut ran = 0;
            let mut idle_rounds = 0;
            // Keep polling a little after going idle: a job may still be running elsewhere
            // and enqueue more.
            while idle_rounds < 3 {
                match worker.run_once().await.expect("run job") {
                    crate::jobs::Outcome::Ran(_) => {
                        ran += 1;
                        idle_rounds = 0;
                    }
                    crate::jobs::Outcome::Empty => {
                        idle_rounds += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
            ran
        }));
    }
    let mut ran = 0;
    for task in tasks {
        ran += task.await.expect("worker task");
    }
    ran
}

/// Turns a track into a placeholder without audio, as saving a remote search hit creates.
pub async fn make_placeholder(library: &Library, id: &crate::TrackId) {
    sqlx::query("UPDATE tracks SET availability = 'placeholder', storage_uri = '' WHERE id = $1")
        .bind(id.as_str())
        .execute(library.db().pool())
        .await
        .expect("make the track a placeholder");
    library.audio_cache().remove(id);
}

/// The generated test corpus (`shared/corpus/make-corpus.sh`), from `MUSICLIB_TEST_CORPUS`.
pub fn corpus_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("MUSICLIB_TEST_CORPUS").map(std::path::PathBuf::from)?;
    if dir.join("manifest.json").is_file() {
        Some(dir)
    } else {
        None
    }
}

/// Inserts `count` synthetic tracks (no audio) in batches: `albums` albums per artist, ten
/// tracks per album. For benchmarks of catalogue queries on large libraries.
pub async fn insert_synthetic_tracks(library: &Library, count: usize) {
    use crate::catalog::Resolver;
    use crate::domain::Source;
    use crate::ingest::{AudioFacts, EmbeddedTags, NewTrack};
    let db = library.db();
    for start in (0..count).step_by(1000) {
        let mut tx = db.begin().await.expect("begin");
        let mut resolver = Resolver::new(db.clone());
        for index in start..(start + 1000).min(count) {
            let artist = format!("Artist {} Ñandú", index / 100);
            let album = format!("Album {} of {}", (index / 10) % 10, artist);
            let tags = EmbeddedTags {
                title: Some(format!("Track {index} Mañana {}", index % 97)),
                artist: Some(artist.clone()),
                album: Some(album),
                year: Some(1970 + (index % 50) as i64),
                track_number: Some((index % 10 + 1) as i64),
                ..Default::default()
            };
            let track = NewTrack {
                id: crate::TrackId::new(),
                facts: AudioFacts {
                    format: "mp3",
                    mime_type: "audio/mpeg",
                    duration_ms: 180_000,
                    bitrate_kbps: Some(320),
                    sample_rate: Some(44100),
                    channels: Some(2),
                    tags,
                    has_embedded_cover: false,
                },
                storage_uri: String::new(),
                source: Source::Remote,
                source_id: format!("synthetic-{index}"),
                size_bytes: 0,
                sha256: String::new(),
                mtime: None,
                added_by: None,
                fallback_title: String::new(),
            };
            crate::ingest::insert_track(&mut tx, db, &mut resolver, &track)
                .await
                .expect("insert");
        }
        tx.commit().await.expect("commit");
    }
}

/// Every user's stored app password columns (`legacy_password_enc`, `legacy_key_digest`),
/// for tests that check nothing is kept in clear.
pub async fn legacy_password_columns(library: &Library) -> Vec<(Option<String>, Option<String>)> {
    sqlx::query_as("SELECT legacy_password_enc, legacy_key_digest FROM users ORDER BY id")
        .fetch_all(library.db().pool())
        .await
        .expect("read users")
}
