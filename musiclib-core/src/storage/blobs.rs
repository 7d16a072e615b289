//! [`BlobStore`]: blobs over object_store, in a local directory or an S3-compatible bucket.
//! Keys come from [`super::layout`]; nothing else in the crate writes a blob.
//!
//! Every write is atomic: a local file is written under `.staging/` and renamed into place; an
//! S3 object appears only when its (multipart) upload completes. A killed write leaves no half
//! file at the final key.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::io::AsyncReadExt;

use crate::config::{S3Config, StorageConfig};
use crate::error::StorageError;
use crate::{Error, Result};

/// Size of the parts of a multipart upload to S3.
const PART_SIZE: usize = 8 * 1024 * 1024;

/// Which kind of backend a [`BlobStore`] writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// A local directory.
    Local,
    /// An S3-compatible bucket.
    S3,
}

impl StorageKind {
    /// The setting's spelling (`local` or `s3`).
    pub fn as_str(self) -> &'static str {
        match self {
            StorageKind::Local => "local",
            StorageKind::S3 => "s3",
        }
    }
}

/// What the store knows of a blob without reading it.
#[derive(Debug, Clone)]
pub(crate) struct BlobMeta {
    /// Size in bytes.
    pub(crate) size: u64,
}

/// A cheap handle on the blob store.
#[derive(Clone, Debug)]
pub(crate) struct BlobStore {
    store: Arc<dyn ObjectStore>,
    kind: StorageKind,
    local_root: Option<PathBuf>,
    /// Memory maps of recently read local files (see [`MappedFiles`]).
    maps: Arc<MappedFiles>,
}

impl BlobStore {
    /// Opens the store described by `config`, creating a local root directory when missing.
    pub(crate) fn open(config: &StorageConfig) -> Result<BlobStore> {
        match config {
            StorageConfig::Local { root } => BlobStore::local(root),
            StorageConfig::S3(s3) => BlobStore::s3(s3),
        }
    }

    /// A store under a local directory.
    pub(crate) fn local(root: &Path) -> Result<BlobStore> {
        std::fs::create_dir_all(root.join(super::layout::STAGING))
            .map_err(|error| Error::io(root, error))?;
        let root = root
            .canonicalize()
            .map_err(|error| Error::io(root, error))?;
        let store = LocalFileSystem::new_with_prefix(&root).map_err(|source| Error::Storage {
            key: root.display().to_string(),
            source: StorageError(source),
        })?;
        Ok(BlobStore {
            store: Arc::new(store),
            kind: StorageKind::Local,
            local_root: Some(root),
            maps: Default::default(),
        })
    }

