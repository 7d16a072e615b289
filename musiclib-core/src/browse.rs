//! Personal views of the catalogue: album lists by kind (newest, most played, starred…),
//! genres, random and similar tracks, stars and ratings, what everyone is playing now, the
//! saved play queue, and the scan status. The legacy (Subsonic) interface is their first
//! user; none of this is Subsonic-specific.
//!
//! Stars on tracks are likes: starring writes a like event to the same log as `POST /likes`,
//! so a star from a Subsonic app reaches the user's offline clients through `/sync/changes`.
//! Stars on albums and artists, and ratings, live in `annotations`.

use std::collections::HashMap;

use crate::catalog::{AlbumRow, ArtistRow, TrackRow, ALBUM_SELECT, ARTIST_SELECT, TRACK_SELECT};
use crate::db::placeholders;
use crate::domain::{Album, Artist, Page, Track};
use crate::sync::{NewLike, LATEST_LIKE};
use crate::{auth::Caller, Error, Library, Result, Timestamp, TrackId};

/// Most ids one read binds per statement.
const CHUNK: usize = 500;
/// Most starred items of each kind listed.
const MAX_STARRED: i64 = 10_000;
/// Most tracks in a saved play queue.
pub const MAX_QUEUE_TRACKS: usize = 5_000;

/// Which album list (`getAlbumList2` `type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlbumList {
    /// In random order.
    Random,
    /// Recently added first.
    Newest,
    /// The caller's best rated first (rated albums only).
    Highest,
    /// The caller's most played first (played albums only).
    Frequent,
    /// The caller's most recently played first.
    Recent,
    /// By title.
    AlphabeticalByName,
    /// By album artist, then title.
    AlphabeticalByArtist,
    /// The caller's starred albums, most recently starred first.
    Starred,
    /// Released between two years, inclusive; descending when `from` > `to`.
    ByYear {
        /// First year.
        from: i64,
        /// Last year.
        to: i64,
    },
    /// Of a genre (the album's, or any of its tracks'), case-insensitive.
    ByGenre(String),
}

/// What can be starred and rated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A track.
    Track,
    /// An album.
    Album,
    /// An artist.
    Artist,
    /// A playlist (rated nor starred; only resolved).
    Playlist,
}

impl ItemKind {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Track => "track",
            ItemKind::Album => "album",
            ItemKind::Artist => "artist",
            ItemKind::Playlist => "playlist",
        }
    }

    fn parse(name: &str) -> Option<ItemKind> {
        Some(match name {
            "track" => ItemKind::Track,
            "album" => ItemKind::Album,
            "artist" => ItemKind::Artist,
            "playlist" => ItemKind::Playlist,
            _ => return None,
        })
    }
}

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

/// A genre and how much of the library has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Genre {
    /// Name as tagged.
    pub name: String,
    /// Tracks of this genre.
    pub track_count: i64,
    /// Albums with a track of this genre.
    pub album_count: i64,
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

/// State of the local-folder import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanStatus {
    /// Whether an import is queued or running.
    pub scanning: bool,
    /// Files seen by the running import, or tracks in the library when idle.
    pub count: i64,
}

/// Binds `ids` after `query`'s leading arguments, one chunk at a time, collecting rows.
async fn fetch_in_chunks<O, F>(library: &Library, ids: &[String], mut query: F) -> Result<Vec<O>>
where
    O: Send + Unpin + for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    F: FnMut(usize) -> (String, Vec<String>),
{
    let mut rows = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        let (sql, leading) = query(chunk.len());
        let mut select = sqlx::query_as::<_, O>(&sql);
        for arg in leading {
            select = select.bind(arg);
        }
        for id in chunk {
            select = select.bind(id.as_str());
        }
        rows.extend(select.fetch_all(library.db().pool()).await?);
    }
    Ok(rows)
}

