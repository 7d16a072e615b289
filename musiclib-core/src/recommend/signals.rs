//! The metadata and listening signals, each a few indexed reads: tracks of the seed's
//! artist, of similar artists, of its genre (and era), played next to it, liked by the
//! caller; random samples over `shuffle_key`. Every read is bounded, so a request costs the
//! same on a library of a thousand tracks or of a hundred thousand.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::batch::{Candidate, Reason};
use super::external::{ExternalSeed, ExternalSuggestion};
use super::genre_keys;
use crate::auth::Caller;
use crate::db::Db;
use crate::domain::shuffle_key;
use crate::ids::TrackId;
use crate::social::LATEST_LIKE;
use crate::Result;

/// Two plays of one person this close are "listened together".
const TOGETHER_WINDOW_MICROS: i64 = 30 * 60 * 1_000_000;
/// Years either side of the seed's that are its era.
const ERA_YEARS: i64 = 5;
/// How long the list of genre spellings is reused.
const GENRES_TTL: Duration = Duration::from_secs(60);

// What each signal adds to a candidate's score.
const SAME_ARTIST: f64 = 0.5;
const SIMILAR_ARTIST: f64 = 0.6;
const SAME_GENRE: f64 = 0.3;
const SAME_ERA: f64 = 0.1;
const LISTENED_TOGETHER: f64 = 0.5;
const LIKED: f64 = 0.3;
const EXTERNAL: f64 = 0.5;

const LIGHT: &str = "SELECT t.id, t.artist_id, t.artist_name, t.genre, t.year FROM tracks t";

/// A track as the signals see it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct LightRow {
    id: String,
    artist_id: Option<String>,
    artist_name: Option<String>,
    genre: Option<String>,
    year: Option<i64>,
}

/// A track as the signals see it, genres as keys.
#[derive(Debug, Clone)]
pub(crate) struct Light {
    pub id: String,
    /// The artist id, else the artist's name key (what the artist cap counts).
    pub artist: Option<String>,
    pub genres: Vec<String>,
    pub year: Option<i64>,
}

impl From<LightRow> for Light {
    fn from(row: LightRow) -> Light {
        Light {
            id: row.id,
            artist: row
                .artist_id
                .or_else(|| row.artist_name.map(|name| crate::text::name_key(&name))),
            genres: row.genre.as_deref().map(genre_keys).unwrap_or_default(),
            year: row.year,
        }
    }
}

impl Light {
    pub(crate) fn candidate(self, score: f64, reasons: Vec<Reason>) -> Candidate {
        Candidate {
            track_id: self.id,
            artist: self.artist,
            score,
            reasons,
        }
    }
}

/// What a feed or a similar list starts from.
#[derive(Debug, Clone)]
pub(crate) struct Seed {
    pub id: String,
    /// Artist id (or name key).
    pub artist: Option<String>,
    artist_id: Option<String>,
    /// The artist of its album.
    album_artist_id: Option<String>,
    pub genres: Vec<String>,
    year: Option<i64>,
    title: String,
    artist_name: Option<String>,
    album_title: Option<String>,
    musicbrainz_recording_id: Option<String>,
}

impl Seed {
    /// Its artist and its album's artist (what `same_artist` matches), each once.
    pub(crate) fn artists(&self) -> Vec<&str> {
        let mut artists: Vec<&str> = self.artist.iter().map(String::as_str).collect();
        if let Some(album_artist) = self.album_artist_id.as_deref() {
            if !artists.contains(&album_artist) {
                artists.push(album_artist);
            }
        }
        artists
    }

    pub(crate) fn external(&self) -> ExternalSeed {
        ExternalSeed {
            track_id: self.id.clone(),
            title: self.title.clone(),
            artist: self.artist_name.clone(),
            album: self.album_title.clone(),
            musicbrainz_recording_id: self.musicbrainz_recording_id.clone(),
        }
    }
}

#[derive(sqlx::FromRow)]
struct SeedRow {
    id: String,
    title: String,
    artist_id: Option<String>,
    album_artist_id: Option<String>,
    artist_name: Option<String>,
    album_title: Option<String>,
    genre: Option<String>,
    year: Option<i64>,
    musicbrainz_recording_id: Option<String>,
}