    /// A store in an S3-compatible bucket.
    pub(crate) fn s3(config: &S3Config) -> Result<BlobStore> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_allow_http(config.allow_http)
            // A few quick retries: a store that does not answer within seconds is down, and
            // a request (a stream, a cleanup's listing) should say so rather than wait minutes.
            .with_retry(object_store::RetryConfig {
                max_retries: 3,
                retry_timeout: std::time::Duration::from_secs(20),
                ..Default::default()
            });
        if let Some(endpoint) = &config.endpoint {
            // S3-compatible servers are usually addressed path-style.
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
        }
        if let Some(key) = &config.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &config.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        let store = builder.build().map_err(|source| Error::Storage {
            key: config.bucket.clone(),
            source: StorageError(source),
        })?;
        let store: Arc<dyn ObjectStore> =
            match config.prefix.as_deref().filter(|prefix| !prefix.is_empty()) {
                Some(prefix) => Arc::new(object_store::prefix::PrefixStore::new(store, prefix)),
                None => Arc::new(store),
            };
        Ok(BlobStore {
            store,
            kind: StorageKind::S3,
            local_root: None,
            maps: Default::default(),
        })
    }

    /// The backend kind.
    pub(crate) fn kind(&self) -> StorageKind {
        self.kind
    }

    /// The file behind `key` on the local backend, for zero-copy reads; `None` on S3.
    pub(crate) fn local_path(&self, key: &str) -> Option<PathBuf> {
        self.local_root.as_ref().map(|root| root.join(key))
    }

    fn object_path(key: &str) -> Result<ObjectPath> {
        ObjectPath::parse(key)
            .map_err(|error| Error::internal_with(format!("invalid blob key {key:?}"), error))
    }

    /// A read's error: a missing blob is "not found", anything else a storage failure.
    fn read_error(key: &str) -> impl FnOnce(object_store::Error) -> Error + '_ {
        move |source| match source {
            object_store::Error::NotFound { .. } => Error::not_found("blob", key),
            source => Error::Storage {
                key: key.to_string(),
                source: StorageError(source),
            },
        }
    }

    fn blob_error(key: &str) -> impl FnOnce(object_store::Error) -> Error + '_ {
        move |source| Error::Storage {
            key: key.to_string(),
            source: StorageError(source),
        }
    }

    /// Stores `bytes` at `key`, replacing what was there.
    pub(crate) async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<()> {
        let path = Self::object_path(key)?;
        if let Some(root) = &self.local_root {
            let (root, key) = (root.clone(), key.to_string());
            tokio::task::spawn_blocking(move || local_write_atomic(&root, &key, &bytes, false))
                .await
                .map_err(Error::task("blob write"))??;
            return Ok(());
        }
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(Self::blob_error(key))?;
        Ok(())
    }

    /// Stores `bytes` at `key` unless something is there already (then `false`, and the
    /// existing blob is left alone). Local disk and S3 (`If-None-Match: *`) both check this
    /// atomically.
    pub(crate) async fn put_bytes_if_absent(&self, key: &str, bytes: Bytes) -> Result<bool> {
        let path = Self::object_path(key)?;
        if let Some(root) = &self.local_root {
            let (root, key) = (root.clone(), key.to_string());
            return tokio::task::spawn_blocking(move || {
                local_write_atomic(&root, &key, &bytes, true)
            })
            .await
            .map_err(Error::task("blob write"))?;
        }
        let options = object_store::PutOptions::from(object_store::PutMode::Create);
        match self
            .store
            .put_opts(&path, PutPayload::from(bytes), options)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(source) => Err(Error::Storage {
                key: key.to_string(),
                source: StorageError(source),
            }),
        }
    }

    /// Copies the local file `source` to `key` without holding it in memory. Returns its size.
    pub(crate) async fn put_file(&self, key: &str, source: &Path) -> Result<u64> {
        match &self.local_root {
            Some(root) => {
                let (root, key_owned, source) =
                    (root.clone(), key.to_string(), source.to_path_buf());
                tokio::task::spawn_blocking(move || local_copy_atomic(&root, &key_owned, &source))
                    .await
                    .map_err(Error::task("blob copy"))?
            }
            // In a task of its own: a caller that goes away (a client hanging up on its
            // upload) leaves the upload to complete or abort by itself, never a multipart
            // upload half done and left open in the bucket.
            None => {
                let (store, key, source) = (self.clone(), key.to_string(), source.to_path_buf());
                tokio::spawn(async move { store.upload_file(&key, &source).await })
                    .await
                    .map_err(Error::task("blob upload"))?
            }
        }
    }

    async fn upload_file(&self, key: &str, source: &Path) -> Result<u64> {
        let path = Self::object_path(key)?;
        let mut file = tokio::fs::File::open(source)
            .await
            .map_err(|error| Error::io(source, error))?;
        let size = file
            .metadata()
            .await
            .map_err(|error| Error::io(source, error))?
            .len();
        if size as usize <= PART_SIZE {
            let mut buffer = Vec::with_capacity(size as usize);
            file.read_to_end(&mut buffer)
                .await
                .map_err(|error| Error::io(source, error))?;
            self.put_bytes(key, Bytes::from(buffer)).await?;
            return Ok(size);
        }
        let upload = self
            .store
            .put_multipart(&path)
            .await
            .map_err(Self::blob_error(key))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
        let mut buffer = vec![0u8; 1024 * 1024];
        loop {
            let read = match file.read(&mut buffer).await {
                Ok(read) => read,
                Err(error) => {
                    let _ = writer.abort().await;
                    return Err(Error::io(source, error));
                }
            };
            if read == 0 {
                break;
            }
            if let Err(source) = writer.wait_for_capacity(4).await {
                let _ = writer.abort().await;
                return Err(Error::Storage {
                    key: key.to_string(),
                    source: StorageError(source),
                });
            }
            writer.write(&buffer[..read]);
        }
        writer.finish().await.map_err(Self::blob_error(key))?;
        Ok(size)
    }

    /// Reads a whole blob into memory (covers, small files).
    pub(crate) async fn get_bytes(&self, key: &str) -> Result<Bytes> {
        let path = Self::object_path(key)?;
        let result = self.store.get(&path).await.map_err(Self::read_error(key))?;
        result.bytes().await.map_err(Self::blob_error(key))
    }

    /// Streams `range` of a blob. On local disk the file is memory-mapped (the map is kept
    /// for later requests) and the range is sent as slices of the map, 256 KiB at a time:
    /// no read into a buffer, no blocking-pool round trip, and a slow listener holds page
    /// cache, not memory of its own. On S3 a ranged GET, proxied.
    ///
    /// Mapping is safe because local blobs are never rewritten in place: every write is a
    /// rename onto the key (a new file), and the map is checked against the file's inode.
    pub(crate) async fn get_range_stream(
        &self,
        key: &str,
        range: Range<u64>,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        let path = Self::object_path(key)?;
        if let Some(file_path) = self.local_path(key) {
            let mapped = self.maps.range(&file_path, range).map_err(|error| {
                if error.kind() == std::io::ErrorKind::NotFound {
                    Error::not_found("blob", key)
                } else {
                    Error::io(&file_path, error)
                }
            })?;
            let chunks = (0..mapped.len()).step_by(MAPPED_CHUNK).map(move |start| {
                Ok(mapped.slice(start..(start + MAPPED_CHUNK).min(mapped.len())))
            });
            return Ok(futures::stream::iter(chunks).boxed());
        }
        let options = object_store::GetOptions {
            range: Some(object_store::GetRange::Bounded(range.clone())),
            ..Default::default()
        };
        let result = self
            .store
            .get_opts(&path, options)
            .await
            .map_err(Self::read_error(key))?;
        if result.range != range {
            return Err(Error::io(
                path.as_ref(),
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "the blob has {} bytes, fewer than asked for",
                        result.meta.size
                    ),
                ),
            ));
        }
        Ok(result.into_stream().map_err(std::io::Error::other).boxed())
    }

    /// Copies a whole blob into the local file `dest` (created or truncated), streaming.
    /// Returns its size.
    pub(crate) async fn download_to(&self, key: &str, dest: &Path) -> Result<u64> {
        use tokio::io::AsyncWriteExt;
        let path = Self::object_path(key)?;
        let result = self.store.get(&path).await.map_err(Self::read_error(key))?;
        let mut file = tokio::fs::File::create(dest)
            .await
            .map_err(|error| Error::io(dest, error))?;
        let mut stream = result.into_stream();
        let mut size = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(Self::blob_error(key))?;
            size += chunk.len() as u64;
            file.write_all(&chunk)
                .await
                .map_err(|error| Error::io(dest, error))?;
        }
        file.flush().await.map_err(|error| Error::io(dest, error))?;
        Ok(size)
    }

    /// Size and modification time of `key`, or `None` when it does not exist.
    pub(crate) async fn head(&self, key: &str) -> Result<Option<BlobMeta>> {
        let path = Self::object_path(key)?;
        match self.store.head(&path).await {
            Ok(meta) => Ok(Some(BlobMeta { size: meta.size })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(source) => Err(Error::Storage {
                key: key.to_string(),
                source: StorageError(source),
            }),
        }
    }

    /// Deletes `key`; deleting a missing blob succeeds.
    pub(crate) async fn delete(&self, key: &str) -> Result<()> {
        let path = Self::object_path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(source) => Err(Error::Storage {
                key: key.to_string(),
                source: StorageError(source),
            }),
        }
    }

    /// Deletes `key`, or every blob under it when it ends with `/` (a rendition made of
    /// several files, such as an HLS playlist and its segments).
    pub(crate) async fn delete_tree(&self, key: &str) -> Result<()> {
        if !key.ends_with('/') {
            return self.delete(key).await;
        }
        for key in self.list(key.trim_end_matches('/')).await? {
            self.delete(&key).await?;
        }
        if let Some(dir) = self.local_path(key.trim_end_matches('/')) {
            // object_store leaves the empty directories of a local store behind.
            let _ = tokio::fs::remove_dir(&dir).await;
        }
        Ok(())
    }

    /// Lists every key under `prefix`.
    pub(crate) async fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(self
            .list_meta(prefix)
            .await?
            .into_iter()
            .map(|blob| blob.key)
            .collect())
    }

    /// Lists every blob under `prefix` with its size.
    pub(crate) async fn list_meta(&self, prefix: &str) -> Result<Vec<ListedBlob>> {
        let path = Self::object_path(prefix)?;
        let metas: Vec<_> = self
            .store
            .list(Some(&path))
            .try_collect()
            .await
            .map_err(Self::blob_error(prefix))?;
        Ok(metas
            .into_iter()
            .map(|meta| ListedBlob {
                key: meta.location.to_string(),
                size: meta.size,
                modified: meta.last_modified.into(),
            })
            .collect())
    }
}

