//! The caller's marks on items: stars and ratings (the legacy interface's annotations).
//!
//! A star on a track is a like: starring writes a like event to the same log as
//! `POST /likes`, so a star from a Subsonic app reaches the user's offline clients through
//! `/sync/changes`. Stars on albums and artists, and ratings of anything, live in
//! `annotations`.

use std::collections::{HashMap, HashSet};

use super::events::{NewLike, LATEST_LIKE};
use super::Social;
use crate::auth::Caller;
use crate::catalog::{
    album_select, AlbumRow, ArtistRow, ItemKind, TrackRow, ARTIST_SELECT, TRACK_SELECT,
};
use crate::db::{known_ids, Table, CHUNK};
use crate::domain::{Album, Artist, Track};
use crate::{Error, Result, Timestamp};

/// Most starred items of each kind listed.
const MAX_STARRED: i64 = 10_000;

/// A user's marks on one item.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotation {
    /// When it was starred (liked, for a track), if it is.
    pub starred_at: Option<Timestamp>,
    /// Rating 1–5, if rated.
    pub rating: Option<i64>,
    /// How often the user played it (an album: its tracks).
    pub play_count: i64,
    /// When the user last played it.
    pub last_played: Option<Timestamp>,
}

/// The caller's starred items, most recently starred first.
#[derive(Debug, Clone, Default)]
pub struct Starred {
    /// Starred artists.
    pub artists: Vec<Artist>,
    /// Starred albums.
    pub albums: Vec<Album>,
    /// Liked tracks.
    pub tracks: Vec<Track>,
}

/// A user's plays of each track, or of each album's tracks: (count, last played).
pub(crate) type Tally = std::sync::Arc<HashMap<String, (i64, i64)>>;

/// What a [`Tally`] was read at: the user's newest play stamp, the newest tombstone's (a
/// deleted track takes its plays with it) and the newest track stamp (a track moved to
/// another album).
pub(crate) type TallyVersion = (Option<i64>, Option<i64>, Option<i64>);

impl Social {
    /// The caller's marks on items of `kind`, by id (items without marks are absent).
    pub async fn annotations(
        &self,
        caller: &Caller,
        kind: ItemKind,
        ids: &[String],
    ) -> Result<HashMap<String, Annotation>> {
        let user = caller.user.id.to_string();
        let mut found: HashMap<String, Annotation> = HashMap::new();
        if ids.is_empty() {
            return Ok(found);
        }
        let mut marks: Vec<(String, Option<i64>, Option<i64>)> = Vec::new();
        for chunk in ids.chunks(CHUNK) {
            let mut select = self
                .db
                .sql(
                    "SELECT item_id, starred_at, rating FROM annotations
                     WHERE user_id = $1 AND item_kind = $2 AND item_id",
                )
                .bind(user.as_str())
                .bind(kind.as_str());
            select.push_in(chunk.iter().map(String::as_str));
            marks.extend(
                select
                    .fetch_all::<(String, Option<i64>, Option<i64>), _>(self.db.pool())
                    .await?,
            );
        }
        for (id, starred_at, rating) in marks {
            let entry = found.entry(id).or_default();
            entry.rating = rating.filter(|rating| *rating > 0);
            if kind != ItemKind::Track {
                entry.starred_at = starred_at.map(Timestamp::from_micros);
            }
        }
        if matches!(kind, ItemKind::Track | ItemKind::Album) {
            let tally = self.play_tally(caller, kind).await?;
            for id in ids {
                if let Some((count, last)) = tally.get(id) {
                    let entry = found.entry(id.clone()).or_default();
                    entry.play_count = *count;
                    entry.last_played = Some(Timestamp::from_micros(*last));
                }
            }
        }
        if kind == ItemKind::Track {
            let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
            for (track_id, liked_at) in self.current_likes(caller).await?.iter() {
                if wanted.contains(track_id.as_str()) {
                    found.entry(track_id.clone()).or_default().starred_at =
                        Some(Timestamp::from_micros(*liked_at));
                }
            }
        }
        Ok(found)
    }

