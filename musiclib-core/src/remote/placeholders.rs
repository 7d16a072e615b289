//! Placeholders: a remote hit saved as a track without audio (`POST /tracks/remote`).
//!
//! The source is asked for the item's metadata, and the track is inserted with
//! `availability` `placeholder`, an empty `storage_uri`, its artist and album resolved by name
//! like any track's (so a saved hit joins the album the library already has), and the
//! remote identity (source, id at the source) set on the artist and album when they have
//! none. One track per (source, source id): a second save answers the first's track, and
//! concurrent saves make one (the unique key decides; in one process they also wait for each
//! other, so the source is asked once).

use super::{Remote, RemoteHit, RemoteSource, METADATA_TIMEOUT};
use crate::auth::Caller;
use crate::catalog::writes::{self, Names, NewRow};
use crate::catalog::Resolver;
use crate::domain::Track;
use crate::{AlbumId, ArtistId, Error, Result, TrackId};

/// A saved hit.
#[derive(Debug, Clone)]
pub struct SavedTrack {
    /// The track (a placeholder, unless it had been downloaded before).
    pub track: Track,
    /// False when the library had it already.
    pub created: bool,
}

impl Remote {
    /// Saves a hit of `source` as a placeholder track (idempotent per source and id). Any
    /// signed-in user; the track is theirs to delete.
    pub async fn save(&self, caller: &Caller, source: &str, source_id: &str) -> Result<SavedTrack> {
        let source = self.enabled_source(source, "source")?.clone();
        source
            .check_id(source_id)
            .map_err(|message| Error::invalid("source_id", message))?;
        let key = (source.name().to_string(), source_id.to_string());
        self.saving
            .run(&key, async {
                if let Some(track) = self.find_track(source.name(), source_id).await? {
                    return Ok(SavedTrack {
                        track,
                        created: false,
                    });
                }
                let hit = self.metadata(source.as_ref(), source_id).await?;
                let (id, created) = self.insert_placeholder(caller, &hit).await?;
                Ok(SavedTrack {
                    track: self.catalog.get_track(&id).await?,
                    created,
                })
            })
            .await
    }

    /// The track of (source, source id), if the library has one.
    pub(super) async fn find_track(&self, source: &str, source_id: &str) -> Result<Option<Track>> {
        let id: Option<String> = self
            .db
            .sql("SELECT id FROM tracks WHERE source = $1 AND source_id = $2")
            .bind(super::track_source(source).as_str())
            .bind(source_id)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        match id {
            Some(id) => self.catalog.find_track(&TrackId::from_db(id)).await,
            None => Ok(None),
        }
    }

    /// One item's metadata, its failures as request errors.
    pub(super) async fn metadata(
        &self,
        source: &dyn RemoteSource,
        source_id: &str,
    ) -> Result<RemoteHit> {
        match tokio::time::timeout(METADATA_TIMEOUT, source.metadata(source_id)).await {
            Ok(Ok(hit)) => Ok(hit),
            Ok(Err(error)) => Err(error.into_error(source.name(), source_id)),
            Err(_) => Err(Error::Unavailable(format!(
                "the {} source did not describe {source_id} within {} s",
                source.name(),
                METADATA_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Inserts the placeholder of `hit`; answers its id and whether it is new (a concurrent
    /// save in another process may have won).
    async fn insert_placeholder(
        &self,
        caller: &Caller,
        hit: &RemoteHit,
    ) -> Result<(TrackId, bool)> {
        // A remote source's texts are as long as it likes: cut them as tags are.
        let capped = |text: &Option<String>| {
            text.as_deref()
                .map(crate::text::cap)
                .filter(|text| !text.is_empty())
        };
        let hit = &RemoteHit {
            title: match crate::text::cap(&hit.title) {
                title if title.is_empty() => hit.source_id.clone(),
                title => title,
            },
            artist: capped(&hit.artist),
            album: capped(&hit.album),
            album_artist: capped(&hit.album_artist),
            genre: capped(&hit.genre),
            ..hit.clone()
        };
        let db = &self.db;
        let source = super::track_source(&hit.source);
        let mut tx = db.begin().await?;
        let mut resolver = Resolver::new(db.clone());
        let description = Names {
            title: hit.title.clone(),
            artist: hit.artist.clone(),
            album: hit.album.clone(),
            album_artist: hit.album_artist.clone().or_else(|| hit.artist.clone()),
            genre: hit.genre.clone(),
            year: hit.year,
            track_number: hit.track_number,
            disc_number: None,
        }
        .resolve(&mut tx, &mut resolver)
        .await?;
        let (artist_id, album_id) = (&description.artist_id, &description.album_id);
        let id = TrackId::new();
        let row = NewRow {
            id: &id,
            description: &description,
            audio: None,
            announced_duration_ms: hit.duration_ms,
            source,
            source_id: &hit.source_id,
            source_mtime: None,
            added_by: Some(&caller.user.id),
            musicbrainz_recording_id: None,
        };
        let inserted = writes::insert(db, &mut tx, &row).await?;
        tx.commit().await?;
        if !inserted {
            let track = self
                .find_track(&hit.source, &hit.source_id)
                .await?
                .ok_or_else(|| Error::internal("a saved remote track vanished"))?;
            return Ok((track.id, false));
        }
        self.set_remote_identity(hit, artist_id.as_ref(), album_id.as_ref())
            .await;
        tracing::info!(track_id = %id, source = %hit.source, source_id = %hit.source_id, "remote track saved");
        Ok((id, true))
    }

    /// Sets the remote identity of the artist and album a hit resolved to, where they have
    /// none and no other record carries it (best effort: it describes, it decides nothing).
    async fn set_remote_identity(
        &self,
        hit: &RemoteHit,
        artist: Option<&ArtistId>,
        album: Option<&AlbumId>,
    ) {
        let source = super::track_source(&hit.source);
        for (table, id, remote_id) in [
            (
                "artists",
                artist.map(ArtistId::as_str),
                hit.artist_source_id.as_deref(),
            ),
            (
                "albums",
                album.map(AlbumId::as_str),
                hit.album_source_id.as_deref(),
            ),
        ] {
            let (Some(id), Some(remote_id)) = (id, remote_id) else {
                continue;
            };
            let result = self
                .db
                .sql(&format!(
                    "UPDATE {table} SET remote_source = $2, remote_source_id = $3, updated_at = {{now}}
                     WHERE id = $1 AND remote_source IS NULL
                       AND NOT EXISTS (SELECT 1 FROM {table} other WHERE other.remote_source = $2 AND other.remote_source_id = $3)"
                ))
                .bind(id)
                .bind(source.as_str())
                .bind(remote_id)
                .execute(self.db.pool())
                .await;
            if let Err(error) = result {
                tracing::debug!(table, error = %crate::error_chain(&error), "remote identity not set");
            }
        }
    }
}