/// A blob as a listing shows it.
#[derive(Debug, Clone)]
pub(crate) struct ListedBlob {
    /// Its key.
    pub(crate) key: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// When it was last written.
    pub(crate) modified: std::time::SystemTime,
}

/// Size of the slices a mapped range is sent in.
const MAPPED_CHUNK: usize = 256 * 1024;

/// How many files stay mapped.
const MAPPED_FILES: usize = 256;

/// Memory maps of local blob files, keyed by path and checked against the inode, so a key
/// replaced by a rename is mapped afresh. A deleted file's map stays valid (unlinking does not
/// take pages from a mapping) until it is dropped.
#[derive(Debug, Default)]
struct MappedFiles {
    maps: std::sync::Mutex<std::collections::HashMap<PathBuf, (FileIdentity, Arc<memmap2::Mmap>)>>,
}

/// A file's device and inode: what tells a replaced file from the one that was mapped.
type FileIdentity = (u64, u64);

/// A range of a map as the owner of [`Bytes`]. When the last of its bytes is dropped (the
/// response that sent them is over), its pages are taken out of this process's resident set
/// (`MADV_DONTNEED`): they stay in the page cache, and a later read maps them again at no
/// cost, but the process does not count every page any listener ever read as its own (200
/// listeners of a 170 MB library held 357 MB of mapped files otherwise).
struct MappedRange {
    map: Arc<memmap2::Mmap>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for MappedRange {
    fn as_ref(&self) -> &[u8] {
        &self.map[self.start..self.end]
    }
}

impl Drop for MappedRange {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let page = rustix::param::page_size();
            let from = self.start / page * page;
            let to = self
                .end
                .div_ceil(page)
                .saturating_mul(page)
                .min(self.map.len());
            if to > from {
                // SAFETY: the map is a shared, read-only map of a blob file, which is never
                // written once renamed into place (see `get_range_stream`): dropping its pages
                // from this process only makes a later access fault them in again from the
                // page cache, with the same bytes. Other ranges reading these pages meanwhile
                // see the same content.
                let _ = unsafe {
                    self.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        from,
                        to - from,
                    )
                };
            }
        }
    }
}

