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

/// A file of a folder the server reads (the import folder), opened once by [`open_inside`]:
/// what is read, hashed, probed and stored is that one open file, whatever happens to the
/// name meanwhile.
#[derive(Debug)]
pub(crate) struct FolderFile {
    file: std::fs::File,
    /// A path that opens this very file again (`/proc/self/fd/N` on Linux), for tools that
    /// need a path.
    path: PathBuf,
}

impl FolderFile {
    /// The open file.
    pub(crate) fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// A path to this same open file, valid while it is open.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens the regular file at `relative` under `root` (a canonical directory) for reading,
/// never a file outside it and never anything but a regular file:
///
/// - on Linux, `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` resolves the path,
///   relative symlinks included, only while it stays beneath `root`;
/// - a path it refuses for leaving the root (an absolute symlink, even one back into the
///   folder), and every path where `openat2` is missing, is canonicalized and checked to be
///   inside `root`, opened without following a last symlink, and the file opened is checked
///   again where it really is (`/proc/self/fd`), so a directory swapped for a link between
///   the check and the open is caught: a link to `/proc/self/environ`, `/dev/zero` or a
///   secret beside the data is never read;
/// - it is opened non-blocking (a FIFO cannot hold the open) and checked from the open file
///   (`fstat`): a FIFO, a device or a directory is refused.
pub(crate) fn open_inside(root: &Path, relative: &Path) -> std::io::Result<FolderFile> {
    use std::io::{Error as IoError, ErrorKind};
    if relative.is_absolute()
        || relative
            .components()
            .any(|part| !matches!(part, std::path::Component::Normal(_)))
    {
        return Err(IoError::new(
            ErrorKind::PermissionDenied,
            "the path leaves the folder",
        ));
    }
    let file = open_beneath(root, relative)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(IoError::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    #[cfg(target_os = "linux")]
    let path = {
        use std::os::fd::AsRawFd;
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        // Where the open file really is.
        if let Ok(real) = std::fs::read_link(&path) {
            if !real.starts_with(root) {
                return Err(leaves_folder());
            }
        }
        path
    };
    #[cfg(not(target_os = "linux"))]
    let path = root.join(relative).canonicalize()?;
    Ok(FolderFile { file, path })
}

fn leaves_folder() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "the path leaves the folder",
    )
}

#[cfg(target_os = "linux")]
fn open_beneath(root: &Path, relative: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let dir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let opened = rustix::fs::openat2(
        &dir,
        relative,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    );
    match opened {
        Ok(fd) => Ok(std::fs::File::from(fd)),
        // A magic link (`/proc/…/fd`), or a loop.
        Err(rustix::io::Errno::LOOP) => Err(leaves_folder()),
        // Leaving the root: an absolute link (which may lead back inside), or `..` past it;
        // a kernel without openat2 (before 5.6), or a sandbox that refuses it.
        Err(rustix::io::Errno::XDEV | rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
            open_canonical(root, relative)
        }
        Err(error) => Err(error.into()),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(root: &Path, relative: &Path) -> std::io::Result<std::fs::File> {
    open_canonical(root, relative)
}

/// The portable way: canonicalize, check, then open without following a last symlink (the
/// caller checks where the open file really is).
fn open_canonical(root: &Path, relative: &Path) -> std::io::Result<std::fs::File> {
    let target = root.join(relative).canonicalize()?;
    if !target.starts_with(root) {
        return Err(leaves_folder());
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32,
    );
    options.open(target)
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

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn folder_files_are_opened_only_inside_and_only_when_regular() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "sekrit").unwrap();
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("album")).unwrap();
        std::fs::write(root.join("album/song.mp3"), "audio").unwrap();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap()
        };
        link(&outside.path().join("secret"), "escape.lrc");
        link(Path::new("/proc/self/environ"), "environ.lrc");
        link(Path::new("/dev/zero"), "zero.lrc");
        link(Path::new("../album/song.mp3"), "album/relative-up.mp3");
        link(Path::new("album/song.mp3"), "inside.mp3");
        link(&root.join("album/song.mp3"), "absolute-inside.mp3");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo.lrc"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let read = |relative: &str| -> std::io::Result<String> {
            let opened = open_inside(&root, Path::new(relative))?;
            let mut text = String::new();
            opened.file().take(1024).read_to_string(&mut text)?;
            Ok(text)
        };
        for relative in ["album/song.mp3", "inside.mp3", "album/relative-up.mp3"] {
            assert_eq!(read(relative).unwrap(), "audio", "{relative}");
        }
        for refused in [
            "escape.lrc",
            "environ.lrc",
            "zero.lrc",
            "fifo.lrc",
            "album",
            "../secret",
            "album/../../secret",
            "/etc/passwd",
            "missing.mp3",
        ] {
            assert!(read(refused).is_err(), "{refused} was read");
        }
        // An absolute link back into the folder is followed, as the walk does.
        assert_eq!(read("absolute-inside.mp3").unwrap(), "audio");
        // The path to the open file opens that very file, whatever the name does after.
        let opened = open_inside(&root, Path::new("album/song.mp3")).unwrap();
        std::fs::remove_file(root.join("album/song.mp3")).unwrap();
        std::fs::write(root.join("album/song.mp3"), "swapped").unwrap();
        assert_eq!(std::fs::read_to_string(opened.path()).unwrap(), "audio");
    }
}
