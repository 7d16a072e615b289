//! `musiclib backup DIR` and `musiclib restore DIR`: a copy of a library that can be put back
//! on a new machine, made while the server keeps running.
//!
//! A backup is a folder: the database (SQLite: `musiclib.db`, a consistent snapshot by
//! `VACUUM INTO`; PostgreSQL: `database.pgdump`, `pg_dump`'s custom format, itself one
//! snapshot), the generated secrets (`jwt_secret`, `legacy_secret_key`: without the second,
//! every stored app password and scrobbling credential is unreadable), the local storage's
//! media (`media/`, left out with S3, which keeps its own copies), and `musiclib-backup.json`
//! saying what it holds. The database is copied first and the media after: a file stored
//! while the backup runs is either in both or only among the media (an orphan the storage
//! cleanup removes); every track of the snapshot is checked to have its audio in the copy.
//! The folder is written under a temporary name beside `DIR` and renamed once complete, so a
//! backup that fails leaves nothing that looks whole.
//!
//! Restore puts a backup into the configured `DATA_DIR` (database, secrets, media), refusing
//! a target that already holds a library unless `--force`; a PostgreSQL backup goes into the
//! configured (empty) database with `pg_restore`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use musiclib_core::config::StorageConfig;
use musiclib_core::DatabaseKind;
use serde::{Deserialize, Serialize};

use crate::settings::RawSettings;

/// The file that says what a backup holds.
pub const MANIFEST: &str = "musiclib-backup.json";
/// The secrets a data directory generates.
const SECRETS: [&str; 2] = ["jwt_secret", "legacy_secret_key"];
/// Storage folders that hold work in progress, never a stored file.
const TRANSIENT: [&str; 2] = [".staging", "tmp"];

/// What a backup holds.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    /// This format's number.
    format: u32,
    /// The release that made it.
    version: String,
    /// Its database schema.
    schema: i64,
    /// `sqlite` or `postgres`.
    database: String,
    /// The database's file in the backup.
    database_file: String,
    /// `local` or `s3` (media copied for `local` only).
    storage: String,
    /// Media files and their bytes.
    media_files: u64,
    media_bytes: u64,
    /// Track files the database named that the storage did not have.
    #[serde(default)]
    missing_media: u64,
    /// The secrets copied.
    secrets: Vec<String>,
    /// When it was made (RFC 3339).
    created_at: String,
}

/// Where a library's parts are, from its settings.
struct Place {
    data_dir: PathBuf,
    database_url: String,
    kind: DatabaseKind,
    media_root: Option<PathBuf>,
}

impl Place {
    fn of(settings: &crate::settings::Settings) -> Result<Place> {
        let config = &settings.config;
        Ok(Place {
            data_dir: config.data_dir.clone(),
            database_url: config.database_url.clone(),
            kind: DatabaseKind::of_url(&config.database_url)?,
            media_root: match &config.storage {
                StorageConfig::Local { root } => Some(root.clone()),
                StorageConfig::S3(_) => None,
            },
        })
    }

    /// From the raw settings, without creating anything (restore looks at an empty place).
    fn of_raw(raw: &RawSettings) -> Result<Place> {
        let data_dir = PathBuf::from(raw.text("DATA_DIR"));
        let database_url = match raw.database_url()? {
            Some(url) => url.to_string(),
            None => musiclib_core::config::Config::embedded(&data_dir).database_url,
        };
        let media_root = match raw.text("STORAGE_BACKEND") {
            "s3" => None,
            _ => Some(raw.local_storage_root(&data_dir)),
        };
        Ok(Place {
            kind: DatabaseKind::of_url(&database_url)?,
            data_dir,
            database_url,
            media_root,
        })
    }

    /// The SQLite file.
    fn sqlite_path(&self) -> Result<PathBuf> {
        musiclib_core::sqlite_file(&self.database_url)
            .ok_or_else(|| anyhow!("DATABASE_URL names no database file"))
    }
}

