//! Test support (feature `test-support`): a [`TestLibrary`] on a fresh database and blob
//! store per test, on SQLite + local disk or on PostgreSQL + S3.
//!
//! The PostgreSQL + S3 pairing is chosen by the test (see [`Backend`]) and needs
//! `MUSICLIB_TEST_POSTGRES_URL` (an admin URL: a database is created per test) and
//! `MUSICLIB_TEST_S3_ENDPOINT` (an S3-compatible server with bucket `MUSICLIB_TEST_S3_BUCKET`,
//! default `musiclib-test`), which the README's test command starts.

mod acoustid_mock;
mod media_server;
mod subsonic_mock;
pub use acoustid_mock::RateLimitedAcoustId;
pub use media_server::MediaServer;
pub use subsonic_mock::{subsonic_failed, subsonic_ok, subsonic_server, subsonic_song};

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::config::{S3Config, StorageConfig};
use crate::db::Db;
use crate::jobs::{Job, JobQueue, NewJob, SqlQueue};
use crate::{Config, JobId, Library};

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

/// The value of a variable the README test command sets; a test that needs it fails with a
/// message saying so. (Tests that need these services are `#[ignore]`d outside the test
/// command: see `build-support/test_services.rs`.)
pub fn service_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: this test needs the services the README test command (.ci/test.sh) starts")
    })
}

/// Whether PostgreSQL and S3 are configured. Benchmarks use it to run on what there is;
/// tests need them under the README test command and are ignored outside it instead.
pub fn scale_out_configured() -> bool {
    std::env::var("MUSICLIB_TEST_POSTGRES_URL").is_ok()
        && std::env::var("MUSICLIB_TEST_S3_ENDPOINT").is_ok()
}

/// A change a test makes to the library's configuration before it starts.
type ConfigEdit = Box<dyn FnOnce(&mut Config) + Send>;

/// Builds a [`TestLibrary`].
pub struct TestLibraryBuilder {
    backend: Backend,
    configure: Vec<ConfigEdit>,
    unavailable_queue: bool,
}

