//! Likes, play history and the sync protocol (spec: Likes/history/sync, sync rules 1–5,
//! Events).
//!
//! Likes and plays are append-only event logs. Every event carries its client's id, unique per
//! user, so pushing the same event again changes nothing. A track's like state is its latest
//! event by `event_time` (ties broken by the client event id), whatever order events arrived
//! in. Each change a client pulls (events, the user's playlists, catalogue tracks, deletions)
//! carries a stamp from the sync clock (migration `0004_sync_clock`): unique, increasing in
//! commit order, from the database clock. `GET /sync/changes?since=` answers the window
//! `(since, cursor]` where the cursor is the clock's committed value, so a change that commits
//! after a pull always has a stamp above that pull's cursor: no event is ever skipped, and
//! none is sent twice.

use crate::auth::Caller;
use crate::domain::{Page, Paged, Track};
use crate::playlists::Playlist;
use crate::{Error, Library, Result, Timestamp};

/// Events per insert statement of a push.
const PUSH_CHUNK: usize = 200;

/// `INSERT … VALUES` of `rows` rows of five parameters (the stamp column is 0, set by the
/// clock's trigger), skipping client ids already stored and returning the ids stored.
fn values_insert(head: &str, rows: usize) -> String {
    let mut query = String::from(head);
    for row in 0..rows {
        if row > 0 {
            query.push_str(", ");
        }
        query.push_str(&format!("({}, 0)", crate::db::placeholders(row * 5 + 1, 5)));
    }
    query.push_str(" ON CONFLICT (user_id, client_event_id) DO NOTHING RETURNING client_event_id");
    query
}

/// Longest client event id.
pub const MAX_CLIENT_EVENT_ID: usize = 200;
/// Most events in one push.
pub const MAX_PUSH_EVENTS: usize = 5_000;
/// Default and largest number of changes in one pull.
pub const DEFAULT_PULL_LIMIT: i64 = 1_000;
/// Largest number of changes in one pull.
pub const MAX_PULL_LIMIT: i64 = 5_000;

/// A like or unlike, as pushed.
#[derive(Debug, Clone, PartialEq)]
pub struct NewLike {
    /// The track.
    pub track_id: String,
    /// Liked (true) or unliked (false).
    pub liked: bool,
    /// The client's id of this event, unique per user.
    pub client_event_id: String,
    /// When the user did it (decides the like state).
    pub event_time: Timestamp,
}

/// A play, as pushed or posted to `/history`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPlay {
    /// The track.
    pub track_id: String,
    /// When it was played.
    pub played_at: Timestamp,
    /// How long it was listened to.
    pub seconds_played: Option<f64>,
    /// The client's id of this event, unique per user.
    pub client_event_id: String,
}

/// A stored like event.
#[derive(Debug, Clone, PartialEq)]
pub struct LikeEvent {
    /// The track.
    pub track_id: String,
    /// Liked or unliked.
    pub liked: bool,
    /// The client's id.
    pub client_event_id: String,
    /// When the user did it.
    pub event_time: Timestamp,
    /// Sync stamp (server ingestion order).
    pub synced_at: i64,
}

/// A stored play.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayEvent {
    /// The track.
    pub track_id: String,
    /// When it was played.
    pub played_at: Timestamp,
    /// How long it was listened to.
    pub seconds_played: Option<f64>,
    /// The client's id.
    pub client_event_id: String,
    /// Sync stamp (server ingestion order).
    pub synced_at: i64,
}

/// A track's current like state.
#[derive(Debug, Clone, PartialEq)]
pub struct LikeState {
    /// The track.
    pub track_id: String,
    /// Whether it is liked now.
    pub liked: bool,
    /// The event that decided it, if any.
    pub event_time: Option<Timestamp>,
}

/// A liked track (`GET /likes`).
#[derive(Debug, Clone, PartialEq)]
pub struct LikedTrack {
    /// The track.
    pub track_id: String,
    /// When it was liked.
    pub liked_at: Timestamp,
}

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PushOutcome {
    /// Events stored now.
    pub accepted: usize,
    /// Events whose client id was already stored (ignored).
    pub duplicates: usize,
    /// Client ids of events for tracks this server does not have (not stored).
    pub skipped: Vec<String>,
}

/// One page of `GET /sync/changes`.
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

fn check_event_id(id: &str, field: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if id.len() > MAX_CLIENT_EVENT_ID {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_CLIENT_EVENT_ID} bytes"),
        ));
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct LikeRow {
    track_id: String,
    liked: i64,
    client_event_id: String,
    event_time: i64,
    synced_at: i64,
}