impl MappedFiles {
    /// `range` of the file at `path`, without copying. A range past the end is an error,
    /// never a short body.
    fn range(&self, path: &Path, range: Range<u64>) -> std::io::Result<Bytes> {
        use std::os::unix::fs::MetadataExt;
        // One stat per request (the inode may have changed), a map only on a miss.
        let meta = std::fs::metadata(path)?;
        if range.start > range.end || range.end > meta.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the file ends at byte {}, before {}", meta.len(), range.end),
            ));
        }
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let identity = (meta.dev(), meta.ino());
        let cached = {
            let maps = self.maps.lock().expect("poisoned");
            maps.get(path)
                .filter(|(mapped, _)| *mapped == identity)
                .map(|(_, map)| map.clone())
        };
        let map = match cached {
            Some(map) => map,
            None => {
                let file = std::fs::File::open(path)?;
                // SAFETY: local blobs are immutable once renamed into place (see
                // `get_range_stream`); the map is checked against the opened file's size.
                let map = Arc::new(unsafe { memmap2::Mmap::map(&file)? });
                let opened = file.metadata()?;
                if (opened.dev(), opened.ino()) != identity || (map.len() as u64) < range.end {
                    return Err(std::io::Error::other(
                        "the file changed while it was opened",
                    ));
                }
                let mut maps = self.maps.lock().expect("poisoned");
                if maps.len() >= MAPPED_FILES {
                    maps.clear();
                }
                maps.insert(path.to_path_buf(), (identity, map.clone()));
                map
            }
        };
        Ok(Bytes::from_owner(MappedRange {
            map,
            start: range.start as usize,
            end: range.end as usize,
        }))
    }
}

/// Writes `bytes` into `root/.staging`, then moves it to `root/key`: renamed over what was
/// there, or (`create_only`) linked only when nothing is there (then `false`). A write cut
/// short (a full disk, a killed process) leaves a part in `.staging` only, never next to the
/// blobs (object_store's own local writes would leave it as `key#N`, which no listing shows
/// and no cleanup reclaims); cleanup sweeps abandoned staging files.
fn local_write_atomic(root: &Path, key: &str, bytes: &[u8], create_only: bool) -> Result<bool> {
    let target = root.join(key);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|error| Error::io(parent, error))?;
    }
    let staging = root
        .join(super::layout::STAGING)
        .join(uuid::Uuid::new_v4().to_string());
    super::ensure_room(root, bytes.len() as u64)?;
    if let Err(error) = std::fs::write(&staging, bytes) {
        let _ = std::fs::remove_file(&staging);
        return Err(Error::io(&staging, error));
    }
    let moved = if create_only {
        match std::fs::hard_link(&staging, &target) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(error) => Err(Error::io(&target, error)),
        }
    } else {
        std::fs::rename(&staging, &target)
            .map(|()| true)
            .map_err(|error| Error::io(&target, error))
    };
    // After a rename there is nothing left; after a link (or a failure), the staging name.
    let _ = std::fs::remove_file(&staging);
    moved
}

