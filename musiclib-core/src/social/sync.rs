//! The sync protocol's pull (spec: sync rules 1–3): `GET /sync/changes?since=` answers the
//! window `(since, cursor]` of everything a client must apply: like and play events, the
//! caller's playlists, catalogue tracks, and deletions.
//!
//! Each of those changes carries a stamp from the sync clock (migration `0004_sync_clock`):
//! unique, increasing in commit order, from the database clock. The cursor is the clock's
//! committed value, so a change that commits after a pull always has a stamp above that
//! pull's cursor: no event is ever skipped, and none is sent twice (ARCHITECTURE.md, "Sync").

use super::events::{LikeEvent, LikeRow, PlayEvent, PlayRow};
use super::Social;
use crate::auth::Caller;
use crate::catalog::{TrackRow, TRACK_FIELDS};
use crate::domain::Track;
use crate::playlists::Playlist;
use crate::{Error, Result};

/// Default number of changes in one pull.
pub const DEFAULT_PULL_LIMIT: i64 = 1_000;
/// Largest number of changes in one pull.
pub const MAX_PULL_LIMIT: i64 = 5_000;

/// One page of changes for a sync client.
#[derive(Debug, Clone, Default)]
pub struct SyncChanges {
    /// Like events, by stamp.
    pub likes: Vec<LikeEvent>,
    /// Plays, by stamp.
    pub plays: Vec<PlayEvent>,
    /// The caller's playlists that changed, whole.
    pub playlists: Vec<Playlist>,
    /// Catalogue tracks that changed.
    pub tracks: Vec<Track>,
    /// Tracks deleted from the catalogue.
    pub deleted_tracks: Vec<String>,
    /// The caller's playlists that were deleted.
    pub deleted_playlists: Vec<String>,
    /// Pass as `since` next time.
    pub cursor: i64,
    /// Whether more changes wait past the cursor (pull again at once).
    pub has_more: bool,
}

/// A changed track and its stamp.
#[derive(sqlx::FromRow)]
struct StampedTrack {
    #[sqlx(flatten)]
    row: TrackRow,
    synced_at: i64,
}

impl Social {
    /// Where a client that has just read what it keeps starts pulling: the sync clock now,
    /// with no changes (a first pull from 0 lists the whole catalogue).
    pub async fn sync_cursor(&self, _caller: &Caller) -> Result<i64> {
        self.db.sync_clock().await
    }

    /// The caller's changes with stamps in `(since, cursor]`, at most
    /// `limit` of them (oldest first); `has_more` when the page stopped short of the clock.
    pub async fn sync_changes(
        &self,
        caller: &Caller,
        since: i64,
        limit: Option<i64>,
    ) -> Result<SyncChanges> {
        let limit = limit.unwrap_or(DEFAULT_PULL_LIMIT);
        if !(1..=MAX_PULL_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be between 1 and {MAX_PULL_LIMIT}"),
            ));
        }
        if since < 0 {
            return Err(Error::invalid(
                "since",
                "must be a cursor from an earlier pull, or 0",
            ));
        }
        // Smart playlists whose tracks the library's changes moved are written first, so
        // this pull (or the next) carries them as changed playlists.
        self.playlists.refresh_smart_of(&caller.user.id).await?;
        // The clock's committed value: every change stamped at or below it has committed.
        let pool = self.db.pool();
        let clock = self.db.sync_clock().await?;
        let until = clock.max(since);
        let user = caller.user.id.as_str();
        let fetch = limit + 1;
        let likes: Vec<LikeEvent> = self
            .db
            .sql(
                "SELECT track_id, liked, client_event_id, event_time, synced_at FROM like_events
                 WHERE user_id = $1 AND synced_at > $2 AND synced_at <= $3 ORDER BY synced_at LIMIT $4",
            )
            .bind(user)
            .bind(since)
            .bind(until)
            .bind(fetch)
            .fetch_all::<LikeRow, _>(pool)
            .await?
            .into_iter()
        .map(LikeEvent::from)
        .collect();
        let plays: Vec<PlayEvent> = self
            .db
            .sql(
                "SELECT track_id, played_at, seconds_played, client_event_id, synced_at FROM play_events
                 WHERE user_id = $1 AND synced_at > $2 AND synced_at <= $3 ORDER BY synced_at LIMIT $4",
            )
            .bind(user)
            .bind(since)
            .bind(until)
            .bind(fetch)
            .fetch_all::<PlayRow, _>(pool)
            .await?
            .into_iter()
        .map(PlayEvent::from)
        .collect();
        let playlists = self
            .playlists
            .changed(&caller.user.id, since, until, fetch)
            .await?;
        // The tracks whole, as the walk of the stamp index finds them: no second read of
        // each by its id.
        let tracks: Vec<StampedTrack> = self
            .db
            .sql(&format!(
                "SELECT {TRACK_FIELDS}, t.synced_at FROM tracks t
                 WHERE t.synced_at > $1 AND t.synced_at <= $2 ORDER BY t.synced_at LIMIT $3"
            ))
            .bind(since)
            .bind(until)
            .bind(fetch)
            .fetch_all(pool)
            .await?;
        let deleted: Vec<(String, String, i64)> = self
            .db
            .sql(
                "SELECT entity_kind, entity_id, synced_at FROM tombstones
                 WHERE synced_at > $1 AND synced_at <= $2
                   AND (entity_kind = 'track' OR (entity_kind = 'playlist' AND user_id = $3))
                 ORDER BY synced_at LIMIT $4",
            )
            .bind(since)
            .bind(until)
            .bind(user)
            .bind(fetch)
            .fetch_all(pool)
            .await?;

        // The page: the `limit` smallest stamps over every stream. Stamps are unique, so
        // cutting at one never splits a stamp between two pages.
        let mut stamps: Vec<i64> = likes
            .iter()
            .map(|like| like.synced_at)
            .chain(plays.iter().map(|play| play.synced_at))
            .chain(playlists.iter().map(|playlist| playlist.synced_at))
            .chain(tracks.iter().map(|track| track.synced_at))
            .chain(deleted.iter().map(|(_, _, stamp)| *stamp))
            .collect();
        stamps.sort_unstable();
        let (cursor, has_more) = if stamps.len() as i64 > limit {
            (stamps[limit as usize - 1], true)
        } else {
            (until, false)
        };
        let mut changes = SyncChanges {
            likes: likes
                .into_iter()
                .filter(|like| like.synced_at <= cursor)
                .collect(),
            plays: plays
                .into_iter()
                .filter(|play| play.synced_at <= cursor)
                .collect(),
            playlists: playlists
                .into_iter()
                .filter(|playlist| playlist.synced_at <= cursor)
                .collect(),
            tracks: tracks
                .into_iter()
                .filter(|track| track.synced_at <= cursor)
                .map(|track| Track::from(track.row))
                .collect(),
            deleted_tracks: Vec::new(),
            deleted_playlists: Vec::new(),
            cursor,
            has_more,
        };
        for (kind, id, stamp) in deleted {
            if stamp > cursor {
                continue;
            }
            match kind.as_str() {
                "track" => changes.deleted_tracks.push(id),
                _ => changes.deleted_playlists.push(id),
            }
        }
        Ok(changes)
    }
}