impl From<LikeRow> for LikeEvent {
    fn from(row: LikeRow) -> Self {
        LikeEvent {
            track_id: row.track_id,
            liked: row.liked != 0,
            client_event_id: row.client_event_id,
            event_time: Timestamp::from_micros(row.event_time),
            synced_at: row.synced_at,
        }
    }
}

#[derive(sqlx::FromRow)]
struct PlayRow {
    track_id: String,
    played_at: i64,
    seconds_played: Option<f64>,
    client_event_id: String,
    synced_at: i64,
}

impl From<PlayRow> for PlayEvent {
    fn from(row: PlayRow) -> Self {
        PlayEvent {
            track_id: row.track_id,
            played_at: Timestamp::from_micros(row.played_at),
            seconds_played: row.seconds_played,
            client_event_id: row.client_event_id,
            synced_at: row.synced_at,
        }
    }
}

/// The latest like event per track wins: later `event_time`, then the larger client id.
pub(crate) const LATEST_LIKE: &str = "NOT EXISTS (SELECT 1 FROM like_events n WHERE n.user_id = l.user_id AND n.track_id = l.track_id
      AND (n.event_time > l.event_time OR (n.event_time = l.event_time AND n.client_event_id > l.client_event_id)))";

impl Library {
    /// `POST /likes`: appends a like event. Returns it and whether it was new (a repeated
    /// client id returns the stored event). An unknown track is not found.
    pub async fn record_like(&self, caller: &Caller, like: NewLike) -> Result<(LikeEvent, bool)> {
        check_event_id(&like.client_event_id, "client_event_id")?;
        let outcome = self
            .push_events(caller, vec![like.clone()], Vec::new())
            .await?;
        if !outcome.skipped.is_empty() {
            return Err(Error::not_found("track", &like.track_id));
        }
        let row: LikeRow = sqlx::query_as(
            "SELECT track_id, liked, client_event_id, event_time, synced_at FROM like_events
             WHERE user_id = $1 AND client_event_id = $2",
        )
        .bind(caller.user.id.as_str())
        .bind(&like.client_event_id)
        .fetch_one(self.db().pool())
        .await?;
        Ok((row.into(), outcome.accepted == 1))
    }

    /// `POST /history`: records a play. Returns it and whether it was new.
    pub async fn record_play(&self, caller: &Caller, play: NewPlay) -> Result<(PlayEvent, bool)> {
        check_event_id(&play.client_event_id, "client_event_id")?;
        let outcome = self
            .push_events(caller, Vec::new(), vec![play.clone()])
            .await?;
        if !outcome.skipped.is_empty() {
            return Err(Error::not_found("track", &play.track_id));
        }
        let row: PlayRow = sqlx::query_as(
            "SELECT track_id, played_at, seconds_played, client_event_id, synced_at FROM play_events
             WHERE user_id = $1 AND client_event_id = $2",
        )
        .bind(caller.user.id.as_str())
        .bind(&play.client_event_id)
        .fetch_one(self.db().pool())
        .await?;
        Ok((row.into(), outcome.accepted == 1))
    }

