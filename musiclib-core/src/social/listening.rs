//! What the caller is listening to: now-playing entries (everyone's, for the legacy
//! interface's `getNowPlaying`) and the saved play queue, to resume on another device.

use std::collections::HashMap;

use super::Social;
use crate::auth::Caller;
use crate::catalog::ItemKind;
use crate::domain::Track;
use crate::{Error, Result, Timestamp, TrackId};

/// Most tracks in a saved play queue.
pub const MAX_QUEUE_TRACKS: usize = 5_000;

/// Someone playing something now.
#[derive(Debug, Clone)]
pub struct NowPlaying {
    /// Who.
    pub username: String,
    /// With which client.
    pub client: String,
    /// What.
    pub track: Track,
    /// Since when (the last report).
    pub since: Timestamp,
    /// The player's timeline, when it reports one (OpenSubsonic `playbackReport`).
    pub timeline: Option<Timeline>,
}

/// Where a player is in its track, from its last report.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Its state.
    pub state: PlaybackState,
    /// The position now: the one reported, moved on by the time since at the playback rate
    /// while playing (never past the track's end).
    pub position_ms: i64,
    /// The playback speed (1.0: normal).
    pub playback_rate: f64,
}

/// A player's state, as `reportPlayback` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaybackState {
    /// A new playback of the track begins.
    Starting,
    /// Playing.
    Playing,
    /// Paused.
    Paused,
    /// Stopped: the playback is over.
    Stopped,
}

impl PlaybackState {
    /// The state named `name` (`starting`, `playing`, `paused`, `stopped`).
    pub fn parse(name: &str) -> Result<PlaybackState> {
        match name {
            "starting" => Ok(PlaybackState::Starting),
            "playing" => Ok(PlaybackState::Playing),
            "paused" => Ok(PlaybackState::Paused),
            "stopped" => Ok(PlaybackState::Stopped),
            _ => Err(Error::invalid(
                "state",
                "must be starting, playing, paused or stopped",
            )),
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            PlaybackState::Starting => "starting",
            PlaybackState::Playing => "playing",
            PlaybackState::Paused => "paused",
            PlaybackState::Stopped => "stopped",
        }
    }
}

/// A player's report (OpenSubsonic `reportPlayback`).
#[derive(Debug, Clone, PartialEq)]
pub struct PlaybackReport {
    /// The track.
    pub track: TrackId,
    /// Its state.
    pub state: PlaybackState,
    /// The position in the track, in ms.
    pub position_ms: i64,
    /// The playback speed (default 1.0; more than 0, at most [`MAX_PLAYBACK_RATE`]).
    pub playback_rate: f64,
    /// Only the display: this report never counts a play.
    pub ignore_scrobble: bool,
}

/// The fastest playback rate a report may name.
pub const MAX_PLAYBACK_RATE: f64 = 16.0;

/// The player's row as a report finds it.
#[derive(sqlx::FromRow)]
struct PlaybackRow {
    track_id: String,
    state: Option<String>,
    position_ms: Option<i64>,
    playback_rate: Option<f64>,
    listened_ms: i64,
    playback_id: Option<String>,
    scrobbled: i64,
    updated_at: i64,
    now: i64,
}

/// A saved play queue, to resume on another device.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayQueue {
    /// The queue, in order.
    pub track_ids: Vec<TrackId>,
    /// The track playing when it was saved.
    pub current: Option<TrackId>,
    /// Its place in `track_ids` (a queue may hold a track twice): the one saved by index,
    /// else the first place of `current`.
    pub current_index: Option<usize>,
    /// Position in the current track, in ms.
    pub position_ms: i64,
    /// The client that saved it.
    pub changed_by: Option<String>,
    /// When it was saved.
    pub changed_at: Timestamp,
}

