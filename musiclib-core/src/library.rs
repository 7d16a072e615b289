//! [`Library`]: the one cheap, cloneable handle that adapters and embedding programs hold.
//!
//! It opens the database and the blob store, builds every service once with what it depends
//! on, and hands them out: `library.catalog()`, `library.media()`, … Services hold clones of
//! each other (each is a few `Arc`s), never the `Library`, so the dependency between them is
//! written in their constructors, here, in one place. Each service then registers its job
//! kinds and periodic tasks ([`crate::jobs::Registry`]), which run with that service. Operations
//! that cross services live in [`crate::workflows`], reached through methods of `Library`.

use std::sync::Arc;

use crate::admin::Admin;
use crate::auth::Caller;
use crate::auth::{AccountSettings, Accounts};
use crate::avatars::Avatars;
use crate::catalog::Catalog;
use crate::cpu::CpuSlots;
use crate::db::{DatabaseKind, Db};
use crate::enrichment::Enrichment;
use crate::ingest::Ingest;
use crate::ingest::SourceInfo;
use crate::jobs::{JobQueue, Jobs, Registry, SqlQueue};
use crate::lyrics::Lyrics;
use crate::maintenance::Maintenance;
use crate::media::{Media, Transcoder};
use crate::playlists::Playlists;
use crate::podcasts::Podcasts;
use crate::recommend::Recommend;
use crate::remote::Remote;
use crate::scrobbling::Scrobbling;
use crate::settings::Settings;
use crate::shares::Shares;
use crate::social::Social;
use crate::stations::Stations;
use crate::storage::{Storage, StorageKind};
use crate::workflows::Workflows;
use crate::{Config, Result, TrackId, UserId};

/// The music library: every service of musiclib behind one handle. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Library {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    db: Db,
    storage: Storage,
    jobs: Jobs,
    accounts: Accounts,
    catalog: Catalog,
    ingest: Ingest,
    enrichment: Enrichment,
    media: Media,
    playlists: Playlists,
    social: Social,
    recommend: Recommend,
    settings: Settings,
    scrobbling: Scrobbling,
    lyrics: Lyrics,
    shares: Shares,
    podcasts: Podcasts,
    stations: Stations,
    avatars: Avatars,
    remote: Remote,
    maintenance: Maintenance,
    admin: Admin,
    workflows: Workflows,
    /// Every job kind with its handler, and the periodic tasks: what workers run.
    registry: Arc<Registry>,
}

