//! Likes and plays: append-only event logs (spec: Likes/history/sync, sync rules 4–5).
//!
//! Every event carries its client's id, unique per user, so pushing the same event again
//! changes nothing. A track's like state is its latest event by `event_time` (ties broken by
//! the client event id), whatever order events arrived in. Inserting an event stamps it from
//! the sync clock (a trigger), which is what `super::sync` pulls by.

use super::Social;
use crate::auth::Caller;
use crate::catalog::MARK_STEP;
use crate::db::Table;
pub use crate::domain::NewPlay;
use crate::domain::{Page, Paged};
use crate::{Error, Result, Timestamp};

/// Events per insert statement of a push.
const PUSH_CHUNK: usize = 200;

/// Ends a push's `INSERT`: client ids already stored are skipped, and the ids stored now
/// are returned (a duplicate inside the same push is skipped too).
const SKIP_STORED: &str =
    " ON CONFLICT (user_id, client_event_id) DO NOTHING RETURNING client_event_id";

/// Longest client event id.
pub const MAX_CLIENT_EVENT_ID: usize = 200;
/// Most events in one push.
pub const MAX_PUSH_EVENTS: usize = 5_000;

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

/// A track the user likes now.
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

fn check_event_id(id: &str, field: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if id.chars().count() > MAX_CLIENT_EVENT_ID {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_CLIENT_EVENT_ID} characters"),
        ));
    }
    Ok(())
}

/// What a push must be before anything is read or written: at most [`MAX_PUSH_EVENTS`]
/// events, each with a client id, and plays with a non-negative finite length. Malformed
/// input rejects the whole push, naming the event.
pub(crate) fn check_push(likes: &[NewLike], plays: &[NewPlay]) -> Result<()> {
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
    Ok(())
}

#[derive(sqlx::FromRow)]
pub(super) struct LikeRow {
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
pub(super) struct PlayRow {
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
/// (One row comparison, so the later event is sought on `like_events_track`: written as an
/// `OR`, SQLite answered each branch from its own index, one of them a range over all of the
/// user's events, which made a list of 5,000 likes take seconds.)
pub(crate) const LATEST_LIKE: &str = "NOT EXISTS (SELECT 1 FROM like_events n WHERE n.user_id = l.user_id AND n.track_id = l.track_id
      AND (n.event_time, n.client_event_id) > (l.event_time, l.client_event_id))";

/// A user's current likes, as kept between requests: (track, liked at), newest first. They
/// are read at the user's newest like event stamp and the newest tombstone's.
pub(crate) type CurrentLikes = std::sync::Arc<Vec<(String, i64)>>;

/// A user's history as kept between requests, read at the user's newest play stamp: how many
/// plays there are and, once a deep page was wanted, the key (`played_at`, `id`) of every
/// [`MARK_STEP`]-th play, newest first. A page then skips fewer than [`MARK_STEP`] rows.
#[derive(Debug, Clone)]
pub(crate) struct HistoryPlaces {
    total: i64,
    marks: Option<std::sync::Arc<Vec<(i64, i64)>>>,
}

impl Social {
    /// Appends a like event. Returns it and whether it was new (a repeated
    /// client id returns the stored event). An unknown track is not found.
    pub async fn record_like(&self, caller: &Caller, like: NewLike) -> Result<(LikeEvent, bool)> {
        check_event_id(&like.client_event_id, "client_event_id")?;
        let outcome = self
            .push_events(caller, vec![like.clone()], Vec::new())
            .await?;
        if !outcome.skipped.is_empty() {
            return Err(Error::not_found("track", &like.track_id));
        }
        let row: LikeRow = self
            .db
            .sql(
                "SELECT track_id, liked, client_event_id, event_time, synced_at FROM like_events
                 WHERE user_id = $1 AND client_event_id = $2",
            )
            .bind(&caller.user.id)
            .bind(like.client_event_id.as_str())
            .fetch_optional(self.db.pool())
            .await?
            .ok_or_else(|| Error::internal("a pushed like event was not stored"))?;
        Ok((row.into(), outcome.accepted == 1))
    }

    /// Records a play. Returns it and whether it was new.
    pub async fn record_play(&self, caller: &Caller, play: NewPlay) -> Result<(PlayEvent, bool)> {
        check_event_id(&play.client_event_id, "client_event_id")?;
        let outcome = self
            .push_events(caller, Vec::new(), vec![play.clone()])
            .await?;
        if !outcome.skipped.is_empty() {
            return Err(Error::not_found("track", &play.track_id));
        }
        let row: PlayRow = self
            .db
            .sql(
                "SELECT track_id, played_at, seconds_played, client_event_id, synced_at FROM play_events
                 WHERE user_id = $1 AND client_event_id = $2",
            )
            .bind(&caller.user.id)
            .bind(play.client_event_id.as_str())
            .fetch_optional(self.db.pool())
            .await?
            .ok_or_else(|| Error::internal("a pushed play was not stored"))?;
        Ok((row.into(), outcome.accepted == 1))
    }