impl Social {
    /// Marks `track` as playing now for the caller on `client`.
    pub async fn set_now_playing(
        &self,
        caller: &Caller,
        client: &str,
        track: &TrackId,
    ) -> Result<()> {
        if self
            .known_items(ItemKind::Track, &[track.to_string()])
            .await?
            .is_empty()
        {
            return Err(Error::not_found("track", track));
        }
        self.db
            .sql(&format!(
                "INSERT INTO now_playing (user_id, client, track_id, updated_at, state, position_ms,
                 playback_rate, listened_ms, playback_id, scrobbled)
                 VALUES ($1, $2, $3, {{now}}, NULL, NULL, NULL, 0, NULL, 0) {}",
                // An entry without a timeline: a report's state is not carried onto it.
                self.db.kind().upsert(
                    "user_id, client",
                    &[
                        "track_id", "updated_at", "state", "position_ms", "playback_rate",
                        "listened_ms", "playback_id", "scrobbled",
                    ]
                )
            ))
            .bind(&caller.user.id)
            .bind(client.chars().take(100).collect::<String>())
            .bind(track)
            .execute(self.db.pool())
            .await?;
        self.forwarder.now_playing(&caller.user.id, track).await;
        Ok(())
    }

    /// What every user is playing: entries whose track could still be playing (its
    /// duration, or 10 minutes when unknown, plus a minute), newest first.
    pub async fn now_playing(&self) -> Result<Vec<NowPlaying>> {
        let live = "n.updated_at + (COALESCE(t.duration_ms, 600000) + 60000) * 1000 > {now}";
        type EntryRow = (
            String,
            String,
            String,
            i64,
            Option<String>,
            Option<i64>,
            Option<f64>,
            i64,
        );
        let entries: Vec<EntryRow> = self
            .db
            .sql(&format!(
                "SELECT n.track_id, u.username, n.client, n.updated_at, n.state, n.position_ms,
                 n.playback_rate, {{now}} AS now FROM now_playing n
                 JOIN users u ON u.id = n.user_id JOIN tracks t ON t.id = n.track_id
                 WHERE {live} ORDER BY n.updated_at DESC LIMIT 100"
            ))
            .fetch_all(self.db.pool())
            .await?;
        let ids: Vec<&str> = entries.iter().map(|(id, ..)| id.as_str()).collect();
        let tracks: HashMap<String, Track> = self
            .catalog
            .tracks_in_order(&ids)
            .await?
            .into_iter()
            .map(|track| (track.id.to_string(), track))
            .collect();
        Ok(entries
            .into_iter()
            .filter_map(
                |(id, username, client, since, state, position, rate, now)| {
                    let track = tracks.get(&id)?.clone();
                    let timeline = match (state.as_deref().map(PlaybackState::parse), position) {
                        (Some(Ok(state)), Some(position)) => {
                            let rate = rate.unwrap_or(1.0);
                            let moved = if state == PlaybackState::Playing {
                                ((now - since).max(0) as f64 / 1000.0 * rate) as i64
                            } else {
                                0
                            };
                            let end = track.duration_ms.unwrap_or(i64::MAX);
                            Some(Timeline {
                                state,
                                position_ms: position.saturating_add(moved).min(end),
                                playback_rate: rate,
                            })
                        }
                        _ => None,
                    };
                    Some(NowPlaying {
                        username,
                        client,
                        track,
                        since: Timestamp::from_micros(since),
                        timeline,
                    })
                },
            )
            .collect())
    }

    /// Records a player's report (OpenSubsonic `playbackReport`) for the caller on `client`:
    /// what `now_playing` shows, with its timeline, and the listening that makes a play.
    ///
    /// A playback begins with `starting`, with another track, or after `stopped`; within it,
    /// the time heard between two reports while playing is the wall time at the reported
    /// rate, never more than the position moved (a seek forward is not listening; a seek back
    /// counts nothing for that stretch). Once the playback has been heard for half the track
    /// or four minutes (the rule the Last.fm forwarding applies,
    /// [`crate::scrobbling::counts`]), it is recorded as a play, once, unless the report says
    /// `ignore_scrobble`; the play goes where a `scrobble` goes (history, scrobbling services).
    /// `stopped` ends the entry.
    pub async fn report_playback(
        &self,
        caller: &Caller,
        client: &str,
        report: PlaybackReport,
    ) -> Result<()> {
        if report.position_ms < 0 {
            return Err(Error::invalid("positionMs", "must not be negative"));
        }
        if !(report.playback_rate > 0.0 && report.playback_rate <= MAX_PLAYBACK_RATE) {
            return Err(Error::invalid(
                "playbackRate",
                format!("must be more than 0 and at most {MAX_PLAYBACK_RATE}"),
            ));
        }
        let track = self.catalog.get_track(&report.track).await?;
        let client: String = client.chars().take(100).collect();
        let mut tx = self.db.begin().await?;
        let previous: Option<PlaybackRow> = self
            .db
            .sql(&format!(
                "SELECT track_id, state, position_ms, playback_rate, listened_ms, playback_id,
                 scrobbled, updated_at, {{now}} AS now FROM now_playing
                 WHERE user_id = $1 AND client = $2{}",
                self.db.lock("now_playing")
            ))
            .bind(&caller.user.id)
            .bind(client.as_str())
            .fetch_optional(&mut *tx)
            .await?;
        let continuing = previous.as_ref().filter(|row| {
            row.track_id == report.track.as_str()
                && report.state != PlaybackState::Starting
                && row.playback_id.is_some()
                && row.state.as_deref() != Some("stopped")
        });
        let (mut listened_ms, playback_id, scrobbled) = match continuing {
            Some(row) => {
                let mut listened = row.listened_ms;
                if row.state.as_deref() == Some("playing") {
                    let wall_ms = (row.now - row.updated_at).max(0) as f64 / 1000.0;
                    let heard = (wall_ms * row.playback_rate.unwrap_or(1.0)) as i64;
                    let moved = (report.position_ms - row.position_ms.unwrap_or(0)).max(0);
                    listened = listened.saturating_add(heard.min(moved));
                }
                (
                    listened,
                    row.playback_id.clone().unwrap_or_default(),
                    crate::db::flag(row.scrobbled),
                )
            }
            None => (0, uuid::Uuid::now_v7().to_string(), false),
        };
        listened_ms = listened_ms.max(0);
        let counted = !scrobbled
            && !report.ignore_scrobble
            && crate::scrobbling::counts(
                crate::scrobbling::Service::Listenbrainz,
                Some(listened_ms as f64 / 1000.0),
                track.duration_ms,
            );
        if report.state == PlaybackState::Stopped {
            self.db
                .sql("DELETE FROM now_playing WHERE user_id = $1 AND client = $2")
                .bind(&caller.user.id)
                .bind(client.as_str())
                .execute(&mut *tx)
                .await?;
        } else {
            self.db
                .sql(&format!(
                    "INSERT INTO now_playing (user_id, client, track_id, updated_at, state,
                     position_ms, playback_rate, listened_ms, playback_id, scrobbled)
                     VALUES ($1, $2, $3, {{now}}, $4, $5, $6, $7, $8, $9) {}",
                    self.db.kind().upsert(
                        "user_id, client",
                        &[
                            "track_id",
                            "updated_at",
                            "state",
                            "position_ms",
                            "playback_rate",
                            "listened_ms",
                            "playback_id",
                            "scrobbled",
                        ]
                    )
                ))
                .bind(&caller.user.id)
                .bind(client.as_str())
                .bind(&report.track)
                .bind(report.state.as_str())
                .bind(report.position_ms)
                .bind(report.playback_rate)
                .bind(listened_ms)
                .bind(playback_id.as_str())
                .bind(i64::from(scrobbled))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        if continuing.is_none() && report.state != PlaybackState::Stopped {
            self.forwarder
                .now_playing(&caller.user.id, &report.track)
                .await;
        }
        if counted {
            // Stored as a play of its own, then marked on the entry: a failure between the two
            // is tried again by the next report, and the play's event id (the playback's)
            // makes the second push a duplicate, never a second play.
            let play = crate::domain::NewPlay {
                track_id: report.track.to_string(),
                played_at: Timestamp::now(),
                seconds_played: Some(listened_ms as f64 / 1000.0),
                client_event_id: format!("playback:{playback_id}"),
            };
            self.push_events(caller, Vec::new(), vec![play]).await?;
            self.db
                .sql(
                    "UPDATE now_playing SET scrobbled = 1
                     WHERE user_id = $1 AND client = $2 AND playback_id = $3",
                )
                .bind(&caller.user.id)
                .bind(client.as_str())
                .bind(playback_id.as_str())
                .execute(self.db.pool())
                .await?;
        }
        Ok(())
    }

    /// Saves the caller's play queue; an empty one clears it. `current` must be in the
    /// queue (default: its first track); where the queue holds it twice, its first place is
    /// meant (a client that plays the second saves by index:
    /// [`Social::save_play_queue_by_index`]).
    pub async fn save_play_queue(
        &self,
        caller: &Caller,
        track_ids: Vec<TrackId>,
        current: Option<TrackId>,
        position_ms: i64,
        client: Option<&str>,
    ) -> Result<()> {
        let index = match current {
            None => 0,
            Some(current) => match track_ids.iter().position(|id| *id == current) {
                Some(index) => index,
                None if track_ids.is_empty() => 0,
                None => {
                    return Err(Error::invalid(
                        "current",
                        "must be one of the queued tracks",
                    ))
                }
            },
        };
        self.store_play_queue(caller, track_ids, index, position_ms, client)
            .await
    }

    /// Saves the caller's play queue with its current entry by place (OpenSubsonic
    /// `indexBasedQueue`): a queue may hold a track twice. `current_index` (0-based) must be
    /// a place of the queue; it may be absent only for an empty queue, which clears it.
    pub async fn save_play_queue_by_index(
        &self,
        caller: &Caller,
        track_ids: Vec<TrackId>,
        current_index: Option<i64>,
        position_ms: i64,
        client: Option<&str>,
    ) -> Result<()> {
        let index = match current_index {
            None if track_ids.is_empty() => 0,
            None => return Err(Error::invalid("currentIndex", "is required with a queue")),
            Some(index) if index < 0 || index as usize >= track_ids.len().max(1) => {
                return Err(Error::invalid(
                    "currentIndex",
                    format!(
                        "must be between 0 and {} (the queue's length - 1)",
                        track_ids.len().saturating_sub(1)
                    ),
                ))
            }
            Some(index) => index as usize,
        };
        self.store_play_queue(caller, track_ids, index, position_ms, client)
            .await
    }

    async fn store_play_queue(
        &self,
        caller: &Caller,
        track_ids: Vec<TrackId>,
        current_index: usize,
        position_ms: i64,
        client: Option<&str>,
    ) -> Result<()> {
        if track_ids.is_empty() {
            self.db
                .sql("DELETE FROM play_queues WHERE user_id = $1")
                .bind(&caller.user.id)
                .execute(self.db.pool())
                .await?;
            return Ok(());
        }
        if track_ids.len() > MAX_QUEUE_TRACKS {
            return Err(Error::invalid(
                "id",
                format!("a play queue holds at most {MAX_QUEUE_TRACKS} tracks"),
            ));
        }
        if position_ms < 0 {
            return Err(Error::invalid("position", "must not be negative"));
        }
        let current = track_ids[current_index].clone();
        let ids: Vec<String> = track_ids.iter().map(|id| id.to_string()).collect();
        let known = self.known_items(ItemKind::Track, &ids).await?;
        if let Some(missing) = ids.iter().find(|id| !known.contains(*id)) {
            return Err(Error::not_found("track", missing));
        }
        self.db
            .sql(&format!(
                "INSERT INTO play_queues (user_id, track_ids, current_id, current_index, position_ms, changed_by, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, {{now}}) {}",
                self.db.kind().upsert(
                    "user_id",
                    &["track_ids", "current_id", "current_index", "position_ms", "changed_by", "updated_at"]
                )
            ))
            .bind(&caller.user.id)
            .bind(serde_json::to_string(&ids).expect("strings serialise"))
            .bind(&current)
            .bind(current_index as i64)
            .bind(position_ms)
            .bind(client.map(|client| client.chars().take(100).collect::<String>()))
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    /// The caller's saved play queue, if any.
    pub async fn play_queue(&self, caller: &Caller) -> Result<Option<PlayQueue>> {
        type QueueRow = (
            String,
            Option<String>,
            Option<i64>,
            i64,
            Option<String>,
            i64,
        );
        let row: Option<QueueRow> = self
            .db
            .sql(
                "SELECT track_ids, current_id, current_index, position_ms, changed_by, updated_at
                 FROM play_queues WHERE user_id = $1",
            )
            .bind(&caller.user.id)
            .fetch_optional(self.db.pool())
            .await?;
        let Some((ids, current, index, position_ms, changed_by, updated_at)) = row else {
            return Ok(None);
        };
        let ids: Vec<String> = serde_json::from_str(&ids)
            .map_err(|error| Error::internal_with("a stored play queue is malformed", error))?;
        // The stored place where it still names the current track; else its first place
        // (queues saved before places were stored).
        let current_index = match (&current, index) {
            (Some(current), Some(index))
                if usize::try_from(index).is_ok_and(|index| ids.get(index) == Some(current)) =>
            {
                Some(index as usize)
            }
            (Some(current), _) => ids.iter().position(|id| id == current),
            (None, _) => None,
        };
        Ok(Some(PlayQueue {
            track_ids: ids.into_iter().map(TrackId::from_db).collect(),
            current: current.map(TrackId::from_db),
            current_index,
            position_ms,
            changed_by,
            changed_at: Timestamp::from_micros(updated_at),
        }))
    }
}