impl Library {
    /// An album list of `kind` (`getAlbumList2`).
    pub async fn album_list(
        &self,
        caller: &Caller,
        kind: &AlbumList,
        page: Page,
    ) -> Result<Vec<Album>> {
        let mut args: Vec<String> = Vec::new();
        let mut arg = |value: String| {
            args.push(value);
            format!("${}", args.len())
        };
        let plays = |user: &str| {
            format!(
                "JOIN (SELECT t.album_id AS album_id, COUNT(*) AS plays, MAX(p.played_at) AS last_played
                   FROM play_events p JOIN tracks t ON t.id = p.track_id
                   WHERE p.user_id = {user} GROUP BY t.album_id) s ON s.album_id = al.id"
            )
        };
        let marks = |user: &str| {
            format!(
                "JOIN annotations a ON a.item_id = al.id AND a.item_kind = 'album' AND a.user_id = {user}"
            )
        };
        let (join, filter, order) = match kind {
            AlbumList::Random => (String::new(), String::new(), "RANDOM()".to_string()),
            AlbumList::Newest => (
                String::new(),
                String::new(),
                "al.created_at DESC, al.id DESC".into(),
            ),
            AlbumList::Highest => (
                marks(&arg(caller.user.id.to_string())),
                "WHERE a.rating > 0".into(),
                "a.rating DESC, al.title_key, al.id".into(),
            ),
            AlbumList::Frequent => (
                plays(&arg(caller.user.id.to_string())),
                String::new(),
                "s.plays DESC, al.title_key, al.id".into(),
            ),
            AlbumList::Recent => (
                plays(&arg(caller.user.id.to_string())),
                String::new(),
                "s.last_played DESC, al.id".into(),
            ),
            AlbumList::AlphabeticalByName => {
                (String::new(), String::new(), "al.title_key, al.id".into())
            }
            AlbumList::AlphabeticalByArtist => (
                String::new(),
                String::new(),
                "ar.name_key, al.title_key, al.id".into(),
            ),
            AlbumList::Starred => (
                marks(&arg(caller.user.id.to_string())),
                "WHERE a.starred_at IS NOT NULL".into(),
                "a.starred_at DESC, al.id".into(),
            ),
            AlbumList::ByYear { from, to } => {
                let (low, high, dir) = if from <= to {
                    (*from, *to, "ASC")
                } else {
                    (*to, *from, "DESC")
                };
                (
                    String::new(),
                    format!("WHERE al.year >= {low} AND al.year <= {high}"),
                    format!("al.year {dir}, al.title_key, al.id"),
                )
            }
            AlbumList::ByGenre(genre) => {
                let genre = arg(genre.trim().to_lowercase());
                (
                    String::new(),
                    format!(
                        "WHERE LOWER(al.genre) = {genre} OR EXISTS
                           (SELECT 1 FROM tracks g WHERE g.album_id = al.id AND LOWER(g.genre) = {genre})"
                    ),
                    "al.title_key, al.id".into(),
                )
            }
        };
        let query = format!(
            "{ALBUM_SELECT} {join} {filter} ORDER BY {order} LIMIT {} OFFSET {}",
            page.limit(),
            page.offset()
        );
        let mut select = sqlx::query_as::<_, AlbumRow>(&query);
        for value in args {
            select = select.bind(value);
        }
        let rows = select.fetch_all(self.db().pool()).await?;
        Ok(rows.into_iter().map(Album::from).collect())
    }

    /// Tracks by id, in the order given (repeats kept); ids of missing tracks are left out.
    pub async fn tracks_by_ids(&self, ids: &[TrackId]) -> Result<Vec<Track>> {
        let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        self.tracks_in_order(&ids).await
    }

    pub(crate) async fn tracks_in_order(&self, ids: &[String]) -> Result<Vec<Track>> {
        let rows: Vec<TrackRow> = fetch_in_chunks(self, ids, |count| {
            (
                format!("{TRACK_SELECT} WHERE t.id IN ({})", placeholders(1, count)),
                Vec::new(),
            )
        })
        .await?;
        let mut found: HashMap<String, Track> = rows
            .into_iter()
            .map(|row| (row.id.clone(), Track::from(row)))
            .collect();
        // A queue or playlist may hold a track twice: clone all but the last use.
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for id in ids {
            *uses.entry(id.as_str()).or_default() += 1;
        }
        Ok(ids
            .iter()
            .filter_map(|id| {
                let left = uses.get_mut(id.as_str())?;
                *left -= 1;
                if *left == 0 {
                    found.remove(id)
                } else {
                    found.get(id).cloned()
                }
            })
            .collect())
    }

    /// What kind of item `id` names, if any.
    pub async fn item_kind(&self, id: &str) -> Result<Option<ItemKind>> {
        let kind: Option<(String,)> = sqlx::query_as(
            "SELECT 'track' FROM tracks WHERE id = $1
             UNION ALL SELECT 'album' FROM albums WHERE id = $1
             UNION ALL SELECT 'artist' FROM artists WHERE id = $1
             UNION ALL SELECT 'playlist' FROM playlists WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.db().pool())
        .await?;
        Ok(kind.and_then(|(kind,)| ItemKind::parse(&kind)))
    }

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
        let marks: Vec<(String, Option<i64>, Option<i64>)> = fetch_in_chunks(self, ids, |count| {
            (
                format!(
                    "SELECT item_id, starred_at, rating FROM annotations
                     WHERE user_id = $1 AND item_kind = $2 AND item_id IN ({})",
                    placeholders(3, count)
                ),
                vec![user.clone(), kind.as_str().to_string()],
            )
        })
        .await?;
        for (id, starred_at, rating) in marks {
            let entry = found.entry(id).or_default();
            entry.rating = rating.filter(|rating| *rating > 0);
            if kind != ItemKind::Track {
                entry.starred_at = starred_at.map(Timestamp::from_micros);
            }
        }
        let plays_by = match kind {
            ItemKind::Track => Some("p.track_id"),
            ItemKind::Album => Some("t.album_id"),
            ItemKind::Artist | ItemKind::Playlist => None,
        };
        if let Some(column) = plays_by {
            let plays: Vec<(String, i64, i64)> = fetch_in_chunks(self, ids, |count| {
                (
                    format!(
                        "SELECT {column}, COUNT(*), MAX(p.played_at) FROM play_events p
                         JOIN tracks t ON t.id = p.track_id
                         WHERE p.user_id = $1 AND {column} IN ({}) GROUP BY {column}",
                        placeholders(2, count)
                    ),
                    vec![user.clone()],
                )
            })
            .await?;
            for (id, count, last) in plays {
                let entry = found.entry(id).or_default();
                entry.play_count = count;
                entry.last_played = Some(Timestamp::from_micros(last));
            }
        }
        if kind == ItemKind::Track {
            for state in self.like_states(caller, ids).await? {
                if state.liked {
                    found.entry(state.track_id).or_default().starred_at = state.event_time;
                }
            }
        }
        Ok(found)
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
                let upsert = self.db().sql(if starred {
                    "INSERT INTO annotations (user_id, item_kind, item_id, starred_at) VALUES ($1, $2, $3, {now})
                     ON CONFLICT (user_id, item_kind, item_id) DO UPDATE SET starred_at = excluded.starred_at"
                } else {
                    "UPDATE annotations SET starred_at = NULL WHERE user_id = $1 AND item_kind = $2 AND item_id = $3"
                });
                let mut tx = self.db().begin().await?;
                for id in ids {
                    sqlx::query(&upsert)
                        .bind(caller.user.id.as_str())
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
        sqlx::query(
            "INSERT INTO annotations (user_id, item_kind, item_id, rating) VALUES ($1, $2, $3, $4)
             ON CONFLICT (user_id, item_kind, item_id) DO UPDATE SET rating = excluded.rating",
        )
        .bind(caller.user.id.as_str())
        .bind(kind.as_str())
        .bind(id)
        .bind((rating > 0).then_some(rating))
        .execute(self.db().pool())
        .await?;
        Ok(())
    }

    async fn known_items(
        &self,
        kind: ItemKind,
        ids: &[String],
    ) -> Result<std::collections::HashSet<String>> {
        let table = match kind {
            ItemKind::Track => "tracks",
            ItemKind::Album => "albums",
            ItemKind::Artist => "artists",
            ItemKind::Playlist => "playlists",
        };
        let rows: Vec<(String,)> = fetch_in_chunks(self, ids, |count| {
            (
                format!(
                    "SELECT id FROM {table} WHERE id IN ({})",
                    placeholders(1, count)
                ),
                Vec::new(),
            )
        })
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
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
        let artists: Vec<ArtistRow> =
            sqlx::query_as(&format!("{ARTIST_SELECT} {}", marked("ar", "artist")))
                .bind(user)
                .fetch_all(self.db().pool())
                .await?;
        let albums: Vec<AlbumRow> =
            sqlx::query_as(&format!("{ALBUM_SELECT} {}", marked("al", "album")))
                .bind(user)
                .fetch_all(self.db().pool())
                .await?;
        let tracks: Vec<TrackRow> = sqlx::query_as(&format!(
            "{TRACK_SELECT} JOIN like_events l ON l.track_id = t.id AND l.user_id = $1
             WHERE l.liked = 1 AND {LATEST_LIKE} ORDER BY l.event_time DESC LIMIT {MAX_STARRED}"
        ))
        .bind(user)
        .fetch_all(self.db().pool())
        .await?;
        Ok(Starred {
            artists: artists.into_iter().map(Artist::from).collect(),
            albums: albums.into_iter().map(Album::from).collect(),
            tracks: tracks.into_iter().map(Track::from).collect(),
        })
    }

    /// Genres with their track and album counts, by name.
    pub async fn genres(&self) -> Result<Vec<Genre>> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT genre, COUNT(*), COUNT(DISTINCT album_id) FROM tracks
             WHERE genre IS NOT NULL AND genre <> '' GROUP BY genre ORDER BY LOWER(genre), genre",
        )
        .fetch_all(self.db().pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(name, track_count, album_count)| Genre {
                name,
                track_count,
                album_count,
            })
            .collect())
    }

    /// Up to `count` playable tracks in random order, optionally of a genre and years.
    pub async fn random_tracks(
        &self,
        genre: Option<&str>,
        from_year: Option<i64>,
        to_year: Option<i64>,
        count: i64,
    ) -> Result<Vec<Track>> {
        let mut filter = vec!["t.availability = 'available'".to_string()];
        let mut args = Vec::new();
        if let Some(genre) = genre.map(str::trim).filter(|genre| !genre.is_empty()) {
            args.push(genre.to_lowercase());
            filter.push(format!("LOWER(t.genre) = ${}", args.len()));
        }
        if let Some(from) = from_year {
            filter.push(format!("t.year >= {from}"));
        }
        if let Some(to) = to_year {
            filter.push(format!("t.year <= {to}"));
        }
        let query = format!(
            "{TRACK_SELECT} WHERE {} ORDER BY RANDOM() LIMIT {}",
            filter.join(" AND "),
            count.max(1)
        );
        let mut select = sqlx::query_as::<_, TrackRow>(&query);
        for arg in args {
            select = select.bind(arg);
        }
        let rows = select.fetch_all(self.db().pool()).await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }

    /// The most played tracks (by everyone) of the artist named `artist`, then the rest of
    /// theirs in album order.
    pub async fn top_tracks(&self, artist: &str, count: i64) -> Result<Vec<Track>> {
        let key = crate::text::name_key(artist.trim());
        let rows: Vec<TrackRow> = sqlx::query_as(&format!(
            "{TRACK_SELECT} JOIN artists ar ON ar.id = t.artist_id
             LEFT JOIN (SELECT track_id, COUNT(*) AS plays FROM play_events GROUP BY track_id) s ON s.track_id = t.id
             WHERE ar.name_key = $1
             ORDER BY COALESCE(s.plays, 0) DESC, LOWER(t.album_title), t.disc_number, t.track_number, t.id
             LIMIT {}",
            count.max(1)
        ))
        .bind(key)
        .fetch_all(self.db().pool())
        .await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }

    /// Up to `count` playable tracks like the track, album or artist `id`: by the same
    /// artists or of the same genres, in random order, the seed's own tracks left out.
    pub async fn similar_tracks(&self, id: &str, count: i64) -> Result<Vec<Track>> {
        let seed = match self.item_kind(id).await? {
            Some(ItemKind::Track) => "SELECT id, artist_id, genre FROM tracks WHERE id = $1",
            Some(ItemKind::Album) => "SELECT id, artist_id, genre FROM tracks WHERE album_id = $1",
            Some(ItemKind::Artist) => {
                "SELECT id, artist_id, genre FROM tracks WHERE artist_id = $1"
            }
            _ => return Err(Error::not_found("track, album or artist", id)),
        };
        let query = format!(
            "WITH seed AS ({seed})
             {TRACK_SELECT} WHERE t.availability = 'available'
               AND t.id NOT IN (SELECT id FROM seed)
               AND (t.artist_id IN (SELECT artist_id FROM seed WHERE artist_id IS NOT NULL)
                    OR LOWER(t.genre) IN (SELECT LOWER(genre) FROM seed WHERE genre IS NOT NULL AND genre <> ''))
             ORDER BY RANDOM() LIMIT {}",
            count.max(1)
        );
        let rows: Vec<TrackRow> = sqlx::query_as(&query)
            .bind(id)
            .fetch_all(self.db().pool())
            .await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }

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
        let upsert = self.db().sql(
            "INSERT INTO now_playing (user_id, client, track_id, updated_at) VALUES ($1, $2, $3, {now})
             ON CONFLICT (user_id, client) DO UPDATE SET track_id = excluded.track_id, updated_at = excluded.updated_at",
        );
        sqlx::query(&upsert)
            .bind(caller.user.id.as_str())
            .bind(client.chars().take(100).collect::<String>())
            .bind(track.as_str())
            .execute(self.db().pool())
            .await?;
        Ok(())
    }

    /// What every user is playing: entries whose track could still be playing (its
    /// duration, or 10 minutes when unknown, plus a minute), newest first.
    pub async fn now_playing(&self) -> Result<Vec<NowPlaying>> {
        let live = "n.updated_at + (COALESCE(t.duration_ms, 600000) + 60000) * 1000 > {now}";
        let query = self.db().sql(&format!(
            "SELECT n.track_id, u.username, n.client, n.updated_at FROM now_playing n
             JOIN users u ON u.id = n.user_id JOIN tracks t ON t.id = n.track_id
             WHERE {live} ORDER BY n.updated_at DESC LIMIT 100"
        ));
        let entries: Vec<(String, String, String, i64)> =
            sqlx::query_as(&query).fetch_all(self.db().pool()).await?;
        let ids: Vec<TrackId> = entries
            .iter()
            .map(|(id, ..)| TrackId::from_db(id.clone()))
            .collect();
        let tracks: HashMap<String, Track> = self
            .tracks_by_ids(&ids)
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
            sqlx::query("DELETE FROM play_queues WHERE user_id = $1")
                .bind(caller.user.id.as_str())
                .execute(self.db().pool())
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
        let upsert = self.db().sql(
            "INSERT INTO play_queues (user_id, track_ids, current_id, position_ms, changed_by, updated_at)
             VALUES ($1, $2, $3, $4, $5, {now})
             ON CONFLICT (user_id) DO UPDATE SET track_ids = excluded.track_ids, current_id = excluded.current_id,
               position_ms = excluded.position_ms, changed_by = excluded.changed_by, updated_at = excluded.updated_at",
        );
        sqlx::query(&upsert)
            .bind(caller.user.id.as_str())
            .bind(serde_json::to_string(&ids).expect("strings serialise"))
            .bind(current.as_str())
            .bind(position_ms)
            .bind(client.map(|client| client.chars().take(100).collect::<String>()))
            .execute(self.db().pool())
            .await?;
        Ok(())
    }

    /// The caller's saved play queue, if any.
    pub async fn play_queue(&self, caller: &Caller) -> Result<Option<PlayQueue>> {
        let row: Option<(String, Option<String>, i64, Option<String>, i64)> = sqlx::query_as(
            "SELECT track_ids, current_id, position_ms, changed_by, updated_at FROM play_queues WHERE user_id = $1",
        )
        .bind(caller.user.id.as_str())
        .fetch_optional(self.db().pool())
        .await?;
        let Some((ids, current, position_ms, changed_by, updated_at)) = row else {
            return Ok(None);
        };
        let ids: Vec<String> = serde_json::from_str(&ids).map_err(|error| {
            Error::Internal(format!("a stored play queue is malformed: {error}"))
        })?;
        Ok(Some(PlayQueue {
            track_ids: ids.into_iter().map(TrackId::from_db).collect(),
            current: current.map(TrackId::from_db),
            position_ms,
            changed_by,
            changed_at: Timestamp::from_micros(updated_at),
        }))
    }

    /// Whether the local-folder import is queued or running, and how far it is.
    pub async fn scan_status(&self) -> Result<ScanStatus> {
        let latest: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT state, progress FROM jobs WHERE kind = $1 ORDER BY created_at DESC LIMIT 1",
        )
        .bind(crate::jobs::kind::SCAN_LOCAL_FOLDER)
        .fetch_optional(self.db().pool())
        .await?;
        if let Some((state, progress)) = &latest {
            if state == "queued" || state == "running" {
                let seen = progress
                    .as_deref()
                    .and_then(|progress| serde_json::from_str::<serde_json::Value>(progress).ok())
                    .and_then(|progress| progress.get("seen")?.as_i64())
                    .unwrap_or(0);
                return Ok(ScanStatus {
                    scanning: true,
                    count: seen,
                });
            }
        }
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tracks")
            .fetch_one(self.db().pool())
            .await?;
        Ok(ScanStatus {
            scanning: false,
            count,
        })
    }
}