/// Copies `source` into `root/.staging`, then renames it to `root/key` (a reader sees the
/// old file or the whole new one, never a part).
fn local_copy_atomic(root: &Path, key: &str, source: &Path) -> Result<u64> {
    let target = root.join(key);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|error| Error::io(parent, error))?;
    }
    let staging = root
        .join(super::layout::STAGING)
        .join(uuid::Uuid::new_v4().to_string());
    let needed = std::fs::metadata(source)
        .map_err(|error| Error::io(source, error))?
        .len();
    super::ensure_room(root, needed)?;
    let size = match std::fs::copy(source, &staging) {
        Ok(size) => size,
        Err(error) => {
            // A full disk leaves a part of the copy behind.
            let _ = std::fs::remove_file(&staging);
            return Err(Error::io(&staging, error));
        }
    };
    if let Err(error) = std::fs::rename(&staging, &target) {
        let _ = std::fs::remove_file(&staging);
        return Err(Error::io(&target, error));
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::TryStreamExt;

    use crate::testing::{Backend, TestLibrary};

    /// Atomic writes, ranged reads and deletion, on local disk and on S3.
    async fn blobs_round_trip_with_ranges(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let blobs = library.storage().blobs();
        let data: Vec<u8> = (0..200_000u32).map(|n| (n % 251) as u8).collect();
        blobs
            .put_bytes("audio/a.bin", Bytes::from(data.clone()))
            .await
            .unwrap();
        assert_eq!(
            blobs.head("audio/a.bin").await.unwrap().unwrap().size,
            data.len() as u64
        );
        let chunks: Vec<Bytes> = blobs
            .get_range_stream("audio/a.bin", 1000..5000)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(chunks.concat(), data[1000..5000]);

        // A large file goes through the streaming path (multipart on S3).
        let big: Vec<u8> = (0..(9 * 1024 * 1024u32)).map(|n| (n % 13) as u8).collect();
        let source = library.dir.path().join("big.bin");
        std::fs::write(&source, &big).unwrap();
        assert_eq!(
            blobs.put_file("audio/big.bin", &source).await.unwrap(),
            big.len() as u64
        );
        assert_eq!(
            blobs.get_bytes("audio/big.bin").await.unwrap().len(),
            big.len()
        );
        let whole: Vec<Bytes> = blobs
            .get_range_stream("audio/big.bin", 0..big.len() as u64)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(whole.concat(), big, "a long range streams whole");

        // A key written again is read afresh (local reads keep the file mapped).
        blobs
            .put_bytes("audio/a.bin", Bytes::from_static(b"replaced"))
            .await
            .unwrap();
        let chunks: Vec<Bytes> = blobs
            .get_range_stream("audio/a.bin", 0..8)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(chunks.concat(), b"replaced");
        assert!(
            blobs.get_range_stream("audio/a.bin", 0..9).await.is_err(),
            "past the end is an error, never a short body"
        );
        blobs
            .put_bytes("audio/a.bin", Bytes::from(data.clone()))
            .await
            .unwrap();

        let mut keys = blobs.list("audio").await.unwrap();
        keys.sort();
        assert_eq!(
            keys,
            vec!["audio/a.bin", "audio/big.bin"],
            "no staging or partial object is visible"
        );

        blobs.delete("audio/a.bin").await.unwrap();
        assert!(blobs.head("audio/a.bin").await.unwrap().is_none());
        blobs.delete("audio/a.bin").await.unwrap();
        assert_eq!(
            blobs.get_bytes("audio/a.bin").await.unwrap_err().kind(),
            crate::ErrorKind::NotFound
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blobs_round_trip_with_ranges_on_local_disk() {
        blobs_round_trip_with_ranges(Backend::Embedded).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[cfg_attr(
        not(musiclib_services),
        ignore = "needs PostgreSQL and S3: run the README test command"
    )]
    async fn blobs_round_trip_with_ranges_on_s3() {
        blobs_round_trip_with_ranges(Backend::ScaleOut).await
    }
}