    /// The tracks the caller likes now, most recently liked first.
    pub async fn liked_tracks(&self, caller: &Caller, page: Page) -> Result<Paged<LikedTrack>> {
        let likes = self.current_likes(caller).await?;
        let skip = usize::try_from(page.offset()).unwrap_or(usize::MAX);
        let take = usize::try_from(page.limit()).unwrap_or(0);
        Ok(Paged {
            items: likes
                .iter()
                .skip(skip)
                .take(take)
                .map(|(track_id, at)| LikedTrack {
                    track_id: track_id.clone(),
                    liked_at: Timestamp::from_micros(*at),
                })
                .collect(),
            total: likes.len() as i64,
            page,
        })
    }

    /// The caller's current likes, newest first: kept in memory until the user's likes or
    /// the tracks change (a like event or a deletion moves the version, two index reads),
    /// as working them out means finding each track's newest event.
    pub(crate) async fn current_likes(&self, caller: &Caller) -> Result<CurrentLikes> {
        let user = caller.user.id.to_string();
        let version: (Option<i64>, Option<i64>) = self
            .db
            .sql(
                "SELECT (SELECT max(synced_at) FROM like_events WHERE user_id = $1) AS likes,
                        (SELECT max(synced_at) FROM tombstones) AS tombstones",
            )
            .bind(user.as_str())
            .fetch_optional(self.db.pool())
            .await?
            .unwrap_or_default();
        if let Some(kept) = self.likes.get(&user, &version) {
            return Ok(kept);
        }
        let rows: Vec<(String, i64)> = self
            .db
            .sql(&format!(
                "SELECT l.track_id, l.event_time FROM like_events l
                 WHERE l.user_id = $1 AND l.liked = 1 AND {LATEST_LIKE}
                 ORDER BY l.event_time DESC, l.track_id"
            ))
            .bind(user.as_str())
            .fetch_all(self.db.pool())
            .await?;
        let likes = CurrentLikes::new(rows);
        self.likes.insert(user, version, likes.clone());
        Ok(likes)
    }