    /// `GET /likes`: the tracks liked now, most recently liked first.
    pub async fn liked_tracks(&self, caller: &Caller, page: Page) -> Result<Paged<LikedTrack>> {
        let filter = format!("l.user_id = $1 AND l.liked = 1 AND {LATEST_LIKE}");
        let total: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM like_events l WHERE {filter}"
        ))
        .bind(caller.user.id.as_str())
        .fetch_one(self.db().pool())
        .await?;
        let rows: Vec<(String, i64)> = sqlx::query_as(&format!(
            "SELECT l.track_id, l.event_time FROM like_events l WHERE {filter}
             ORDER BY l.event_time DESC, l.track_id LIMIT $2 OFFSET $3"
        ))
        .bind(caller.user.id.as_str())
        .bind(page.limit())
        .bind(page.offset())
        .fetch_all(self.db().pool())
        .await?;
        Ok(Paged {
            items: rows
                .into_iter()
                .map(|(track_id, at)| LikedTrack {
                    track_id,
                    liked_at: Timestamp::from_micros(at),
                })
                .collect(),
            total,
            page,
        })
    }

    /// `GET /likes/state`: the like state of each of `track_ids` (not liked when no event).
    pub async fn like_states(
        &self,
        caller: &Caller,
        track_ids: &[String],
    ) -> Result<Vec<LikeState>> {
        let mut latest = std::collections::HashMap::new();
        for chunk in track_ids.chunks(500) {
            let query = format!(
                "SELECT l.track_id, l.liked, l.event_time FROM like_events l
                 WHERE l.user_id = $1 AND l.track_id IN ({}) AND {LATEST_LIKE}",
                crate::db::placeholders(2, chunk.len())
            );
            let mut select =
                sqlx::query_as::<_, (String, i64, i64)>(&query).bind(caller.user.id.as_str());
            for id in chunk {
                select = select.bind(id.as_str());
            }
            for (track_id, liked, at) in select.fetch_all(self.db().pool()).await? {
                latest.insert(track_id, (liked != 0, Timestamp::from_micros(at)));
            }
        }
        Ok(track_ids
            .iter()
            .map(|track_id| {
                let found = latest.get(track_id);
                LikeState {
                    track_id: track_id.clone(),
                    liked: found.is_some_and(|(liked, _)| *liked),
                    event_time: found.map(|(_, at)| *at),
                }
            })
            .collect())
    }

    /// `GET /history`: plays, newest first.
    pub async fn history(&self, caller: &Caller, page: Page) -> Result<Paged<PlayEvent>> {
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM play_events WHERE user_id = $1")
            .bind(caller.user.id.as_str())
            .fetch_one(self.db().pool())
            .await?;
        let rows: Vec<PlayRow> = sqlx::query_as(
            "SELECT track_id, played_at, seconds_played, client_event_id, synced_at FROM play_events
             WHERE user_id = $1 ORDER BY played_at DESC, id DESC LIMIT $2 OFFSET $3",
        )
        .bind(caller.user.id.as_str())
        .bind(page.limit())
        .bind(page.offset())
        .fetch_all(self.db().pool())
        .await?;
        Ok(Paged {
            items: rows.into_iter().map(PlayEvent::from).collect(),
            total,
            page,
        })
    }

    /// `POST /sync/push`: appends like and play events in one transaction. A client id
    /// already stored is a duplicate (ignored, counted); an event for a track this server
    /// does not have is skipped and reported; malformed input rejects the whole push.
    pub async fn push_events(
        &self,
        caller: &Caller,
        likes: Vec<NewLike>,
        plays: Vec<NewPlay>,
    ) -> Result<PushOutcome> {
        if likes.len() + plays.len() > MAX_PUSH_EVENTS {
            return Err(Error::invalid(
                "events",
                format!("at most {MAX_PUSH_EVENTS} events per push"),
            ));
        }
        for (index, like) in likes.iter().enumerate() {
            check_event_id(
                &like.client_event_id,
                &format!("likes[{index}].client_event_id"),
            )?;
        }
        for (index, play) in plays.iter().enumerate() {
            check_event_id(
                &play.client_event_id,
                &format!("plays[{index}].client_event_id"),
            )?;
            if play
                .seconds_played
                .is_some_and(|seconds| !seconds.is_finite() || seconds < 0.0)
            {
                return Err(Error::invalid(
                    format!("plays[{index}].seconds_played"),
                    "must be a non-negative number",
                ));
            }
        }
        let wanted: Vec<&str> = likes
            .iter()
            .map(|like| like.track_id.as_str())
            .chain(plays.iter().map(|play| play.track_id.as_str()))
            .collect();
        let known =
            crate::db::known_tracks(&mut *self.db().pool().acquire().await?, &wanted).await?;
        let mut outcome = PushOutcome::default();
        let user = caller.user.id.as_str();
        let (likes, skipped): (Vec<&NewLike>, Vec<&NewLike>) = likes
            .iter()
            .partition(|like| known.contains(like.track_id.as_str()));
        outcome
            .skipped
            .extend(skipped.iter().map(|like| like.client_event_id.clone()));
        let (plays, skipped): (Vec<&NewPlay>, Vec<&NewPlay>) = plays
            .iter()
            .partition(|play| known.contains(play.track_id.as_str()));
        outcome
            .skipped
            .extend(skipped.iter().map(|play| play.client_event_id.clone()));
        // Multi-row inserts (one round trip per 200 events); a conflict on the client id is a
        // duplicate, including a repeat inside the same push.
        let mut tx = self.db().begin().await?;
        for chunk in likes.chunks(PUSH_CHUNK) {
            let query = values_insert(
                "INSERT INTO like_events (user_id, track_id, liked, client_event_id, event_time, synced_at) VALUES ",
                chunk.len(),
            );
            let mut insert = sqlx::query_scalar::<_, String>(&query);
            for like in chunk {
                insert = insert
                    .bind(user)
                    .bind(like.track_id.as_str())
                    .bind(i64::from(like.liked))
                    .bind(like.client_event_id.as_str())
                    .bind(like.event_time.as_micros());
            }
            let stored = insert.fetch_all(&mut *tx).await?.len();
            outcome.accepted += stored;
            outcome.duplicates += chunk.len() - stored;
        }
        for chunk in plays.chunks(PUSH_CHUNK) {
            let query = values_insert(
                "INSERT INTO play_events (user_id, track_id, played_at, seconds_played, client_event_id, synced_at) VALUES ",
                chunk.len(),
            );
            let mut insert = sqlx::query_scalar::<_, String>(&query);
            for play in chunk {
                insert = insert
                    .bind(user)
                    .bind(play.track_id.as_str())
                    .bind(play.played_at.as_micros())
                    .bind(play.seconds_played)
                    .bind(play.client_event_id.as_str());
            }
            let stored = insert.fetch_all(&mut *tx).await?.len();
            outcome.accepted += stored;
            outcome.duplicates += chunk.len() - stored;
        }
        tx.commit().await?;
        Ok(outcome)
    }

    /// `GET /sync/changes`: the caller's changes with stamps in `(since, cursor]`, at most
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
        // The clock's committed value: every change stamped at or below it has committed.
        let clock: i64 = sqlx::query_scalar("SELECT last_stamp FROM sync_clock WHERE id = 1")
            .fetch_one(self.db().pool())
            .await?;
        let until = clock.max(since);
        let user = caller.user.id.as_str();
        let fetch = limit + 1;
        let likes: Vec<LikeEvent> = sqlx::query_as::<_, LikeRow>(
            "SELECT track_id, liked, client_event_id, event_time, synced_at FROM like_events
             WHERE user_id = $1 AND synced_at > $2 AND synced_at <= $3 ORDER BY synced_at LIMIT $4",
        )
        .bind(user)
        .bind(since)
        .bind(until)
        .bind(fetch)
        .fetch_all(self.db().pool())
        .await?
        .into_iter()
        .map(LikeEvent::from)
        .collect();
        let plays: Vec<PlayEvent> = sqlx::query_as::<_, PlayRow>(
            "SELECT track_id, played_at, seconds_played, client_event_id, synced_at FROM play_events
             WHERE user_id = $1 AND synced_at > $2 AND synced_at <= $3 ORDER BY synced_at LIMIT $4",
        )
        .bind(user)
        .bind(since)
        .bind(until)
        .bind(fetch)
        .fetch_all(self.db().pool())
        .await?
        .into_iter()
        .map(PlayEvent::from)
        .collect();
        let playlists = self
            .playlists_changed(&caller.user.id, since, until, fetch)
            .await?;
        let tracks: Vec<(String, i64)> = sqlx::query_as(
            "SELECT id, synced_at FROM tracks WHERE synced_at > $1 AND synced_at <= $2 ORDER BY synced_at LIMIT $3",
        )
        .bind(since)
        .bind(until)
        .bind(fetch)
        .fetch_all(self.db().pool())
        .await?;
        let deleted: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT entity_kind, entity_id, synced_at FROM tombstones
             WHERE synced_at > $1 AND synced_at <= $2
               AND (entity_kind = 'track' OR (entity_kind = 'playlist' AND user_id = $3))
             ORDER BY synced_at LIMIT $4",
        )
        .bind(since)
        .bind(until)
        .bind(user)
        .bind(fetch)
        .fetch_all(self.db().pool())
        .await?;

        // The page: the `limit` smallest stamps over every stream. Stamps are unique, so
        // cutting at one never splits a stamp between two pages.
        let mut stamps: Vec<i64> = likes
            .iter()
            .map(|like| like.synced_at)
            .chain(plays.iter().map(|play| play.synced_at))
            .chain(playlists.iter().map(|playlist| playlist.synced_at))
            .chain(tracks.iter().map(|(_, stamp)| *stamp))
            .chain(deleted.iter().map(|(_, _, stamp)| *stamp))
            .collect();
        stamps.sort_unstable();
        let (cursor, has_more) = if stamps.len() as i64 > limit {
            (stamps[limit as usize - 1], true)
        } else {
            (until, false)
        };
        let track_ids: Vec<String> = tracks
            .into_iter()
            .filter(|(_, stamp)| *stamp <= cursor)
            .map(|(id, _)| id)
            .collect();
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
            tracks: self.tracks_in_order(&track_ids).await?,
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