const SEED: &str =
    "SELECT t.id, t.title, t.artist_id, sa.artist_id AS album_artist_id, t.artist_name, t.album_title,
    t.genre, t.year, t.musicbrainz_recording_id FROM tracks t LEFT JOIN albums sa ON sa.id = t.album_id";

impl From<SeedRow> for Seed {
    fn from(row: SeedRow) -> Seed {
        Seed {
            artist: row
                .artist_id
                .clone()
                .or_else(|| row.artist_name.as_deref().map(crate::text::name_key)),
            id: row.id,
            artist_id: row.artist_id,
            album_artist_id: row.album_artist_id,
            genres: row.genre.as_deref().map(genre_keys).unwrap_or_default(),
            year: row.year,
            title: row.title,
            artist_name: row.artist_name,
            album_title: row.album_title,
            musicbrainz_recording_id: row.musicbrainz_recording_id,
        }
    }
}

/// Every genre spelling in the library with its keys.
type GenreSpellings = Arc<Vec<(String, Vec<String>)>>;

/// A track as the shuffle walk reads it: id, artist id, artist name, genre, year, shuffle key.
type ShuffleRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    i64,
);

/// A track's id, artist id, artist name and MusicBrainz recording id.
type SuggestionRow = (String, Option<String>, Option<String>, Option<String>);

/// The signal reads, with the few things worth keeping between requests.
#[derive(Clone)]
pub(crate) struct Signals {
    db: Db,
    /// Every genre spelling in the library with its keys, refreshed after [`GENRES_TTL`].
    genres: Arc<Mutex<Option<(Instant, GenreSpellings)>>>,
}

impl Signals {
    pub(crate) fn new(db: Db) -> Signals {
        Signals {
            db,
            genres: Arc::default(),
        }
    }

    pub(crate) async fn seed(&self, id: &TrackId) -> Result<Option<Seed>> {
        let row: Option<SeedRow> = self
            .db
            .sql(&format!("{SEED} WHERE t.id = $1"))
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        Ok(row.map(Seed::from))
    }

    /// Up to `count` of the caller's liked tracks, at random, as seeds.
    pub(crate) async fn liked_seeds(&self, caller: &Caller, count: usize) -> Result<Vec<Seed>> {
        let rows: Vec<SeedRow> = self
            .db
            .sql(&format!(
                "{SEED} JOIN like_events l ON l.track_id = t.id
                 WHERE l.user_id = $1 AND l.liked = 1 AND {LATEST_LIKE}
                 ORDER BY l.event_time DESC LIMIT 200"
            ))
            .bind(&caller.user.id)
            .fetch_all(self.db.pool())
            .await?;
        let mut seeds: Vec<Seed> = rows.into_iter().map(Seed::from).collect();
        use rand::seq::SliceRandom;
        seeds.shuffle(&mut rand::rng());
        seeds.truncate(count);
        Ok(seeds)
    }

    /// The ids of the tracks the caller likes now (the latest 2,000).
    pub(crate) async fn liked_set(&self, caller: &Caller) -> Result<HashSet<String>> {
        let ids: Vec<String> = self
            .db
            .sql(&format!(
                "SELECT l.track_id FROM like_events l
                 WHERE l.user_id = $1 AND l.liked = 1 AND {LATEST_LIKE}
                 ORDER BY l.event_time DESC LIMIT 2000"
            ))
            .bind(&caller.user.id)
            .fetch_scalars(self.db.pool())
            .await?;
        Ok(ids.into_iter().collect())
    }