    /// The caller's plays per track (`kind` Track) or per album (Album), kept in memory
    /// until the user plays something or the tracks change: a page of 500 songs or albums
    /// then costs three index reads instead of a join over the page's plays.
    async fn play_tally(&self, caller: &Caller, kind: ItemKind) -> Result<Tally> {
        let user = caller.user.id.to_string();
        let version: TallyVersion = self
            .db
            .sql(
                "SELECT (SELECT max(synced_at) FROM play_events WHERE user_id = $1) AS plays,
                        (SELECT max(synced_at) FROM tombstones) AS tombstones,
                        (SELECT max(synced_at) FROM tracks) AS tracks",
            )
            .bind(user.as_str())
            .fetch_optional(self.db.pool())
            .await?
            .unwrap_or_default();
        let key = (user, kind);
        if let Some(kept) = self.tallies.get(&key, &version) {
            return Ok(kept);
        }
        // One count per user and kind at a time: the requests a client sends at once all
        // miss, and each count walks all of the user's plays (275 ms for 20,000 plays at
        // 1,000,000 tracks); those after the first find it kept.
        self.tallying
            .run(&key, async {
                if let Some(kept) = self.tallies.get(&key, &version) {
                    return Ok(kept);
                }
                self.count_plays(key.clone(), version).await
            })
            .await
    }

    /// Counts the caller's plays per track or per album ([`Social::play_tally`]) and keeps
    /// the count at `version`.
    async fn count_plays(&self, key: (String, ItemKind), version: TallyVersion) -> Result<Tally> {
        let kind = key.1;
        let query = match kind {
            ItemKind::Album => format!(
                "SELECT t.album_id, COUNT(*), MAX(p.played_at) FROM play_events p
                 JOIN {} ON t.id = p.track_id
                 WHERE p.user_id = $1 AND t.album_id IS NOT NULL GROUP BY t.album_id",
                self.db.kind().tracks_by_id_covered()
            ),
            _ => "SELECT track_id, COUNT(*), MAX(played_at) FROM play_events
                  WHERE user_id = $1 GROUP BY track_id"
                .to_string(),
        };
        let rows: Vec<(String, i64, i64)> = self
            .db
            .sql(&query)
            .bind(key.0.as_str())
            .fetch_all(self.db.pool())
            .await?;
        let tally: Tally = std::sync::Arc::new(
            rows.into_iter()
                .map(|(id, count, last)| (id, (count, last)))
                .collect(),
        );
        self.tallies.insert(key, version, tally.clone());
        Ok(tally)
    }