    /// The like state of each of `track_ids` (not liked when there is no event).
    pub async fn like_states(
        &self,
        caller: &Caller,
        track_ids: &[String],
    ) -> Result<Vec<LikeState>> {
        let mut latest = std::collections::HashMap::new();
        for chunk in track_ids.chunks(crate::db::CHUNK) {
            let mut select = self.db.sql(
                "SELECT l.track_id, l.liked, l.event_time FROM like_events l WHERE l.user_id = $1",
            );
            select = select.bind(&caller.user.id);
            select
                .push(" AND l.track_id IN (")
                .push_list(chunk.iter().map(String::as_str))
                .push(&format!(") AND {LATEST_LIKE}"));
            let rows: Vec<(String, i64, i64)> = select.fetch_all(self.db.pool()).await?;
            for (track_id, liked, at) in rows {
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

    /// The caller's plays, newest first. A page at any offset is read by key from the
    /// nearest place kept for the user's history ([`HistoryPlaces`]), so the last page of a
    /// long history costs what the first does.
    pub async fn history(&self, caller: &Caller, page: Page) -> Result<Paged<PlayEvent>> {
        let user = caller.user.id.as_str();
        // The user's newest stamp: every play added moves it (plays are never changed, and
        // go only with their user).
        let version: Option<i64> = self
            .db
            .sql("SELECT max(synced_at) FROM play_events WHERE user_id = $1")
            .bind(user)
            .fetch_scalar(self.db.pool())
            .await?;
        let Some(version) = version else {
            return Ok(Paged {
                items: Vec::new(),
                total: 0,
                page,
            });
        };
        let places = match self.history_places.get(&user.to_string(), &version) {
            Some(places) if places.marks.is_some() || page.offset() < MARK_STEP => places,
            _ => {
                let places = self.find_history_places(user, page).await?;
                self.history_places
                    .insert(user.to_string(), version, places.clone());
                places
            }
        };
        let mut select = self
            .db
            .sql(
                "SELECT track_id, played_at, seconds_played, client_event_id, synced_at FROM play_events
             WHERE user_id = $1",
            )
            .bind(user);
        let mut skip = page.offset();
        if let Some(marks) = places.marks.as_ref().filter(|_| skip >= MARK_STEP) {
            let Some(&(played_at, id)) = marks.get((skip / MARK_STEP - 1) as usize) else {
                // Past the last place by a whole step: past the end.
                return Ok(Paged {
                    items: Vec::new(),
                    total: places.total,
                    page,
                });
            };
            // The key alone first, which SQLite seeks the index with; the row comparison
            // then drops the rows up to the place.
            let (played_at, id) = (select.arg(played_at), select.arg(id));
            select.push(&format!(
                " AND played_at <= {played_at} AND (played_at, id) < ({played_at}, {id})"
            ));
            skip %= MARK_STEP;
        }
        select.push(" ORDER BY played_at DESC, id DESC LIMIT ");
        select
            .push_bind(page.limit())
            .push(" OFFSET ")
            .push_bind(skip);
        let rows: Vec<PlayRow> = select.fetch_all(self.db.pool()).await?;
        Ok(Paged {
            items: rows.into_iter().map(PlayEvent::from).collect(),
            total: places.total,
            page,
        })
    }

    /// Counts the user's plays and, for a page at least [`MARK_STEP`] deep, finds the key of
    /// every [`MARK_STEP`]-th one (one walk of `play_events_played`).
    async fn find_history_places(&self, user: &str, page: Page) -> Result<HistoryPlaces> {
        let total: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM play_events WHERE user_id = $1")
            .bind(user)
            .fetch_scalar(self.db.pool())
            .await?;
        let marks = if page.offset() >= MARK_STEP {
            let marks: Vec<(i64, i64)> = self
                .db
                .sql(&format!(
                    "SELECT played_at, id FROM (
                         SELECT played_at, id,
                                ROW_NUMBER() OVER (ORDER BY played_at DESC, id DESC) AS n
                         FROM play_events WHERE user_id = $1) numbered
                     WHERE n % {MARK_STEP} = 0 ORDER BY n"
                ))
                .bind(user)
                .fetch_all(self.db.pool())
                .await?;
            Some(std::sync::Arc::new(marks))
        } else {
            None
        };
        Ok(HistoryPlaces { total, marks })
    }

    /// Appends a device's like and play events in one transaction. A client id
    /// already stored is a duplicate (ignored, counted); an event for a track this server
    /// does not have is skipped and reported; malformed input rejects the whole push.
    pub async fn push_events(
        &self,
        caller: &Caller,
        likes: Vec<NewLike>,
        plays: Vec<NewPlay>,
    ) -> Result<PushOutcome> {
        check_push(&likes, &plays)?;
        let wanted: Vec<&str> = likes
            .iter()
            .map(|like| like.track_id.as_str())
            .chain(plays.iter().map(|play| play.track_id.as_str()))
            .collect();
        let known = crate::db::known_ids(
            &mut *self.db.pool().acquire().await?,
            self.db.kind(),
            Table::Tracks,
            &wanted,
        )
        .await?;
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
        // The stamp column is 0 here: the sync clock's trigger sets it.
        let mut tx = self.db.begin().await?;
        for chunk in likes.chunks(PUSH_CHUNK) {
            let mut insert = self.db.sql(
                "INSERT INTO like_events (user_id, track_id, liked, client_event_id, event_time, synced_at) VALUES ",
            );
            insert
                .push_values(chunk, |row, like| {
                    row.bind(user)
                        .bind(like.track_id.as_str())
                        .bind(like.liked)
                        .bind(like.client_event_id.as_str())
                        .bind(like.event_time.as_micros())
                        .raw("0");
                })
                .push(SKIP_STORED);
            let stored = insert.fetch_scalars::<String, _>(&mut *tx).await?.len();
            outcome.accepted += stored;
            outcome.duplicates += chunk.len() - stored;
        }
        let mut stored_plays = std::collections::HashSet::new();
        for chunk in plays.chunks(PUSH_CHUNK) {
            let mut insert = self.db.sql(
                "INSERT INTO play_events (user_id, track_id, played_at, seconds_played, client_event_id, synced_at) VALUES ",
            );
            insert
                .push_values(chunk, |row, play| {
                    row.bind(user)
                        .bind(play.track_id.as_str())
                        .bind(play.played_at.as_micros())
                        .bind(play.seconds_played)
                        .bind(play.client_event_id.as_str())
                        .raw("0");
                })
                .push(SKIP_STORED);
            let stored = insert.fetch_scalars::<String, _>(&mut *tx).await?;
            outcome.accepted += stored.len();
            outcome.duplicates += chunk.len() - stored.len();
            stored_plays.extend(stored);
        }
        // Plays stored now (never a repeat) are queued for scrobbling in the same
        // transaction, so none is lost and none is forwarded twice.
        let new_plays: Vec<&NewPlay> = plays
            .iter()
            .copied()
            .filter(|play| stored_plays.remove(&play.client_event_id))
            .collect();
        let scrobble_to = self
            .forwarder
            .queue_plays(&mut tx, &caller.user.id, &new_plays)
            .await?;
        tx.commit().await?;
        self.forwarder.wake(&caller.user.id, &scrobble_to).await;
        Ok(outcome)
    }
}
