//! [`Library`]: the one cheap, cloneable handle that adapters and embedding programs hold.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::blobs::{BlobStore, StorageKind};
use crate::db::{Backend, Db};
use crate::jobs::{JobQueue, SqlQueue};
use crate::{Config, Error, Result};

/// The music library: every service of musiclib behind one handle. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Library {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    db: Db,
    blobs: BlobStore,
    queue: Arc<dyn JobQueue>,
    /// Wakes this process's idle workers after an in-process enqueue.
    wake: Notify,
    staging_dir: PathBuf,
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
            }),
        })
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
        }
    }
}