/// `musiclib backup DIR`.
pub async fn backup(settings: crate::settings::Settings, dir: &Path) -> Result<()> {
    let place = Place::of(&settings)?;
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!(
            "{} is not empty: a backup goes into a new or empty folder",
            dir.display()
        );
    }
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".musiclib-backup-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let started = std::time::Instant::now();

    // The database first: the media copied after it holds every file it names.
    let (database_file, keys) = match place.kind {
        DatabaseKind::Sqlite => {
            let file = "musiclib.db";
            let keys =
                musiclib_core::sqlite_snapshot(&place.database_url, &staging.path().join(file))
                    .await
                    .context("cannot copy the database")?;
            (file, Some(keys))
        }
        DatabaseKind::Postgres => {
            let file = "database.pgdump";
            run(Command::new("pg_dump")
                .arg("--format=custom")
                .arg("--no-owner")
                .arg("--file")
                .arg(staging.path().join(file))
                .arg("--dbname")
                .arg(&place.database_url))
            .context("pg_dump (Debian: postgresql-client) could not copy the database")?;
            (file, None)
        }
    };

    let mut secrets = Vec::new();
    for name in SECRETS {
        let from = place.data_dir.join(name);
        if from.exists() {
            copy_private(&from, &staging.path().join(name))?;
            secrets.push(name.to_string());
        }
    }

    let (mut media_files, mut media_bytes, mut missing_media) = (0, 0, 0);
    if let Some(root) = &place.media_root {
        if root.exists() {
            (media_files, media_bytes) = copy_tree(root, &staging.path().join("media"))?;
        }
        if let Some(keys) = &keys {
            missing_media = keys
                .iter()
                .filter(|key| !staging.path().join("media").join(key).is_file())
                .count() as u64;
            if missing_media > 0 {
                eprintln!(
                    "musiclib: {missing_media} track file(s) the database names were already \
                     missing from the storage; the backup holds the rest (GET \
                     /api/v1/admin/storage lists broken files)"
                );
            }
        }
    }

    let manifest = Manifest {
        format: 1,
        version: env!("CARGO_PKG_VERSION").to_string(),
        schema: musiclib_core::schema_version(),
        database: match place.kind {
            DatabaseKind::Sqlite => "sqlite".into(),
            DatabaseKind::Postgres => "postgres".into(),
        },
        database_file: database_file.into(),
        storage: if place.media_root.is_some() {
            "local".into()
        } else {
            "s3".into()
        },
        media_files,
        media_bytes,
        missing_media,
        secrets,
        created_at: musiclib_core::Timestamp::now().to_rfc3339(),
    };
    std::fs::write(
        staging.path().join(MANIFEST),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
    sync_tree(staging.path())?;
    if dir.exists() {
        std::fs::remove_dir(dir)?;
    }
    let kept = staging.keep();
    std::fs::rename(&kept, dir)
        .with_context(|| format!("cannot name the backup {}", dir.display()))?;
    println!(
        "backed up the {} database, {} secret(s) and {} media file(s) ({:.1} MB) in {:.1} s",
        manifest.database,
        manifest.secrets.len(),
        media_files,
        media_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    println!("{}", dir.display());
    Ok(())
}

/// `musiclib restore DIR [--force]`.
pub async fn restore(raw: &RawSettings, dir: &Path, force: bool) -> Result<()> {
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(dir.join(MANIFEST)).with_context(|| {
            format!("{} is not a musiclib backup (no {MANIFEST})", dir.display())
        })?)
        .with_context(|| format!("{MANIFEST} is unreadable"))?;
    if manifest.format != 1 {
        bail!(
            "this backup's format {} is not one this release reads",
            manifest.format
        );
    }
    if manifest.schema > musiclib_core::schema_version() {
        bail!(
            "this backup has schema {} and this release makes {}: restore it with release {} or newer",
            manifest.schema,
            musiclib_core::schema_version(),
            manifest.version
        );
    }
    let place = Place::of_raw(raw)?;
    let started = std::time::Instant::now();
    match (manifest.database.as_str(), place.kind) {
        ("sqlite", DatabaseKind::Sqlite) | ("postgres", DatabaseKind::Postgres) => {}
        (theirs, _) => bail!(
            "this backup holds a {theirs} database and DATABASE_URL names another kind: set \
             DATABASE_URL to a {theirs} database"
        ),
    }

    // What is there already.
    let mut taken = Vec::new();
    for name in SECRETS {
        if place.data_dir.join(name).exists() {
            taken.push(place.data_dir.join(name));
        }
    }
    if place.kind == DatabaseKind::Sqlite && place.sqlite_path()?.exists() {
        taken.push(place.sqlite_path()?);
    }
    if let Some(root) = &place.media_root {
        if has_files(root)? {
            taken.push(root.clone());
        }
    }
    if place.kind == DatabaseKind::Postgres {
        let status = musiclib_core::schema_status(&place.database_url)
            .await
            .context("cannot reach the database")?;
        if status.applied > 0 {
            taken.push(PathBuf::from(musiclib_core::config::redact_url(
                &place.database_url,
            )));
        }
    }
    if !taken.is_empty() && !force {
        bail!(
            "the target already holds a library ({}): restore into an empty DATA_DIR and \
             database, or pass --force to replace it",
            taken
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    std::fs::create_dir_all(&place.data_dir)
        .with_context(|| format!("cannot create {}", place.data_dir.display()))?;
    match place.kind {
        DatabaseKind::Sqlite => {
            let target = place.sqlite_path()?;
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            // Old write-ahead files would be replayed into the restored file.
            for suffix in ["-wal", "-shm"] {
                let mut name = target.clone().into_os_string();
                name.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(name));
            }
            copy_replacing(&dir.join(&manifest.database_file), &target)?;
        }
        DatabaseKind::Postgres => {
            let mut command = Command::new("pg_restore");
            command.arg("--no-owner").arg("--exit-on-error");
            if force {
                command.arg("--clean").arg("--if-exists");
            }
            run(command
                .arg("--dbname")
                .arg(&place.database_url)
                .arg(dir.join(&manifest.database_file)))
            .context("pg_restore (Debian: postgresql-client) could not restore the database")?;
        }
    }
    for name in &manifest.secrets {
        let target = place.data_dir.join(name);
        let staged = place.data_dir.join(format!(".{name}.restoring"));
        copy_private(&dir.join(name), &staged)?;
        std::fs::rename(&staged, &target)?;
    }
    let mut restored = 0;
    if let (Some(root), true) = (&place.media_root, dir.join("media").exists()) {
        restored = copy_tree(&dir.join("media"), root)?.0;
    } else if manifest.storage == "local" && place.media_root.is_none() {
        eprintln!(
            "musiclib: this backup's media are local files and STORAGE_BACKEND is s3: copy {} \
             into the bucket",
            dir.join("media").display()
        );
    }
    println!(
        "restored the {} database (schema {}; the server migrates it to {} when it starts), {} \
         secret(s) and {} media file(s) into {} in {:.1} s",
        manifest.database,
        manifest.schema,
        musiclib_core::schema_version(),
        manifest.secrets.len(),
        restored,
        place.data_dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs an outside program, its error output in the error.
fn run(command: &mut Command) -> Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    if !output.status.success() {
        return Err(anyhow!(
            "{program} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

/// Copies the regular files under `from` into `to` (folders made as needed), leaving out
/// work in progress; a file copied under a temporary name and renamed, so an interrupted
/// copy leaves no half file under a real name. Answers the files and bytes copied.
fn copy_tree(from: &Path, to: &Path) -> Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for entry in kept(from) {
        let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
        let relative = entry.path().strip_prefix(from)?;
        let target = to.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)
                .with_context(|| format!("cannot create {}", target.display()))?;
        } else if entry.file_type().is_file() {
            match copy_replacing(entry.path(), &target) {
                Ok(copied) => {
                    files += 1;
                    bytes += copied;
                }
                // Removed while the backup ran (a cleanup): nothing the snapshot needs.
                Err(error) if !entry.path().exists() => {
                    tracing::debug!(error = %error, "a file went away during the copy");
                }
                Err(error) => return Err(error),
            }
        }
    }
    Ok((files, bytes))
}

/// Copies `from` to `to` through a temporary name beside it.
fn copy_replacing(from: &Path, to: &Path) -> Result<u64> {
    let parent = to.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let staged = tempfile::Builder::new()
        .prefix(".restoring-")
        .tempfile_in(parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    let copied = std::fs::copy(from, staged.path())
        .with_context(|| format!("cannot copy {}", from.display()))?;
    staged.as_file().sync_all()?;
    staged
        .persist(to)
        .map_err(|error| anyhow!("cannot write {}: {}", to.display(), error.error))?;
    Ok(copied)
}

/// Copies a secret, readable by its owner only.
fn copy_private(from: &Path, to: &Path) -> Result<()> {
    copy_replacing(from, to)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Whether a folder holds any file (work in progress aside).
fn has_files(root: &Path) -> Result<bool> {
    if !root.exists() {
        return Ok(false);
    }
    Ok(kept(root)
        .filter_map(|entry| entry.ok())
        .any(|entry| entry.file_type().is_file()))
}

/// The entries under `root`, work in progress left out (symlinks not followed).
fn kept(root: &Path) -> impl Iterator<Item = walkdir::Result<walkdir::DirEntry>> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|entry| {
            entry.depth() == 0 || !TRANSIENT.contains(&entry.file_name().to_string_lossy().as_ref())
        })
}

/// Flushes every file of a folder to disk.
fn sync_tree(root: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry?;
        if entry.file_type().is_file() || entry.file_type().is_dir() {
            if let Ok(file) = std::fs::File::open(entry.path()) {
                let _ = file.sync_all();
            }
        }
    }
    Ok(())
}
