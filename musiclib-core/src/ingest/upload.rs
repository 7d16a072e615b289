//! `POST /tracks/upload`: stream the body to a staging file while hashing it, refuse it when
//! too large or not audio, and return the existing track when the same bytes were uploaded.

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::{title_from_file_name, Ingest};
use crate::auth::Caller;
use crate::catalog::{insert_track, NewTrack, Resolver};
use crate::domain::{Source, Track};
use crate::storage::layout;
use crate::{Error, Result, TrackId};

/// Result of an upload.
#[derive(Debug, Clone)]
pub struct UploadOutcome {
    /// The track holding these bytes.
    pub track: Track,
    /// False when the same content had been uploaded before.
    pub created: bool,
}

impl Ingest {
    /// Ingests an uploaded file read from `body`. The body is never held in memory whole: it
    /// is hashed on its way to a staging file, probed there and copied into place; a failure
    /// leaves neither a blob nor a row.
    pub async fn upload_track<R>(
        &self,
        caller: &Caller,
        file_name: Option<&str>,
        mut body: R,
    ) -> Result<UploadOutcome>
    where
        R: AsyncRead + Unpin + Send,
    {
        let limit = self.max_upload_bytes;
        let staging_dir = self.storage.staging_dir();
        let staging = tempfile::NamedTempFile::new_in(staging_dir)
            .map_err(|error| Error::io(staging_dir, error))?;
        let staging_path = staging.path().to_path_buf();
        let mut file = tokio::fs::File::from_std(
            staging
                .reopen()
                .map_err(|error| Error::io(&staging_path, error))?,
        );
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            // A client that goes away mid-body loses nothing: the staging file is removed on drop.
            let read = body.read(&mut buffer).await.map_err(|error| {
                Error::invalid("file", format!("the upload was interrupted: {error}"))
            })?;
            if read == 0 {
                break;
            }
            size += read as u64;
            if size > limit {
                return Err(Error::TooLarge { limit });
            }
            hasher.update(&buffer[..read]);
            // Stops short of filling the disk (the database shares it), before writing.
            crate::storage::ensure_room(staging_dir, read as u64)?;
            file.write_all(&buffer[..read])
                .await
                .map_err(|error| Error::io(&staging_path, error))?;
        }
        file.flush()
            .await
            .map_err(|error| Error::io(&staging_path, error))?;
        drop(file);
        if size == 0 {
            return Err(Error::invalid("file", "the file is empty"));
        }
        let sha256 = hex::encode(hasher.finalize());

        if let Some(track) = self.find_upload(&sha256).await? {
            return Ok(UploadOutcome {
                track,
                created: false,
            });
        }

        let name_hint = file_name.unwrap_or("upload").to_string();
        let probe_path = staging_path.clone();
        let hint = name_hint.clone();
        // The upload is already a file in staging: probe it there and copy it into place,
        // never holding it in memory (a server's memory stays flat however large the upload).
        let facts =
            tokio::task::spawn_blocking(move || crate::probe::probe_file(&probe_path, &hint))
                .await
                .map_err(Error::task("probe"))?
                .map_err(|message| Error::invalid("file", message))?;

        let track_id = TrackId::new();
        let key = layout::audio(&track_id, facts.format);
        self.storage.blobs().put_file(&key, &staging_path).await?;
        drop(staging);

        let new_track = NewTrack {
            id: track_id.clone(),
            facts,
            storage_uri: key.clone(),
            source: Source::Upload,
            source_id: sha256.clone(),
            size_bytes: size as i64,
            sha256: sha256.clone(),
            mtime: None,
            added_by: Some(caller.user.id.clone()),
            fallback_title: title_from_file_name(&name_hint),
        };
        let inserted = self.insert_uploaded(&new_track).await;
        match inserted {
            Ok(true) => {}
            Ok(false) => {
                // The same bytes won a race with this upload: keep theirs.
                self.storage.blobs().delete(&key).await?;
                let track = self
                    .find_upload(&sha256)
                    .await?
                    .ok_or_else(|| Error::not_found("track", &sha256))?;
                return Ok(UploadOutcome {
                    track,
                    created: false,
                });
            }
            Err(error) => {
                self.storage.delete_unreferenced([key]).await;
                return Err(error);
            }
        }
        tracing::info!(track_id = %track_id, user = %caller.user.username, size, "track uploaded");
        self.enqueue_enrichment(vec![track_id.clone()], Some(&caller.user.id))
            .await;
        Ok(UploadOutcome {
            track: self.catalog.get_track(&track_id).await?,
            created: true,
        })
    }

    async fn insert_uploaded(&self, track: &NewTrack) -> Result<bool> {
        let db = &self.db;
        let mut tx = db.begin().await?;
        let mut resolver = Resolver::new(db.clone());
        let inserted = insert_track(&mut tx, db, &mut resolver, track).await?;
        tx.commit().await?;
        Ok(inserted)
    }

    async fn find_upload(&self, sha256: &str) -> Result<Option<Track>> {
        let id: Option<String> = self
            .db
            .sql("SELECT id FROM tracks WHERE source = 'upload' AND source_id = $1")
            .bind(sha256)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        match id {
            Some(id) => self.catalog.find_track(&TrackId::from_db(id)).await,
            None => Ok(None),
        }
    }
}