impl TestLibrary {
    /// A builder for `backend`.
    pub fn builder(backend: Backend) -> TestLibraryBuilder {
        TestLibraryBuilder {
            backend,
            configure: Vec::new(),
            unavailable_queue: false,
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

    /// Replaces the job queue with one that is always down (every enqueue fails).
    pub fn unavailable_queue(mut self) -> Self {
        self.unavailable_queue = true;
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
        // Orphans a test plants are deleted by the next cleanup (a test sets a grace to see it).
        config.cleanup_grace = std::time::Duration::ZERO;
        // No test reaches a public service by accident: a port nothing listens on.
        config.enrichment.lrclib_base_url = "http://127.0.0.1:9".into();
        config.scrobbling.lastfm_base_url = "http://127.0.0.1:9/2.0/".into();
        config.scrobbling.listenbrainz_base_url = "http://127.0.0.1:9".into();
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
        let queue: Arc<dyn JobQueue> = if self.unavailable_queue {
            Arc::new(UnavailableQueue)
        } else {
            Arc::new(SqlQueue::new(db.clone(), config.jobs.max_attempts))
        };
        let library = Library::assemble(config, db, queue).expect("open test library");
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
        endpoint: Some(service_env("MUSICLIB_TEST_S3_ENDPOINT")),
        region: "us-east-1".into(),
        access_key_id: Some("test".into()),
        secret_access_key: Some("test".into()),
        allow_http: true,
        prefix: Some(format!("t-{}", uuid::Uuid::new_v4().simple())),
    }
}

/// Creates a fresh database on the test PostgreSQL server and returns its URL.
///
/// Its name carries the test process's id: a test's library has no async hook to drop its
/// database when it ends, so the first database a process creates on a loopback server
/// also starts dropping those of test processes that have ended ([`drop_abandoned_databases`]).
pub async fn create_postgres_database() -> String {
    static SWEEP: std::sync::Once = std::sync::Once::new();
    let admin_url = service_env("MUSICLIB_TEST_POSTGRES_URL");
    let name = format!(
        "musiclib_test_{}_{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let admin = Db::connect(&admin_url)
        .await
        .expect("connect to the test PostgreSQL server");
    SWEEP.call_once(|| {
        // On a thread of its own, so no test waits for it.
        let admin_url = admin_url.clone();
        std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                runtime.block_on(drop_abandoned_databases(&admin_url));
            }
        });
    });
    admin
        .sql(&format!("CREATE DATABASE {name}"))
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

/// Drops the test databases whose process has ended, when the server is on this machine
/// (loopback or a socket: a process id only means something here) and `/proc` tells which
/// processes run. A database still in use by a live process is never touched.
async fn drop_abandoned_databases(admin_url: &str) {
    let local = admin_url
        .parse::<sqlx::postgres::PgConnectOptions>()
        .is_ok_and(|options| {
            let host = options.get_host();
            host.starts_with('/') || matches!(host, "localhost" | "127.0.0.1" | "::1" | "[::1]")
        });
    let proc = std::path::Path::new("/proc");
    if !local || !proc.join("self").exists() {
        return;
    }
    let Ok(admin) = Db::connect(admin_url).await else {
        return;
    };
    let names: Vec<String> = admin
        .sql("SELECT datname::text FROM pg_database WHERE datname LIKE 'musiclib\\_test\\_%'")
        .fetch_scalars(admin.pool())
        .await
        .unwrap_or_default();
    for name in names {
        let Some(pid) = name
            .strip_prefix("musiclib_test_")
            .and_then(|rest| rest.split_once('_'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !proc.join(pid.to_string()).exists() {
            // Another process may be sweeping the same names: a failure here is theirs.
            let _ = admin
                .sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(admin.pool())
                .await;
        }
    }
    admin.close().await;
}

/// A queue that is always down, to test how callers answer when enqueueing fails.
#[derive(Debug)]
struct UnavailableQueue;

#[async_trait::async_trait]
impl JobQueue for UnavailableQueue {
    async fn counts(&self) -> crate::Result<crate::jobs::JobCounts> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn stats(&self, _kinds: &[&'static str]) -> crate::Result<Vec<crate::jobs::KindStats>> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn enqueue(&self, _job: NewJob) -> crate::Result<crate::JobId> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn enqueue_many(&self, _jobs: Vec<NewJob>) -> crate::Result<()> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn fail_abandoned(&self) -> crate::Result<Vec<crate::jobs::Job>> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
    async fn claim(
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
    async fn holds(&self, _id: &crate::JobId, _worker_id: &str) -> crate::Result<bool> {
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
    async fn latest(&self, _kind: &str) -> crate::Result<Option<crate::jobs::Job>> {
        Err(crate::Error::Unavailable(
            "the job queue is down (test)".into(),
        ))
    }
}

/// Runs queued jobs in this task until none is ready.
pub async fn drain_jobs(library: &Library) -> usize {
    let worker = crate::jobs::Worker::new(library.registry(), "test");
    let mut ran = 0;
    while let crate::jobs::Outcome::Ran(_) = worker.run_once().await.expect("run job") {
        ran += 1;
    }
    ran
}

/// Runs queued jobs with `concurrency` workers at once until the queue has no queued or
/// running job (a job still running elsewhere may enqueue more, and a retry waits for its
/// time), as a server's worker pool would: concurrent enrichment jobs share AcoustID batches.
pub async fn drain_jobs_concurrently(library: &Library, concurrency: usize) -> usize {
    let queue = library.jobs().queue().clone();
    let mut tasks = Vec::new();
    for index in 0..concurrency {
        let worker = crate::jobs::Worker::new(library.registry(), &format!("test{index}"));
        let queue = queue.clone();
        tasks.push(tokio::spawn(async move {
            let mut ran = 0;
            loop {
                match worker.run_once().await.expect("run job") {
                    crate::jobs::Outcome::Ran(_) => ran += 1,
                    crate::jobs::Outcome::Empty => {
                        // Nothing ready for this worker: done once nothing is queued (a
                        // retry waiting for its time counts) and no worker holds a job.
                        let counts = queue.counts().await.expect("count jobs");
                        if counts.queued == 0 && counts.running == 0 {
                            return ran;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                }
            }
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
    let db = library.db();
    crate::catalog::writes::testing::make_placeholder(db, id)
        .await
        .expect("make the track a placeholder");
    library.media().forget_track(id);
}

/// Makes `user` the uploader of every track (synthetic tracks are imports, which have none).
pub async fn set_uploader(library: &Library, user: &crate::UserId) {
    let db = library.db();
    crate::catalog::writes::testing::set_uploader(db, user)
        .await
        .expect("set the uploader");
}

/// The generated test corpus (`shared/corpus/make-corpus.sh`), which the README test command
/// generates and names in `MUSICLIB_TEST_CORPUS`.
pub fn corpus() -> std::path::PathBuf {
    corpus_dir().unwrap_or_else(|| {
        panic!("MUSICLIB_TEST_CORPUS does not name a generated corpus: this test needs the README test command (.ci/test.sh)")
    })
}

/// The generated test corpus, if there is one (benchmarks run without it).
pub fn corpus_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("MUSICLIB_TEST_CORPUS").map(std::path::PathBuf::from)?;
    if dir.join("manifest.json").is_file() {
        Some(dir)
    } else {
        None
    }
}

/// Inserts `count` synthetic tracks (no audio) in batches: a hundred tracks per artist, ten
/// per album. For benchmarks of catalogue queries on large libraries.
pub async fn insert_synthetic_tracks(library: &Library, count: usize) {
    use crate::domain::Source;
    insert_tracks(library, count, |index| {
        let artist = format!("Artist {} Ñandú", index / 100);
        let album = format!("Album {} of {}", (index / 10) % 10, artist);
        let tags = crate::probe::EmbeddedTags {
            title: Some(format!("Track {index} Mañana {}", index % 97)),
            artist: Some(artist.clone()),
            album: Some(album),
            year: Some(1970 + (index % 50) as i64),
            track_number: Some((index % 10 + 1) as i64),
            // Skewed, so the top genres have an order.
            genre: Some(GENRES[(index * index / 7) % GENRES.len()].to_string()),
            ..Default::default()
        };
        (
            tags,
            Source::Remote,
            format!("synthetic-{index}"),
            180_000,
            String::new(),
        )
    })
    .await
}

/// Inserts `count` tracks that read like a folder library (no audio): titles of two to four
/// words drawn from a word list (so any one- or two-letter search finds many, a word a few),
/// ten tracks per album, about ten albums per artist, twelve genres, fifty years, imported
/// from the local folder. Deterministic for a given `seed`. For benchmarks of lists, sorts
/// and searches through the real server (`benches/catalog-load.sh`).
pub async fn insert_library_tracks(library: &Library, count: usize, seed: u64) {
    use crate::domain::Source;
    const WORDS: [&str; 48] = [
        "love", "night", "heart", "blue", "river", "fire", "dream", "rain", "summer", "road",
        "light", "shadow", "song", "moon", "city", "golden", "wild", "silver", "ocean", "storm",
        "dance", "home", "broken", "morning", "star", "winter", "echo", "garden", "mañana",
        "corazón", "nuit", "zeit", "sky", "alone", "young", "electric", "paradise", "ghost",
        "velvet", "highway", "quiet", "sugar", "thunder", "paper", "island", "kiss", "forever",
        "jazz",
    ];
    let mix = |value: u64| {
        // splitmix64: a fixed, well-spread sequence per index.
        let mut z = value.wrapping_add(seed).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let words = |value: u64, count: u64| {
        (0..count)
            .map(|word| WORDS[(mix(value * 7 + word) % WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let title_case = |text: String| {
        text.split(' ')
            .map(|word| {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    insert_tracks(library, count, |index| {
        let index = index as u64;
        let album_index = index / 10;
        let artist_index = album_index / 10;
        let artist = title_case(format!(
            "the {} {artist_index}",
            words(artist_index << 40, 2)
        ));
        let album = title_case(words(album_index << 20, 1 + mix(album_index) % 3));
        let title = title_case(words(index, 2 + mix(index) % 3));
        let tags = crate::probe::EmbeddedTags {
            title: Some(title.clone()),
            artist: Some(artist.clone()),
            album: Some(album.clone()),
            year: Some(1960 + (mix(album_index << 8) % 60) as i64),
            track_number: Some((index % 10 + 1) as i64),
            genre: Some(GENRES[(mix(artist_index << 12) % GENRES.len() as u64) as usize].into()),
            ..Default::default()
        };
        let path = format!(
            "{artist}/{album} {album_index}/{:02} {title}.flac",
            index % 10 + 1
        );
        let duration_ms = 120_000 + (mix(index << 4) % 240_000) as i64;
        // A blob that is not there: lists, sorts and searches never read it.
        let storage_uri = format!("tracks/synthetic/{index}.flac");
        (tags, Source::LocalFolder, path, duration_ms, storage_uri)
    })
    .await
}

const GENRES: [&str; 12] = [
    "Rock",
    "Jazz",
    "Classical",
    "Electronic",
    "Folk",
    "Hip-Hop",
    "Ambient",
    "Pop",
    "Blues",
    "Soul",
    "Metal",
    "Reggae",
];

/// Tags, source, source id, duration (ms) and storage URI of a synthetic track.
type SyntheticTrack = (
    crate::probe::EmbeddedTags,
    crate::domain::Source,
    String,
    i64,
    String,
);

/// Inserts `count` tracks without audio, a thousand per transaction, with the tags, source
/// source, source id, duration and storage URI `describe` gives the track of each index.
async fn insert_tracks(
    library: &Library,
    count: usize,
    describe: impl Fn(usize) -> SyntheticTrack,
) {
    use crate::catalog::{NewTrack, Resolver};
    use crate::probe::AudioFacts;
    const FORMATS: [(&str, &str); 4] = [
        ("mp3", "audio/mpeg"),
        ("flac", "audio/flac"),
        ("ogg", "audio/ogg"),
        ("m4a", "audio/mp4"),
    ];
    let db = library.db();
    for start in (0..count).step_by(1000) {
        let mut tx = db.begin().await.expect("begin");
        let mut resolver = Resolver::new(db.clone());
        for index in start..(start + 1000).min(count) {
            let (tags, source, source_id, duration_ms, storage_uri) = describe(index);
            let (format, mime_type) = FORMATS[index % FORMATS.len()];
            let track = NewTrack {
                id: crate::TrackId::new(),
                facts: AudioFacts {
                    format,
                    mime_type,
                    duration_ms,
                    bitrate_kbps: Some(320),
                    sample_rate: Some(44100),
                    channels: Some(2),
                    tags,
                    has_embedded_cover: false,
                    replay_gain: Default::default(),
                },
                storage_uri,
                source,
                source_id,
                size_bytes: 0,
                sha256: String::new(),
                mtime: None,
                added_by: None,
                fallback_title: String::new(),
            };
            crate::catalog::insert_track(&mut tx, db, &mut resolver, &track)
                .await
                .expect("insert");
        }
        tx.commit().await.expect("commit");
    }
}

/// Stores `text` (LRC or plain, language `spa`) as a track's lyrics, found in its tags.
pub async fn store_lyrics(library: &Library, id: &crate::TrackId, text: &str) {
    library
        .lyrics()
        .store_text(id, text)
        .await
        .expect("store lyrics");
}

/// Adds ID3v2 `USLT` frames (language, text) to the MP3 at `path`, for tests of lyrics in
/// several languages in crates without lofty.
pub fn add_unsynced_lyrics(path: &std::path::Path, frames: &[([u8; 3], &str)]) {
    use lofty::config::{ParseOptions, WriteOptions};
    use lofty::file::AudioFile;
    use lofty::id3::v2::{Frame, Id3v2Tag, UnsynchronizedTextFrame};
    let mut file = lofty::mpeg::MpegFile::read_from(
        &mut std::fs::File::open(path).expect("open the mp3"),
        ParseOptions::new(),
    )
    .expect("read the mp3");
    if file.id3v2().is_none() {
        file.set_id3v2(Id3v2Tag::new());
    }
    let tag = file.id3v2_mut().expect("an id3v2 tag");
    for (language, text) in frames {
        tag.insert(Frame::UnsynchronizedText(UnsynchronizedTextFrame::new(
            lofty::TextEncoding::UTF8,
            *language,
            String::from_utf8_lossy(language).into_owned(),
            text.to_string(),
        )));
    }
    file.save_to_path(path, WriteOptions::default())
        .expect("write the mp3");
}

/// Writes `fields` (name, value) into the tags of the audio file at `path` in the file's own
/// format, names as given (their case kept): Vorbis comments (FLAC, Ogg Vorbis, Opus), ID3v2
/// `TXXX` frames named by their description (MP3), MP4 freeform atoms
/// `----:com.apple.iTunes:{name}` (M4A). For tests of ReplayGain tags, in crates without lofty.
pub fn write_tag_fields(path: &std::path::Path, fields: &[(&str, &str)]) {
    use lofty::config::{ParseOptions, WriteOptions};
    use lofty::file::AudioFile;
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let open = || std::fs::File::open(path).expect("open the audio file");
    let options = ParseOptions::new();
    match extension.as_str() {
        "mp3" => {
            use lofty::id3::v2::{ExtendedTextFrame, Frame, Id3v2Tag};
            let mut file =
                lofty::mpeg::MpegFile::read_from(&mut open(), options).expect("read the mp3");
            if file.id3v2().is_none() {
                file.set_id3v2(Id3v2Tag::new());
            }
            let tag = file.id3v2_mut().expect("an id3v2 tag");
            for (name, value) in fields {
                tag.insert(Frame::UserText(ExtendedTextFrame::new(
                    lofty::TextEncoding::UTF8,
                    name.to_string(),
                    value.to_string(),
                )));
            }
            file.save_to_path(path, WriteOptions::default())
                .expect("write the audio file");
        }
        "flac" => {
            let mut file =
                lofty::flac::FlacFile::read_from(&mut open(), options).expect("read the flac");
            if file.vorbis_comments().is_none() {
                file.set_vorbis_comments(Default::default());
            }
            let comments = file.vorbis_comments_mut().expect("vorbis comments");
            for (name, value) in fields {
                comments.insert(name.to_string(), value.to_string());
            }
            file.save_to_path(path, WriteOptions::default())
                .expect("write the audio file");
        }
        "ogg" | "oga" => {
            let mut file = lofty::ogg::VorbisFile::read_from(&mut open(), options)
                .expect("read the ogg vorbis file");
            for (name, value) in fields {
                file.vorbis_comments_mut()
                    .insert(name.to_string(), value.to_string());
            }
            file.save_to_path(path, WriteOptions::default())
                .expect("write the audio file");
        }
        "opus" => {
            let mut file =
                lofty::ogg::OpusFile::read_from(&mut open(), options).expect("read the opus file");
            for (name, value) in fields {
                file.vorbis_comments_mut()
                    .insert(name.to_string(), value.to_string());
            }
            file.save_to_path(path, WriteOptions::default())
                .expect("write the audio file");
        }
        "m4a" | "mp4" => {
            use lofty::mp4::{Atom, AtomData, AtomIdent, Ilst};
            let mut file =
                lofty::mp4::Mp4File::read_from(&mut open(), options).expect("read the m4a");
            if file.ilst().is_none() {
                file.set_ilst(Ilst::default());
            }
            let ilst = file.ilst_mut().expect("an ilst");
            for (name, value) in fields {
                ilst.insert(Atom::new(
                    AtomIdent::Freeform {
                        mean: "com.apple.iTunes".into(),
                        name: name.to_string().into(),
                    },
                    AtomData::UTF8(value.to_string()),
                ));
            }
            file.save_to_path(path, WriteOptions::default())
                .expect("write the audio file");
        }
        other => panic!("no tags written into .{other} files"),
    }
}

/// Embeds `image` as the front cover of the audio file at `path` (its primary tag), for tests
/// of covers in crates without lofty.
pub fn add_front_cover(path: &std::path::Path, image: Vec<u8>, mime: &str) {
    use lofty::config::WriteOptions;
    use lofty::picture::{MimeType, Picture, PictureType};
    use lofty::prelude::*;
    use lofty::tag::Tag;
    let mut tagged = lofty::read_from_path(path).expect("read the audio file");
    if tagged.primary_tag().is_none() {
        tagged.insert_tag(Tag::new(tagged.primary_tag_type()));
    }
    let tag = tagged.primary_tag_mut().expect("a primary tag");
    tag.push_picture(
        Picture::unchecked(image)
            .pic_type(PictureType::CoverFront)
            .mime_type(MimeType::from_str(mime))
            .build(),
    );
    tag.save_to_path(path, WriteOptions::default())
        .expect("write the audio file");
}

/// The start of a PNG whose header claims `width` × `height` pixels (and nothing that would
/// decode): what a decompression bomb shows before it is decoded.
pub fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(b"IHDR");
    png.extend_from_slice(&width.to_be_bytes());
    png.extend_from_slice(&height.to_be_bytes());
    png.extend_from_slice(&[8, 2, 0, 0, 0]);
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(b"IDAT");
    png.extend_from_slice(&[0, 0, 0, 0]);
    png
}

/// A job's row as stored in the database of another process (a server a test froze or
/// killed), read without asking that process: see [`jobs_at`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRow {
    /// The job's id.
    pub id: String,
    /// Its kind's stored name.
    pub kind: String,
    /// `queued`, `running`, `succeeded` or `failed`.
    pub state: String,
    /// Attempts started.
    pub attempts: i64,
    /// The worker holding (or that last held) it.
    pub worker_id: Option<String>,
}

/// Every job in the database at `database_url` (`sqlite://…` or `postgres://…`), oldest first,
/// read directly: for tests of the real binary that must see the queue while its server is
/// stopped (SIGSTOP) or gone.
pub async fn jobs_at(database_url: &str) -> Vec<JobRow> {
    let db = Db::connect(database_url)
        .await
        .expect("connect to the server's database");
    type Row = (String, String, String, i64, Option<String>);
    let rows: Vec<Row> = db
        .sql("SELECT id, kind, state, attempts, worker_id FROM jobs ORDER BY created_at, id")
        .fetch_all(db.pool())
        .await
        .expect("read the jobs");
    db.close().await;
    rows.into_iter()
        .map(|(id, kind, state, attempts, worker_id)| JobRow {
            id,
            kind,
            state,
            attempts,
            worker_id,
        })
        .collect()
}

/// When the lease on job `id` runs out, in microseconds on the database clock (`None` when no
/// worker holds it): for tests that watch heartbeats, and expire leases with [`execute`]
/// instead of waiting for the clock.
pub async fn job_lease_until(library: &Library, id: &JobId) -> Option<i64> {
    let db = library.db();
    db.sql("SELECT lease_until FROM jobs WHERE id = $1")
        .bind(id)
        .fetch_scalar::<Option<i64>, _>(db.pool())
        .await
        .expect("read a job's lease")
}

/// Waits until no background walk of the catalogue's lists (the places and orders deep pages
/// start from) is running, with a generous deadline: a test that reads deep pages after a
/// change waits for the walks the change set off instead of sleeping.
pub async fn wait_for_list_walks(library: &Library) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !library.catalog().places_settled() {
        assert!(
            std::time::Instant::now() < deadline,
            "the catalogue's background walks did not end in 120 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs one statement with text arguments (for tests that put rows in a state the API
/// cannot, without depending on sqlx).
pub async fn execute(library: &Library, statement: &str, args: &[&str]) -> u64 {
    let db = library.db();
    let mut sql = db.sql(statement);
    for arg in args {
        sql = sql.bind(*arg);
    }
    sql.execute(db.pool()).await.expect("test statement")
}

/// The ids of a page of every track in `sort` order read by `OFFSET` on the sort's index,
/// the way the list reads a page when it knows no place in it: what a page read any other
/// way must equal.
pub async fn track_ids_by_offset(
    library: &Library,
    sort: crate::catalog::Sort<crate::catalog::TrackSortKey>,
    page: crate::domain::Page,
) -> Vec<String> {
    let order = crate::catalog::query::track_order(sort);
    ids_by_offset(library, "SELECT t.id FROM tracks t", &order, page).await
}

/// As [`track_ids_by_offset`], for albums (with their album artist joined, as the list).
pub async fn album_ids_by_offset(
    library: &Library,
    sort: crate::catalog::Sort<crate::catalog::AlbumSortKey>,
    page: crate::domain::Page,
) -> Vec<String> {
    let head = "SELECT al.id FROM albums al LEFT JOIN artists ar ON ar.id = al.artist_id";
    let order = crate::catalog::query::album_order(sort);
    ids_by_offset(library, head, &order, page).await
}

async fn ids_by_offset(
    library: &Library,
    head: &str,
    order: &str,
    page: crate::domain::Page,
) -> Vec<String> {
    let db = library.db();
    db.sql(&format!(
        "{head} ORDER BY {order} LIMIT {} OFFSET {}",
        page.limit(),
        page.offset()
    ))
    .fetch_scalars::<String, _>(db.pool())
    .await
    .expect("a page by offset")
}

/// Every text column of every `user_settings` row, as stored, for tests that check no
/// credential is kept in clear.
pub async fn user_settings_columns(library: &Library) -> Vec<Option<String>> {
    type Row = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let db = library.db();
    let rows: Vec<Row> = db
        .sql(
            "SELECT settings, scrobble_session_key_enc, listenbrainz_token_enc, lastfm_state, listenbrainz_state
             FROM user_settings",
        )
        .fetch_all(db.pool())
        .await
        .expect("read user settings");
    rows.into_iter()
        .flat_map(
            |(settings, lastfm, listenbrainz, lastfm_state, listenbrainz_state)| {
                [
                    Some(settings),
                    lastfm,
                    listenbrainz,
                    lastfm_state,
                    listenbrainz_state,
                ]
            },
        )
        .collect()
}

/// Every user's stored app password columns (`legacy_password_enc`, `legacy_key_digest`),
/// for tests that check nothing is kept in clear.
pub async fn legacy_password_columns(library: &Library) -> Vec<(Option<String>, Option<String>)> {
    let db = library.db();
    db.sql("SELECT legacy_password_enc, legacy_key_digest FROM users ORDER BY id")
        .fetch_all(db.pool())
        .await
        .expect("read users")
}

/// The library's connection pool, for tests and benchmarks that read or arrange rows
/// directly. (Not part of the library's API: only this test-support module exposes it.)
pub fn pool(library: &Library) -> &sqlx::AnyPool {
    library.db().pool()
}

/// Closes the library's database connections: later calls fail as unavailable.
pub async fn close_database(library: &Library) {
    library.db().close().await;
}

/// The directory where uploads and encodes are staged (empty once they are done).
pub fn staging_dir(library: &Library) -> std::path::PathBuf {
    library.storage().staging_dir().to_path_buf()
}

/// Keys of every blob under `prefix`.
pub async fn blob_keys(library: &Library, prefix: &str) -> Vec<String> {
    library
        .storage()
        .blobs()
        .list(prefix)
        .await
        .expect("list blobs")
}

/// Deletes the blob at `key` (as a disk fault or an outside hand would).
pub async fn delete_blob(library: &Library, key: &str) {
    library
        .storage()
        .blobs()
        .delete(key)
        .await
        .expect("delete a blob");
}

/// Whether a blob exists at `key`.
pub async fn blob_exists(library: &Library, key: &str) -> bool {
    library
        .storage()
        .blobs()
        .head(key)
        .await
        .expect("head a blob")
        .is_some()
}

/// The bytes of the blob at `key`.
pub async fn blob_bytes(library: &Library, key: &str) -> bytes::Bytes {
    library
        .storage()
        .blobs()
        .get_bytes(key)
        .await
        .unwrap_or_else(|error| panic!("read blob {key}: {error}"))
}

/// Stores `bytes` at `key` (arranging blobs a test needs, such as an orphan).
pub async fn put_blob(library: &Library, key: &str, bytes: bytes::Bytes) {
    library
        .storage()
        .blobs()
        .put_bytes(key, bytes)
        .await
        .expect("store a blob");
}

/// Enqueues a job of any stored kind and payload, as an older release or another process
/// may have left in the database.
pub async fn enqueue_raw(
    library: &Library,
    kind: &'static str,
    payload: Value,
    dedup_key: Option<&str>,
) -> JobId {
    library
        .jobs()
        .queue()
        .enqueue(NewJob {
            kind,
            payload,
            dedup_key: dedup_key.map(str::to_string),
            created_by: None,
            max_attempts: None,
        })
        .await
        .expect("enqueue a job")
}

/// The queue's own operations, to play a worker in tests (claim without running, die,
/// fail with a chosen retry).
pub struct QueueProbe(Arc<dyn JobQueue>);

/// The queue of `library`.
pub fn queue(library: &Library) -> QueueProbe {
    QueueProbe(library.jobs().queue().clone())
}

impl QueueProbe {
    /// Leases the next ready job of any kind, after failing for good those whose worker
    /// died on their last attempt (as a worker does).
    pub async fn claim(&self, worker_id: &str, lease: Duration) -> crate::Result<Option<Job>> {
        self.0.fail_abandoned().await?;
        self.0.claim(worker_id, lease, &[]).await
    }

    /// Renews a lease.
    pub async fn heartbeat(
        &self,
        id: &JobId,
        worker_id: &str,
        lease: Duration,
    ) -> crate::Result<bool> {
        self.0.heartbeat(id, worker_id, lease, None).await
    }

    /// Records a failed attempt.
    pub async fn fail(
        &self,
        id: &JobId,
        worker_id: &str,
        error: &str,
        retry_in: Option<Duration>,
    ) -> crate::Result<()> {
        self.0.fail(id, worker_id, error, retry_in).await
    }

    /// Marks a job succeeded.
    pub async fn complete(&self, id: &JobId, worker_id: &str) -> crate::Result<()> {
        self.0.complete(id, worker_id, &Value::Null).await
    }

    /// Reads a job.
    pub async fn get(&self, id: &JobId) -> crate::Result<Job> {
        self.0.get(id).await
    }
}

/// A WAV file of `seconds` of a 440 Hz tone (16-bit mono, 8 kHz): audio for tests that need
/// a real file without the corpus.
pub fn wav_tone(seconds: u32) -> Vec<u8> {
    let rate = 8000u32;
    wav_mono(
        rate,
        (0..rate * seconds).map(|index| {
            let phase = f64::from(index) * 440.0 * std::f64::consts::TAU / f64::from(rate);
            (phase.sin() * 12000.0) as i16
        }),
    )
}

/// A 16-bit mono PCM WAV file of `samples` at `rate` Hz.
pub fn wav_mono(rate: u32, samples: impl IntoIterator<Item = i16>) -> Vec<u8> {
    let data: Vec<u8> = samples.into_iter().flat_map(i16::to_le_bytes).collect();
    let data_len = data.len() as u32;
    let mut wav = Vec::with_capacity(44 + data.len());
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&rate.to_le_bytes());
    wav.extend_from_slice(&(rate * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.extend_from_slice(&data);
    wav
}

/// A podcast `owner` subscribed to at `feed_url`, with an image and one episode stored as if
/// its feed had been read and the episode downloaded (`audio`, a WAV file): for tests of the
/// adapters, which need podcasts without a feed server the default settings would refuse.
pub async fn insert_podcast(
    library: &Library,
    owner: &crate::UserId,
    feed_url: &str,
    audio: &[u8],
) -> (crate::PodcastId, crate::EpisodeId) {
    use sha2::Digest as _;
    let channel = crate::PodcastId::new();
    let episode = crate::EpisodeId::new();
    let image = crate::storage::layout::podcast_image(&channel, "png");
    put_blob(library, &image, png_claiming(4, 4).into()).await;
    let key = crate::storage::layout::podcast_episode(&channel, &episode, "wav");
    put_blob(library, &key, bytes::Bytes::copy_from_slice(audio)).await;
    let db = library.db();
    db.sql(
        "INSERT INTO podcast_channels (id, feed_url, title, image_url, image_uri, image_source,
         refreshed_at, created_by, created_at, updated_at)
         VALUES ($1, $2, 'A podcast', $3, $4, $3, {now}, $5, {now}, {now})",
    )
    .bind(&channel)
    .bind(feed_url)
    .bind(format!("{feed_url}/image.png"))
    .bind(image.as_str())
    .bind(owner)
    .execute(db.pool())
    .await
    .expect("insert a podcast");
    db.sql(
        "INSERT INTO podcast_episodes (id, channel_id, guid, title, published_at, duration_ms,
         enclosure_url, enclosure_type, status, storage_uri, size_bytes, mime_type, content_sha256,
         downloaded_bytes, downloaded_at, created_at, updated_at)
         VALUES ($1, $2, 'episode-1', 'An episode', {now}, 1000, $3, 'audio/wav', 'downloaded',
         $4, $5, 'audio/wav', $6, $5, {now}, {now}, {now})",
    )
    .bind(&episode)
    .bind(&channel)
    .bind(format!("{feed_url}/episode.wav"))
    .bind(key.as_str())
    .bind(audio.len() as i64)
    .bind(hex::encode(sha2::Sha256::digest(audio)))
    .execute(db.pool())
    .await
    .expect("insert an episode");
    (channel, episode)
}
