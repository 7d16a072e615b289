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
    /// Since when.
    pub since: Timestamp,
}

/// A saved play queue, to resume on another device.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayQueue {
    /// The queue, in order.
    pub track_ids: Vec<TrackId>,
    /// The track playing when it was saved.
    pub current: Option<TrackId>,
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
                "INSERT INTO now_playing (user_id, client, track_id, updated_at) VALUES ($1, $2, $3, {{now}}) {}",
                self.db.kind().upsert("user_id, client", &["track_id", "updated_at"])
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
        let entries: Vec<(String, String, String, i64)> = self
            .db
            .sql(&format!(
                "SELECT n.track_id, u.username, n.client, n.updated_at FROM now_playing n
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
            .filter_map(|(id, username, client, since)| {
                Some(NowPlaying {
                    username,
                    client,
                    track: tracks.get(&id)?.clone(),
                    since: Timestamp::from_micros(since),
                })
            })
            .collect())
    }

    /// Saves the caller's play queue; an empty one clears it. `current` must be in the
    /// queue (default: its first track).
    pub async fn save_play_queue(
        &self,
        caller: &Caller,
        track_ids: Vec<TrackId>,
        current: Option<TrackId>,
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
        let current = match current {
            Some(current) if !track_ids.contains(&current) => {
                return Err(Error::invalid(
                    "current",
                    "must be one of the queued tracks",
                ))
            }
            Some(current) => current,
            None => track_ids[0].clone(),
        };
        let ids: Vec<String> = track_ids.iter().map(|id| id.to_string()).collect();
        let known = self.known_items(ItemKind::Track, &ids).await?;
        if let Some(missing) = ids.iter().find(|id| !known.contains(*id)) {
            return Err(Error::not_found("track", missing));
        }
        self.db
            .sql(&format!(
                "INSERT INTO play_queues (user_id, track_ids, current_id, position_ms, changed_by, updated_at)
                 VALUES ($1, $2, $3, $4, $5, {{now}}) {}",
                self.db.kind().upsert(
                    "user_id",
                    &["track_ids", "current_id", "position_ms", "changed_by", "updated_at"]
                )
            ))
            .bind(&caller.user.id)
            .bind(serde_json::to_string(&ids).expect("strings serialise"))
            .bind(&current)
            .bind(position_ms)
            .bind(client.map(|client| client.chars().take(100).collect::<String>()))
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    /// The caller's saved play queue, if any.
    pub async fn play_queue(&self, caller: &Caller) -> Result<Option<PlayQueue>> {
        type QueueRow = (String, Option<String>, i64, Option<String>, i64);
        let row: Option<QueueRow> = self
            .db
            .sql(
                "SELECT track_ids, current_id, position_ms, changed_by, updated_at FROM play_queues WHERE user_id = $1",
            )
            .bind(&caller.user.id)
            .fetch_optional(self.db.pool())
            .await?;
        let Some((ids, current, position_ms, changed_by, updated_at)) = row else {
            return Ok(None);
        };
        let ids: Vec<String> = serde_json::from_str(&ids)
            .map_err(|error| Error::internal_with("a stored play queue is malformed", error))?;
        Ok(Some(PlayQueue {
            track_ids: ids.into_iter().map(TrackId::from_db).collect(),
            current: current.map(TrackId::from_db),
            position_ms,
            changed_by,
            changed_at: Timestamp::from_micros(updated_at),
        }))
    }
}