    /// Stars (`starred`) or unstars items of `kind`. Tracks become liked or unliked (a like
    /// event, synced to the user's devices); albums and artists are marked. An unknown id is
    /// not found, and nothing is changed.
    pub async fn star(
        &self,
        caller: &Caller,
        kind: ItemKind,
        ids: &[String],
        starred: bool,
    ) -> Result<()> {
        match kind {
            ItemKind::Track => {
                let now = Timestamp::now();
                let likes = ids
                    .iter()
                    .map(|id| NewLike {
                        track_id: id.clone(),
                        liked: starred,
                        client_event_id: format!("legacy-star-{}", uuid::Uuid::new_v4()),
                        event_time: now,
                    })
                    .collect::<Vec<_>>();
                let known = self.known_items(ItemKind::Track, ids).await?;
                if let Some(missing) = ids.iter().find(|id| !known.contains(*id)) {
                    return Err(Error::not_found("track", missing));
                }
                self.push_events(caller, likes, Vec::new()).await?;
                Ok(())
            }
            ItemKind::Album | ItemKind::Artist => {
                let known = self.known_items(kind, ids).await?;
                if let Some(missing) = ids.iter().find(|id| !known.contains(*id)) {
                    return Err(Error::not_found(kind.as_str(), missing));
                }
                let upsert = if starred {
                    format!(
                        "INSERT INTO annotations (user_id, item_kind, item_id, starred_at) VALUES ($1, $2, $3, {{now}}) {}",
                        self.db.kind().upsert("user_id, item_kind, item_id", &["starred_at"])
                    )
                } else {
                    "UPDATE annotations SET starred_at = NULL WHERE user_id = $1 AND item_kind = $2 AND item_id = $3"
                        .to_string()
                };
                let mut tx = self.db.begin().await?;
                for id in ids {
                    self.db
                        .sql(&upsert)
                        .bind(&caller.user.id)
                        .bind(kind.as_str())
                        .bind(id.as_str())
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }
            ItemKind::Playlist => Err(Error::invalid("id", "playlists cannot be starred")),
        }
    }

    /// Rates an item 1–5; 0 removes the rating.
    pub async fn set_rating(
        &self,
        caller: &Caller,
        kind: ItemKind,
        id: &str,
        rating: i64,
    ) -> Result<()> {
        if !(0..=5).contains(&rating) {
            return Err(Error::invalid("rating", "must be between 0 and 5"));
        }
        if kind == ItemKind::Playlist {
            return Err(Error::invalid("id", "playlists cannot be rated"));
        }
        if self.known_items(kind, &[id.to_string()]).await?.is_empty() {
            return Err(Error::not_found(kind.as_str(), id));
        }
        self.db
            .sql(&format!(
                "INSERT INTO annotations (user_id, item_kind, item_id, rating) VALUES ($1, $2, $3, $4) {}",
                self.db.kind().upsert("user_id, item_kind, item_id", &["rating"])
            ))
            .bind(&caller.user.id)
            .bind(kind.as_str())
            .bind(id)
            .bind((rating > 0).then_some(rating))
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    pub(crate) async fn known_items(
        &self,
        kind: ItemKind,
        ids: &[String],
    ) -> Result<HashSet<String>> {
        let table = match kind {
            ItemKind::Track => Table::Tracks,
            ItemKind::Album => Table::Albums,
            ItemKind::Artist => Table::Artists,
            ItemKind::Playlist => Table::Playlists,
        };
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        known_ids(
            &mut *self.db.pool().acquire().await?,
            self.db.kind(),
            table,
            &ids,
        )
        .await
    }

    /// The caller's starred artists and albums and liked tracks.
    pub async fn starred(&self, caller: &Caller) -> Result<Starred> {
        let user = caller.user.id.as_str();
        let marked = |alias: &str, kind: &str| {
            format!(
                "JOIN annotations a ON a.item_id = {alias}.id AND a.item_kind = '{kind}' AND a.user_id = $1
                 WHERE a.starred_at IS NOT NULL ORDER BY a.starred_at DESC LIMIT {MAX_STARRED}"
            )
        };
        let pool = self.db.pool();
        let artists: Vec<ArtistRow> = self
            .db
            .sql(&format!("{ARTIST_SELECT} {}", marked("ar", "artist")))
            .bind(user)
            .fetch_all(pool)
            .await?;
        let albums: Vec<AlbumRow> = self
            .db
            .sql(&format!(
                "{} {}",
                album_select(self.db.kind()),
                marked("al", "album")
            ))
            .bind(user)
            .fetch_all(pool)
            .await?;
        let tracks: Vec<TrackRow> = self
            .db
            .sql(&format!(
                "{TRACK_SELECT} JOIN like_events l ON l.track_id = t.id AND l.user_id = $1
                 WHERE l.liked = 1 AND {LATEST_LIKE} ORDER BY l.event_time DESC LIMIT {MAX_STARRED}"
            ))
            .bind(user)
            .fetch_all(pool)
            .await?;
        Ok(Starred {
            artists: artists.into_iter().map(Artist::from).collect(),
            albums: albums.into_iter().map(Album::from).collect(),
            tracks: tracks.into_iter().map(Track::from).collect(),
        })
    }
}