    /// The caller's liked playable tracks as candidates (a feed without a seed).
    pub(crate) async fn liked(&self, caller: &Caller, limit: usize) -> Result<Vec<Candidate>> {
        let rows: Vec<LightRow> = self
            .db
            .sql(&format!(
                "{LIGHT} JOIN like_events l ON l.track_id = t.id
                 WHERE l.user_id = $1 AND l.liked = 1 AND {LATEST_LIKE} AND t.availability = 'available'
                 ORDER BY l.event_time DESC LIMIT {limit}"
            ))
            .bind(&caller.user.id)
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| Light::from(row).candidate(LIKED, vec![Reason::Liked]))
            .collect())
    }

    /// Every signal of the metadata and of listening for `seed`, `limit` reads each.
    pub(crate) async fn similar(&self, seed: &Seed, limit: usize) -> Result<Vec<Candidate>> {
        let mut out = Vec::new();
        // Same artist: tracks by the seed's artist or its album's artist, and tracks on
        // albums of either (a guest on the artist's album, the artist on a compilation).
        let artists: Vec<&str> = [seed.artist_id.as_deref(), seed.album_artist_id.as_deref()]
            .into_iter()
            .flatten()
            .fold(Vec::new(), |mut artists, artist| {
                if !artists.contains(&artist) {
                    artists.push(artist);
                }
                artists
            });
        let mut same_artist: HashSet<String> = HashSet::new();
        for artist in artists {
            let (by_artist, on_album) = futures::try_join!(
                self.sample("t.artist_id = $1", artist, limit),
                self.sample(
                    "t.album_id IN (SELECT a.id FROM albums a WHERE a.artist_id = $1)",
                    artist,
                    limit,
                )
            )?;
            for track in by_artist.into_iter().chain(on_album) {
                if same_artist.insert(track.id.clone()) {
                    out.push(track.candidate(SAME_ARTIST, vec![Reason::SameArtist]));
                }
            }
        }
        // Similar artists, each track scored by how similar its artist is.
        if let Some(artist) = &seed.artist_id {
            let similar: Vec<(String, f64)> = self
                .db
                .sql(
                    "SELECT similar_id, score FROM artist_similarity WHERE artist_id = $1
                     ORDER BY score DESC, similar_id LIMIT 15",
                )
                .bind(artist.as_str())
                .fetch_all(self.db.pool())
                .await?;
            if !similar.is_empty() {
                // A few random tracks of each similar artist, each read through the
                // (artist, shuffle key) index: one ordered read of all of their tracks would
                // sort thousands of rows.
                let each = (2 * limit).div_ceil(similar.len()) + 1;
                let start = shuffle_key();
                let mut rows: Vec<LightRow> = Vec::new();
                for (from, to) in [(start, i64::MAX), (0, start)] {
                    let mut select = self.db.sql("");
                    for (index, (id, _)) in similar.iter().enumerate() {
                        if index > 0 {
                            select.push(" UNION ALL ");
                        }
                        select
                            .push("SELECT * FROM (")
                            .push(LIGHT)
                            .push(" WHERE t.artist_id = ")
                            .push_bind(id.as_str())
                            .push(" AND t.availability = 'available' AND t.shuffle_key >= ")
                            .push_bind(from)
                            .push(" AND t.shuffle_key < ")
                            .push_bind(to)
                            .push(&format!(" ORDER BY t.shuffle_key LIMIT {each}) s{index}"));
                    }
                    rows.extend(select.fetch_all::<LightRow, _>(self.db.pool()).await?);
                    if rows.len() >= 2 * limit {
                        break;
                    }
                }
                for row in rows {
                    let strength = similar
                        .iter()
                        .find(|(id, _)| Some(id) == row.artist_id.as_ref())
                        .map_or(0.0, |(_, score)| *score);
                    out.push(
                        Light::from(row)
                            .candidate(SIMILAR_ARTIST * strength, vec![Reason::SimilarArtist]),
                    );
                }
            }
        }
        // Same genre, and era.
        let spellings = self.spellings(&seed.genres).await?;
        if !spellings.is_empty() {
            let start = shuffle_key();
            let mut rows: Vec<LightRow> = Vec::new();
            for (from, to) in [(start, i64::MAX), (0, start)] {
                let mut select = self.db.sql(LIGHT);
                select
                    .push(" WHERE t.availability = 'available' AND t.genre IN (")
                    .push_list(spellings.iter().map(String::as_str))
                    .push(") AND t.shuffle_key >= ")
                    .push_bind(from)
                    .push(" AND t.shuffle_key < ")
                    .push_bind(to);
                select.push(&format!(
                    " ORDER BY t.shuffle_key LIMIT {}",
                    2 * limit - rows.len()
                ));
                rows.extend(select.fetch_all::<LightRow, _>(self.db.pool()).await?);
                if rows.len() >= 2 * limit {
                    break;
                }
            }
            for row in rows {
                let track = Light::from(row);
                let era = matches!((seed.year, track.year), (Some(a), Some(b)) if (a - b).abs() <= ERA_YEARS);
                let (score, reasons) = if era {
                    (
                        SAME_GENRE + SAME_ERA,
                        vec![Reason::SameGenre, Reason::SameEra],
                    )
                } else {
                    (SAME_GENRE, vec![Reason::SameGenre])
                };
                out.push(track.candidate(score, reasons));
            }
        }
        // Listened together: what the same people played within half an hour of the seed.
        let together: Vec<(String, i64)> = self
            .db
            .sql(&format!(
                "SELECT p.track_id, COUNT(*) AS times FROM
                   (SELECT user_id, played_at FROM play_events WHERE track_id = $1
                    ORDER BY played_at DESC LIMIT 200) s
                 JOIN play_events p ON p.user_id = s.user_id
                   AND p.played_at BETWEEN s.played_at - {TOGETHER_WINDOW_MICROS} AND s.played_at + {TOGETHER_WINDOW_MICROS}
                 WHERE p.track_id <> $1
                 GROUP BY p.track_id ORDER BY times DESC, p.track_id LIMIT {limit}"
            ))
            .bind(seed.id.as_str())
            .fetch_all(self.db.pool())
            .await?;
        if !together.is_empty() {
            let mut select = self.db.sql(LIGHT);
            select
                .push(" WHERE t.availability = 'available' AND t.id IN (")
                .push_list(together.iter().map(|(id, _)| id.as_str()))
                .push(")");
            let rows: Vec<LightRow> = select.fetch_all(self.db.pool()).await?;
            for row in rows {
                let times = together
                    .iter()
                    .find(|(id, _)| *id == row.id)
                    .map_or(0, |(_, times)| *times);
                // Saturates: three shared sessions are as good as many.
                let strength = (times as f64 / 3.0).min(1.0);
                out.push(
                    Light::from(row)
                        .candidate(LISTENED_TOGETHER * strength, vec![Reason::ListenedTogether]),
                );
            }
        }
        Ok(out)
    }

    /// `limit` random playable tracks matching `condition` (`$1` is `value`).
    async fn sample(&self, condition: &str, value: &str, limit: usize) -> Result<Vec<Light>> {
        let start = shuffle_key();
        let mut rows: Vec<LightRow> = Vec::new();
        for (from, to) in [(start, i64::MAX), (0, start)] {
            let rows_now: Vec<LightRow> = self
                .db
                .sql(&format!(
                    "{LIGHT} WHERE {condition} AND t.availability = 'available'
                     AND t.shuffle_key >= $2 AND t.shuffle_key < $3
                     ORDER BY t.shuffle_key LIMIT {}",
                    limit - rows.len()
                ))
                .bind(value)
                .bind(from)
                .bind(to)
                .fetch_all(self.db.pool())
                .await?;
            rows.extend(rows_now);
            if rows.len() >= limit {
                break;
            }
        }
        Ok(rows.into_iter().map(Light::from).collect())
    }

    /// `count` random playable tracks.
    pub(crate) async fn random(&self, count: usize) -> Result<Vec<Light>> {
        self.sample("1 = 1 AND $1 = $1", "", count).await
    }

    /// Up to `count` playable tracks not in `taken` and by none of the artists in `avoid`,
    /// walking the shuffle order from a random point (the last resort of a feed whose client
    /// has excluded most of the library, or whose samples were all one artist's).
    pub(crate) async fn remaining(
        &self,
        taken: &HashSet<String>,
        avoid: &HashSet<String>,
        count: usize,
    ) -> Result<Vec<Light>> {
        let start = shuffle_key();
        let mut out = Vec::new();
        for (from, to) in [(start, i64::MAX), (0, start)] {
            let mut after: Option<(i64, String)> = None;
            loop {
                let mut select = self.db.sql(
                    "SELECT t.id, t.artist_id, t.artist_name, t.genre, t.year, t.shuffle_key FROM tracks t
                     WHERE t.availability = 'available' AND t.shuffle_key < ",
                );
                select.push_bind(to);
                if !avoid.is_empty() {
                    select
                        .push(" AND (t.artist_id IS NULL OR t.artist_id NOT IN (")
                        .push_list(avoid.iter().map(String::as_str).take(crate::db::CHUNK))
                        .push("))");
                }
                match &after {
                    Some((key, id)) => {
                        select
                            .push(" AND (t.shuffle_key > ")
                            .push_bind(*key)
                            .push(" OR (t.shuffle_key = ")
                            .push_bind(*key)
                            .push(" AND t.id > ")
                            .push_bind(id.as_str())
                            .push("))");
                    }
                    None => {
                        select.push(" AND t.shuffle_key >= ").push_bind(from);
                    }
                }
                select.push(" ORDER BY t.shuffle_key, t.id LIMIT 500");
                let rows: Vec<ShuffleRow> = select.fetch_all(self.db.pool()).await?;
                let Some(last) = rows.last() else { break };
                after = Some((last.5, last.0.clone()));
                let full = rows.len() == 500;
                for (id, artist_id, artist_name, genre, year, _) in rows {
                    if taken.contains(&id) {
                        continue;
                    }
                    let track = Light::from(LightRow {
                        id,
                        artist_id,
                        artist_name,
                        genre,
                        year,
                    });
                    if track
                        .artist
                        .as_ref()
                        .is_some_and(|artist| avoid.contains(artist))
                    {
                        continue;
                    }
                    out.push(track);
                    if out.len() >= count {
                        return Ok(out);
                    }
                }
                if !full {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// The external recommender's suggestions that name a playable track of the library
    /// (by id or by MusicBrainz recording id).
    pub(crate) async fn resolve_external(
        &self,
        suggestions: Vec<ExternalSuggestion>,
    ) -> Vec<Candidate> {
        if suggestions.is_empty() {
            return Vec::new();
        }
        let ids: Vec<&str> = suggestions
            .iter()
            .filter_map(|s| s.track_id.as_deref())
            .collect();
        let mbids: Vec<&str> = suggestions
            .iter()
            .filter_map(|s| s.musicbrainz_recording_id.as_deref())
            .collect();
        let mut select = self.db.sql(
            "SELECT t.id, t.artist_id, t.artist_name, t.musicbrainz_recording_id FROM tracks t",
        );
        select.push(" WHERE t.availability = 'available' AND (t.id IN (");
        select.push_list(
            ids.iter()
                .copied()
                .chain(std::iter::once(""))
                .take(crate::db::CHUNK),
        );
        select.push(") OR t.musicbrainz_recording_id IN (");
        select.push_list(
            mbids
                .iter()
                .copied()
                .chain(std::iter::once(""))
                .take(crate::db::CHUNK),
        );
        select.push("))");
        let rows: Vec<SuggestionRow> = match select.fetch_all(self.db.pool()).await {
            Ok(rows) => rows,
            Err(error) => {
                tracing::warn!(error = %crate::error_chain(&error), "cannot resolve the external recommender's suggestions");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for suggestion in &suggestions {
            let score = suggestion.score.unwrap_or(1.0).clamp(0.0, 1.0);
            for (id, artist_id, artist_name, mbid) in &rows {
                let by_id = suggestion.track_id.as_deref() == Some(id.as_str());
                let by_mbid = suggestion.musicbrainz_recording_id.is_some()
                    && suggestion.musicbrainz_recording_id == *mbid;
                if by_id || by_mbid {
                    out.push(Candidate {
                        track_id: id.clone(),
                        artist: artist_id
                            .clone()
                            .or_else(|| artist_name.as_deref().map(crate::text::name_key)),
                        score: EXTERNAL * score,
                        reasons: vec![Reason::External],
                    });
                }
            }
        }
        out
    }

    /// The genre spellings of the library whose keys meet `keys`.
    async fn spellings(&self, keys: &[String]) -> Result<Vec<String>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let all = {
            let mut cached = self.genres.lock().await;
            match &*cached {
                Some((at, all)) if at.elapsed() < GENRES_TTL => all.clone(),
                _ => {
                    let names: Vec<String> = self
                        .db
                        .sql("SELECT DISTINCT genre FROM tracks WHERE genre IS NOT NULL AND genre <> ''")
                        .fetch_scalars(self.db.pool())
                        .await?;
                    let all: Arc<Vec<(String, Vec<String>)>> = Arc::new(
                        names
                            .into_iter()
                            .map(|name| {
                                let keys = genre_keys(&name);
                                (name, keys)
                            })
                            .collect(),
                    );
                    *cached = Some((Instant::now(), all.clone()));
                    all
                }
            }
        };
        Ok(all
            .iter()
            .filter(|(_, genre)| genre.iter().any(|key| keys.contains(key)))
            .map(|(name, _)| name.clone())
            .take(crate::db::CHUNK)
            .collect())
    }
}
