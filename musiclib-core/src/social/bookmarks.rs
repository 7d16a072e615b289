//! Bookmarks: a position in a track to resume from (audiobooks, long mixes), one per user
//! and track, kept until the user deletes it.

use super::Social;
use crate::auth::Caller;
use crate::domain::Track;
use crate::{Error, Result, Timestamp, TrackId};

/// Longest bookmark comment.
pub const MAX_BOOKMARK_COMMENT: usize = 1000;

/// A saved position in a track.
#[derive(Debug, Clone)]
pub struct Bookmark {
    /// The track.
    pub track: Track,
    /// Where, in ms from its start.
    pub position_ms: i64,
    /// The user's note.
    pub comment: Option<String>,
    /// When it was made.
    pub created_at: Timestamp,
    /// When it last moved.
    pub updated_at: Timestamp,
}

impl Social {
    /// Sets the caller's bookmark in `track` (a new one, or the old one moved).
    pub async fn set_bookmark(
        &self,
        caller: &Caller,
        track: &TrackId,
        position_ms: i64,
        comment: Option<&str>,
    ) -> Result<()> {
        if position_ms < 0 {
            return Err(Error::invalid("position", "must not be negative"));
        }
        if comment.is_some_and(|comment| comment.chars().count() > MAX_BOOKMARK_COMMENT) {
            return Err(Error::invalid(
                "comment",
                format!("must be at most {MAX_BOOKMARK_COMMENT} characters"),
            ));
        }
        self.catalog.get_track(track).await?;
        self.db
            .sql(&format!(
                "INSERT INTO bookmarks (user_id, track_id, position_ms, comment, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, {{now}}, {{now}}) {}",
                self.db
                    .kind()
                    .upsert("user_id, track_id", &["position_ms", "comment", "updated_at"])
            ))
            .bind(&caller.user.id)
            .bind(track)
            .bind(position_ms)
            .bind(comment)
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    /// The caller's bookmarks, most recently moved first.
    pub async fn bookmarks(&self, caller: &Caller) -> Result<Vec<Bookmark>> {
        type Row = (String, i64, Option<String>, i64, i64);
        let rows: Vec<Row> = self
            .db
            .sql(
                "SELECT track_id, position_ms, comment, created_at, updated_at FROM bookmarks
                 WHERE user_id = $1 ORDER BY updated_at DESC, track_id",
            )
            .bind(&caller.user.id)
            .fetch_all(self.db.pool())
            .await?;
        let ids: Vec<&str> = rows.iter().map(|row| row.0.as_str()).collect();
        let mut tracks: std::collections::HashMap<String, Track> = self
            .catalog
            .tracks_in_order(&ids)
            .await?
            .into_iter()
            .map(|track| (track.id.to_string(), track))
            .collect();
        Ok(rows
            .into_iter()
            .filter_map(|(id, position_ms, comment, created, updated)| {
                Some(Bookmark {
                    track: tracks.remove(&id)?,
                    position_ms,
                    comment,
                    created_at: Timestamp::from_micros(created),
                    updated_at: Timestamp::from_micros(updated),
                })
            })
            .collect())
    }

    /// Deletes the caller's bookmark in `track`; not found when there is none.
    pub async fn delete_bookmark(&self, caller: &Caller, track: &TrackId) -> Result<()> {
        let deleted = self
            .db
            .sql("DELETE FROM bookmarks WHERE user_id = $1 AND track_id = $2")
            .bind(&caller.user.id)
            .bind(track)
            .execute(self.db.pool())
            .await?;
        if deleted == 0 {
            return Err(Error::not_found("bookmark", track));
        }
        Ok(())
    }
}
