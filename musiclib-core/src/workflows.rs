//! Workflows that cross services ([`Workflows`], reached through the methods of
//! [`crate::Library`] of the same names): each opens one transaction, asks every service
//! involved for its part inside it, commits, then lets each clean up after the commit (caches,
//! blobs). One place to read what a deletion touches.

use crate::auth::{Accounts, Caller};
use crate::catalog::Catalog;
use crate::db::Db;
use crate::ingest::{Ingest, SourceInfo};
use crate::media::{Delivery, Media, Want};
use crate::playlists::Playlists;
use crate::remote::Remote;
use crate::storage::Storage;
use crate::{Error, Result, TrackId, UserId};

/// Every source: the ingest ones (upload, the local folder), then the remote ones, each
/// enabled or not (an enabled remote source is asked whether it answers).
pub(crate) async fn sources(ingest: &Ingest, remote: &Remote) -> Result<Vec<SourceInfo>> {
    let mut sources = ingest.sources().await?;
    for info in remote.sources().await? {
        sources.push(SourceInfo {
            source: crate::remote::track_source(info.name),
            enabled: info.enabled,
            scannable: false,
            path: None,
            searchable: info.enabled,
            available: info.available,
            detail: info.detail,
            track_count: info.track_count,
        });
    }
    Ok(sources)
}

/// The services the workflows cross.
#[derive(Clone, Debug)]
pub struct Workflows {
    pub(crate) db: Db,
    pub(crate) storage: Storage,
    pub(crate) accounts: Accounts,
    pub(crate) catalog: Catalog,
    pub(crate) media: Media,
    pub(crate) playlists: Playlists,
    pub(crate) ingest: Ingest,
    pub(crate) remote: Remote,
}

impl Workflows {
    /// Every source (`GET /sources`): upload, the local folder, and each remote source.
    /// Any signed-in user.
    pub async fn sources(&self, _caller: &Caller) -> Result<Vec<SourceInfo>> {
        sources(&self.ingest, &self.remote).await
    }

    /// Opens a track's audio for a media request ([`Media::open`] decides what to send).
    /// A placeholder is fetched first when `want` waits for it, at most that long (a
    /// Subsonic app can only play what `stream` sends); otherwise it is a conflict.
    pub async fn open_audio(&self, caller: &Caller, id: &TrackId, want: &Want) -> Result<Delivery> {
        match self.media.open(caller, id, want).await {
            Err(Error::NotMaterialized(_)) if want.wait_for_placeholder.is_some() => {
                let wait = want.wait_for_placeholder.unwrap_or_default();
                self.remote.materialize_and_wait(caller, id, wait).await?;
                self.media.open(caller, id, want).await
            }
            other => other,
        }
    }

    /// Deletes a track (the uploader or an admin): its row with a tombstone
    /// for sync clients, its album and artist when it leaves them empty, its place in every
    /// playlist (each a recorded remove), its renditions; after commit, its cached rows and
    /// its blobs (audio, renditions, the dropped album's cover).
    ///
    /// Rows go before blobs, so no row ever points at a missing blob; a blob whose delete
    /// fails is an orphan for cleanup to reclaim.
    pub async fn delete_track(&self, caller: &Caller, id: &TrackId) -> Result<()> {
        let mut tx = self.db.begin().await?;
        // The track's row is locked first and the sync clock stamped last (the playlist
        // changes and the tombstone stamp it): the lock order every write keeps.
        let track = self.catalog.lock_for_change(&mut tx, caller, id).await?;
        let rendition_keys = self.media.delete_renditions(&mut tx, id).await?;
        self.playlists.remove_track_everywhere(&mut tx, id).await?;
        let dropped_cover = self.catalog.delete_locked_track(&mut tx, &track).await?;
        tx.commit().await?;
        self.media.forget_track(id);
        self.catalog.remove_dropped_cover(dropped_cover).await;
        self.storage
            .delete_unreferenced(std::iter::once(track.storage_uri).chain(rendition_keys))
            .await;
        Ok(())
    }

    /// Deletes an account (an admin, never their own). Its personal data goes with it:
    /// playlists (and their covers), its picture, likes, plays, stars and ratings, play
    /// queue, settings. The tracks it uploaded stay in the shared library, with no uploader
    /// (so only admins may change them); jobs it queued run on.
    pub async fn delete_user(&self, caller: &Caller, id: &UserId) -> Result<()> {
        caller.may_administer_account(id)?;
        let mut tx = self.db.begin().await?;
        let covers = self.playlists.cover_keys_of_owner(&mut tx, id).await?;
        // The picture's blob (`avatars`) goes once the row pointing at it is gone.
        let avatar: Option<Option<String>> = self
            .db
            .sql("SELECT avatar_uri FROM users WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(&mut *tx)
            .await?;
        self.accounts.delete_in(&mut tx, id).await?;
        tx.commit().await?;
        self.accounts.forget_deleted();
        self.storage
            .delete_unreferenced(covers.into_iter().chain(avatar.flatten()))
            .await;
        Ok(())
    }
}
