//! Storage: where the library's bytes live. [`layout`] names every blob namespace and the row
//! that references it; `blobs` writes and reads them on local disk or S3; [`Storage`] is the
//! service the others hold. Statistics and cleanup build on the layout (they reconcile rows
//! with blobs namespace by namespace).

mod blobs;
pub mod layout;

use std::path::{Path, PathBuf};

pub(crate) use blobs::BlobStore;
pub use blobs::StorageKind;

use crate::config::StorageConfig;
use crate::{AlbumId, Error, Result};

/// The blob store and the local staging directory.
#[derive(Clone, Debug)]
pub struct Storage {
    blobs: BlobStore,
    staging_dir: PathBuf,
}

impl Storage {
    /// Opens the blob store of `config` and creates `staging_dir`.
    pub(crate) fn open(config: &StorageConfig, staging_dir: PathBuf) -> Result<Storage> {
        let blobs = BlobStore::open(config)?;
        std::fs::create_dir_all(&staging_dir).map_err(|error| Error::io(&staging_dir, error))?;
        Ok(Storage { blobs, staging_dir })
    }

    /// The backend kind.
    pub fn kind(&self) -> StorageKind {
        self.blobs.kind()
    }

    /// Checks the blob store answers: the root folder exists (local), or the bucket answers
    /// a read (S3).
    pub(crate) async fn check(&self) -> Result<()> {
        match self.local_root() {
            Some(root) if !root.is_dir() => Err(Error::Unavailable(format!(
                "the storage folder {} is missing",
                root.display()
            ))),
            Some(_) => Ok(()),
            None => self.blobs.head(".musiclib-probe").await.map(drop),
        }
    }

    /// The root folder of local storage; `None` on S3.
    pub(crate) fn local_root(&self) -> Option<PathBuf> {
        self.blobs.local_path("")
    }

    /// The blob store.
    pub(crate) fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Directory for temporary files (uploads being received, encodes in progress): on this
    /// machine, not necessarily on the blob store's disk.
    pub(crate) fn staging_dir(&self) -> &Path {
        &self.staging_dir
    }

    /// A temporary file in the staging directory, removed when dropped.
    pub(crate) fn temp_file(&self, suffix: &str) -> Result<tempfile::TempPath> {
        Ok(tempfile::Builder::new()
            .suffix(suffix)
            .tempfile_in(&self.staging_dir)
            .map_err(|error| Error::io(&self.staging_dir, error))?
            .into_temp_path())
    }

    /// The blob `key` as a file on local disk, for tools that need a path (decoders,
    /// ffmpeg): the blob itself on the local backend, a temporary copy (deleted on drop) on S3.
    pub(crate) async fn local_file(&self, key: &str) -> Result<LocalFile> {
        if key.is_empty() {
            return Err(Error::not_found("audio", "the track has no audio"));
        }
        if let Some(path) = self.blobs.local_path(key) {
            return Ok(LocalFile { path, _temp: None });
        }
        let extension = Path::new(key)
            .extension()
            .and_then(|extension| extension.to_str())
            .unwrap_or("bin");
        let temp = self.temp_file(&format!(".{extension}"))?;
        self.blobs.download_to(key, &temp).await?;
        Ok(LocalFile {
            path: temp.to_path_buf(),
            _temp: Some(temp),
        })
    }

    /// Deletes blobs whose rows are gone (after the commit that removed them: no row ever
    /// points at a missing blob). A key ending in `/` is a prefix (an HLS build). A failure
    /// only leaves an orphan, which is logged; cleanup reclaims it.
    pub(crate) async fn delete_unreferenced(&self, keys: impl IntoIterator<Item = String>) {
        for key in keys.into_iter().filter(|key| !key.is_empty()) {
            if let Err(error) = self.blobs.delete_tree(&key).await {
                tracing::warn!(%key, error = %crate::error_chain(&error), "could not delete an unreferenced blob");
            }
        }
    }

    /// Deletes the cover (at `cover_key`, as its row said) and the thumbnails of an album
    /// whose row is gone.
    pub(crate) async fn delete_album_cover(&self, album: &AlbumId, cover_key: &str) {
        let thumbnails = self
            .blobs
            .list(&layout::thumbnails(album))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%album, error = %crate::error_chain(&error), "could not list the thumbnails of a deleted album");
                Vec::new()
            });
        self.delete_unreferenced(thumbnails.into_iter().chain([cover_key.to_string()]))
            .await;
    }
}

/// A blob as a local file (see [`Storage::local_file`]).
pub(crate) struct LocalFile {
    /// The file.
    pub(crate) path: PathBuf,
    _temp: Option<tempfile::TempPath>,
}

/// Most space kept free on a local file system by [`ensure_room`].
const RESERVE_MAX: u64 = 64 * 1024 * 1024;

/// Fails with "insufficient storage" when writing `bytes` more under `dir` would leave less
/// free space on its file system than a reserve (a tenth of the file system, at most 64 MiB).
/// The database, its write-ahead log and the logs usually share that file system: filled to
/// the last byte, the database could not record anything more (not even a deletion that
/// would free space), so uploads, imports and renditions stop short of it.
pub(crate) fn ensure_room(dir: &Path, bytes: u64) -> Result<()> {
    let Ok(stats) = rustix::fs::statvfs(dir) else {
        // A file system that cannot say how full it is: its writes will say.
        return Ok(());
    };
    let block = stats.f_frsize.max(1);
    let total = stats.f_blocks.saturating_mul(block);
    let free = stats.f_bavail.saturating_mul(block);
    let reserve = (total / 10).min(RESERVE_MAX);
    if free >= bytes.saturating_add(reserve) {
        return Ok(());
    }
    let mib = |bytes: u64| bytes.div_ceil(1024 * 1024);
    Err(Error::io(
        dir,
        std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "the disk is full: {} MiB free, {} MiB needed and {} MiB kept free for the database",
                free / (1024 * 1024),
                mib(bytes),
                mib(reserve)
            ),
        ),
    ))
}

/// The SHA-256 (hex) of a local file, read in blocks (never whole into memory).
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path).map_err(|error| Error::io(path, error))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read =
            std::io::Read::read(&mut file, &mut buffer).map_err(|error| Error::io(path, error))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}