/// Health of the library's dependencies.
#[derive(Debug, Clone)]
pub struct Health {
    /// Whether the database answered.
    pub database_ok: bool,
    /// Database engine.
    pub database_backend: DatabaseKind,
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
        let queue = Arc::new(SqlQueue::new(db.clone(), config.jobs.max_attempts));
        Library::assemble(config, db, queue)
    }

    /// Builds every service on an open database (tests substitute the queue).
    pub(crate) fn assemble(config: Config, db: Db, queue: Arc<dyn JobQueue>) -> Result<Library> {
        let storage = Storage::open(&config.storage, config.data_dir.join("tmp"))?;
        let cpu = CpuSlots::per_core();
        let jobs = Jobs::new(queue, db.clone(), config.jobs.clone());
        let accounts = Accounts::new(
            db.clone(),
            AccountSettings {
                allow_registration: config.allow_registration,
                jwt_secret: config.jwt_secret.clone(),
                token_ttl: config.token_ttl,
                legacy_secret_key: config.legacy_secret_key.clone(),
                sign_in_throttle: config.sign_in_throttle,
            },
        );
        let catalog = Catalog::new(db.clone(), storage.clone());
        let playlists = Playlists::new(db.clone(), storage.clone());
        let media = Media::new(
            db.clone(),
            storage.clone(),
            jobs.clone(),
            catalog.clone(),
            Transcoder::new(config.transcoding.ffmpeg.clone(), cpu.clone()),
            &config.transcoding,
            cpu.clone(),
        );
        let ingest = Ingest::new(
            db.clone(),
            storage.clone(),
            jobs.clone(),
            catalog.clone(),
            media.clone(),
            config.max_upload_bytes,
            config.local_media_import_path.clone(),
        );
        let enrichment = Enrichment::new(
            db.clone(),
            storage.clone(),
            jobs.clone(),
            catalog.clone(),
            media.clone(),
            cpu.clone(),
            config.enrichment.clone(),
            crate::outside::http_client(),
        );
        let forwarder = crate::scrobbling::Forwarder::new(
            db.clone(),
            jobs.clone(),
            config.scrobbling.lastfm_available(),
        );
        let social = Social::new(
            db.clone(),
            catalog.clone(),
            playlists.clone(),
            forwarder.clone(),
        );
        let recommend = Recommend::new(
            db.clone(),
            catalog.clone(),
            storage.clone(),
            jobs.clone(),
            &config.recommend,
            cpu.clone(),
        );
        let settings = Settings::new(db.clone());
        let scrobbling = Scrobbling::new(
            db.clone(),
            settings.clone(),
            config.scrobbling.clone(),
            config.legacy_secret_key.clone(),
            forwarder,
            catalog.clone(),
            crate::outside::http_client(),
        );
        let lyrics = Lyrics::new(
            db.clone(),
            catalog.clone(),
            storage.clone(),
            crate::outside::http_client(),
            &config.enrichment.lrclib_base_url,
            config.local_media_import_path.clone(),
        );
        let shares = Shares::new(
            db.clone(),
            catalog.clone(),
            playlists.clone(),
            media.clone(),
            lyrics.clone(),
        );
        let podcasts = Podcasts::new(
            db.clone(),
            storage.clone(),
            jobs.clone(),
            media.clone(),
            &config,
        );
        let avatars = Avatars::new(db.clone(), storage.clone());
        let stations = Stations::new(
            db.clone(),
            crate::outside::guard::guarded_client(config.allow_private_urls),
            config.allow_private_urls,
        );
        let remote = Remote::new(
            db.clone(),
            catalog.clone(),
            storage.clone(),
            jobs.clone(),
            media.clone(),
            config.remote.clone(),
            config.transcoding.ffmpeg.clone(),
            config.max_upload_bytes,
            // Credentials travel in a Subsonic source's queries: never redirected elsewhere.
            crate::outside::same_origin_client(),
        );
        let maintenance = Maintenance::new(
            db.clone(),
            storage.clone(),
            catalog.clone(),
            jobs.clone(),
            media.clone(),
            remote.clone(),
            config.cleanup_grace,
        );
        let admin = Admin::new(
            Arc::new(config.clone()),
            db.clone(),
            storage.clone(),
            jobs.clone(),
            media.clone(),
            ingest.clone(),
            remote.clone(),
            recommend.clone(),
            catalog.clone(),
        );
        let workflows = Workflows {
            db: db.clone(),
            storage: storage.clone(),
            accounts: accounts.clone(),
            catalog: catalog.clone(),
            media: media.clone(),
            playlists: playlists.clone(),
            ingest: ingest.clone(),
            remote: remote.clone(),
        };
        // Each service registers the job kinds and periodic tasks it runs.
        let mut registry = Registry::new(jobs.clone());
        enrichment.register_jobs(&mut registry, &config);
        ingest.register_jobs(&mut registry, &config);
        media.register_jobs(&mut registry, &config);
        admin.register_jobs(&mut registry, &config);
        maintenance.register_jobs(&mut registry, &config);
        scrobbling.register_jobs(&mut registry, &config);
        remote.register_jobs(&mut registry, &config);
        recommend.register_jobs(&mut registry, &config);
        podcasts.register_jobs(&mut registry, &config);
        jobs.install(registry.kinds().clone());
        let registry = Arc::new(registry);
        Ok(Library {
            inner: Arc::new(Inner {
                config,
                db,
                storage,
                jobs,
                accounts,
                catalog,
                ingest,
                enrichment,
                media,
                playlists,
                social,
                recommend,
                settings,
                scrobbling,
                lyrics,
                shares,
                podcasts,
                stations,
                avatars,
                remote,
                maintenance,
                admin,
                workflows,
                registry,
            }),
        })
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Accounts, credentials and tokens.
    pub fn accounts(&self) -> &Accounts {
        &self.inner.accounts
    }

    /// Tracks, albums, artists: lists, reads, search, manual edits.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// Uploads, the local folder import, sources.
    pub fn ingest(&self) -> &Ingest {
        &self.inner.ingest
    }

    /// The metadata pipeline (tags, fingerprint, AcoustID, covers).
    pub fn enrichment(&self) -> &Enrichment {
        &self.inner.enrichment
    }

    /// Audio, renditions, HLS and covers.
    pub fn media(&self) -> &Media {
        &self.inner.media
    }

    /// Versioned playlists.
    pub fn playlists(&self) -> &Playlists {
        &self.inner.playlists
    }

    /// Likes, plays, stars, ratings, the play queue, and offline sync.
    pub fn social(&self) -> &Social {
        &self.inner.social
    }

    /// Tracks to play next (random, top, similar).
    pub fn recommend(&self) -> &Recommend {
        &self.inner.recommend
    }

    /// Per-user settings.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// Scrobbling credentials and their state.
    pub fn scrobbling(&self) -> &Scrobbling {
        &self.inner.scrobbling
    }

    /// Remote sources: search outside the library, placeholders, materialization, downloads.
    pub fn remote(&self) -> &Remote {
        &self.inner.remote
    }

    /// Lyrics: the cache and its sources.
    pub fn lyrics(&self) -> &Lyrics {
        &self.inner.lyrics
    }

    /// Sharing links.
    pub fn shares(&self) -> &Shares {
        &self.inner.shares
    }

    /// Podcasts: subscriptions, episodes, downloads.
    pub fn podcasts(&self) -> &Podcasts {
        &self.inner.podcasts
    }

    /// Internet radio stations and the relay of their streams.
    pub fn stations(&self) -> &Stations {
        &self.inner.stations
    }

    /// Users' pictures, uploaded or generated.
    pub fn avatars(&self) -> &Avatars {
        &self.inner.avatars
    }

    /// Statistics, duplicates, broken files, missing metadata, cleanup.
    pub fn maintenance(&self) -> &Maintenance {
        &self.inner.maintenance
    }

    /// Background jobs.
    pub fn jobs(&self) -> &Jobs {
        &self.inner.jobs
    }

    /// Where the bytes live.
    pub fn storage(&self) -> &Storage {
        &self.inner.storage
    }

    /// Server administration.
    pub fn admin(&self) -> &Admin {
        &self.inner.admin
    }

    /// The database engine it runs on.
    pub fn database_kind(&self) -> DatabaseKind {
        self.inner.db.kind()
    }

    /// Every source (`GET /sources`): upload, the local folder, and each remote source.
    /// Any signed-in user.
    pub async fn sources(&self, caller: &Caller) -> Result<Vec<SourceInfo>> {
        self.inner.workflows.sources(caller).await
    }

    /// Opens a track's audio for a media request: what to send, decided once for every
    /// interface ([`Workflows::open_audio`]).
    pub async fn open_audio(
        &self,
        caller: &Caller,
        id: &TrackId,
        want: &crate::media::Want,
    ) -> Result<crate::media::Delivery> {
        self.inner.workflows.open_audio(caller, id, want).await
    }

    /// Deletes a track (the uploader or an admin): its row, its places in playlists, its
    /// renditions and its blobs ([`Workflows::delete_track`]).
    pub async fn delete_track(&self, caller: &Caller, id: &TrackId) -> Result<()> {
        self.inner.workflows.delete_track(caller, id).await
    }

    /// Deletes an account and its personal data (an admin, never their own;
    /// [`Workflows::delete_user`]).
    pub async fn delete_user(&self, caller: &Caller, id: &UserId) -> Result<()> {
        self.inner.workflows.delete_user(caller, id).await
    }

    /// Every job kind with its handler, and the periodic tasks: what a
    /// [`crate::jobs::Worker`] runs (`Worker::new(library.registry(), name)`).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// A probe that answers whether every handle of this library is gone, so its services,
    /// pools and connections are let go (nothing it built holds it in a loop).
    #[cfg(feature = "test-support")]
    pub fn released_probe(&self) -> impl Fn() -> bool {
        let inner = Arc::downgrade(&self.inner);
        // Every service holds a clone of the queue's handle.
        let jobs = self.inner.jobs.weak_handle();
        move || inner.strong_count() == 0 && jobs.strong_count() == 0
    }

    #[cfg(feature = "test-support")]
    pub(crate) fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Checks the dependencies.
    pub async fn health(&self) -> Health {
        Health {
            database_ok: self.inner.db.ping().await.is_ok(),
            database_backend: self.inner.db.kind(),
            storage_backend: self.inner.storage.kind(),
            transcoder_available: self.inner.media.transcoder_ready().await,
        }
    }
}
