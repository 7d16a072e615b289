//! Artist similarity without any outside service, computed by the `compute_similarity` job
//! into `artist_similarity` and read per request by index.
//!
//! Four signals link two artists, each scored 0 to 1:
//!
//! - `listened_together`: one person played them within half an hour of each other (over
//!   the last 500,000 plays, each play paired with the next five); `n / (n + 2)` for `n`
//!   such pairs;
//! - `liked_together`: one person likes tracks of both; `n / (n + 1)` for `n` people;
//! - `same_playlist`: both are in one playlist; `n / (n + 1)` for `n` playlists;
//! - `shared_genre`: the Jaccard index of their genre sets (normalised genres).
//!
//! They combine as a noisy-or with weights 0.9, 0.7, 0.6 and 0.5, so one strong signal is
//! enough and agreeing signals add up without passing 1. Each artist keeps its 30 best.
//!
//! Cost: pairs come only from what connects artists (a person's plays and likes, a
//! playlist, a genre), never from all pairs of artists. A person's likes and a playlist
//! count at most 100 artists each, and a genre shared by more than 200 artists links no
//! pair by itself (it still adds to pairs found otherwise): linear in plays, likes and
//! playlist entries, and bounded per genre.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::genre_keys;
use crate::db::Db;
use crate::ids::ArtistId;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::social::LATEST_LIKE;
use crate::Result;

const PLAYS_READ: i64 = 500_000;
const NEXT_PLAYS: usize = 5;
const WINDOW_MICROS: i64 = 30 * 60 * 1_000_000;
const GROUP_CAP: usize = 100;
const GENRE_CAP: usize = 200;
const KEEP: usize = 30;

/// Why two artists are similar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtistReason {
    /// Their genres overlap.
    SharedGenre,
    /// People played them within half an hour of each other.
    ListenedTogether,
    /// People like tracks of both.
    LikedTogether,
    /// They share playlists.
    SamePlaylist,
}

impl ArtistReason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ArtistReason::SharedGenre => "shared_genre",
            ArtistReason::ListenedTogether => "listened_together",
            ArtistReason::LikedTogether => "liked_together",
            ArtistReason::SamePlaylist => "same_playlist",
        }
    }

    fn weight(self) -> f64 {
        match self {
            ArtistReason::ListenedTogether => 0.9,
            ArtistReason::LikedTogether => 0.7,
            ArtistReason::SamePlaylist => 0.6,
            ArtistReason::SharedGenre => 0.5,
        }
    }
}

/// What a computation found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SimilarityReport {
    /// Artists with at least one similar artist.
    pub artists: usize,
    /// Pairs kept (each direction counts).
    pub pairs: usize,
}

#[derive(Default)]
struct Counts {
    listened: u32,
    liked: u32,
    playlists: u32,
}

type Pair = (String, String);

fn pair(a: &str, b: &str) -> Pair {
    if a < b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// Adds one to every pair of `artists` (at most [`GROUP_CAP`] of them).
fn count_group(
    counts: &mut HashMap<Pair, Counts>,
    artists: &[String],
    field: fn(&mut Counts) -> &mut u32,
) {
    let artists = &artists[..artists.len().min(GROUP_CAP)];
    for (index, a) in artists.iter().enumerate() {
        for b in &artists[index + 1..] {
            if a != b {
                *field(counts.entry(pair(a, b)).or_default()) += 1;
            }
        }
    }
}

/// Recomputes `artist_similarity` from the library (see the module's notes).
pub(crate) async fn compute(db: &Db) -> Result<SimilarityReport> {
    let pool = db.pool();
    let mut counts: HashMap<Pair, Counts> = HashMap::new();

    // Listened together.
    let plays: Vec<(String, i64, String)> = db
        .sql(&format!(
            "SELECT p.user_id, p.played_at, t.artist_id FROM
               (SELECT user_id, played_at, track_id FROM play_events ORDER BY played_at DESC LIMIT {PLAYS_READ}) p
             JOIN tracks t ON t.id = p.track_id
             WHERE t.artist_id IS NOT NULL
             ORDER BY p.user_id, p.played_at"
        ))
        .fetch_all(pool)
        .await?;
    for (index, (user, at, artist)) in plays.iter().enumerate() {
        for (other_user, other_at, other) in plays.iter().skip(index + 1).take(NEXT_PLAYS) {
            if other_user != user || other_at - at > WINDOW_MICROS {
                break;
            }
            if other != artist {
                counts.entry(pair(artist, other)).or_default().listened += 1;
            }
        }
    }
    drop(plays);

    // Liked together: per person, the artists of the tracks they like.
    let likes: Vec<(String, String)> = db
        .sql(&format!(
            "SELECT DISTINCT l.user_id, t.artist_id FROM like_events l JOIN tracks t ON t.id = l.track_id
             WHERE l.liked = 1 AND {LATEST_LIKE} AND t.artist_id IS NOT NULL
             ORDER BY l.user_id, t.artist_id"
        ))
        .fetch_all(pool)
        .await?;
    for group in grouped(likes) {
        count_group(&mut counts, &group, |counts| &mut counts.liked);
    }

    // Same playlist.
    let listed: Vec<(String, String)> = db
        .sql(
            "SELECT DISTINCT pt.playlist_id, t.artist_id FROM playlist_tracks pt JOIN tracks t ON t.id = pt.track_id
             WHERE t.artist_id IS NOT NULL ORDER BY pt.playlist_id, t.artist_id",
        )
        .fetch_all(pool)
        .await?;
    for group in grouped(listed) {
        count_group(&mut counts, &group, |counts| &mut counts.playlists);
    }

    // Genres: each artist's set; small genres link their artists.
    let tagged: Vec<(String, String)> = db
        .sql(
            "SELECT DISTINCT artist_id, genre FROM tracks
             WHERE artist_id IS NOT NULL AND genre IS NOT NULL AND genre <> ''",
        )
        .fetch_all(pool)
        .await?;
    let mut genres: HashMap<String, HashSet<String>> = HashMap::new();
    for (artist, genre) in tagged {
        genres.entry(artist).or_default().extend(genre_keys(&genre));
    }
    let mut members: HashMap<&str, Vec<String>> = HashMap::new();
    for (artist, keys) in &genres {
        for key in keys {
            members
                .entry(key.as_str())
                .or_default()
                .push(artist.clone());
        }
    }
    let mut pairs: HashSet<Pair> = counts.keys().cloned().collect();
    for artists in members
        .values_mut()
        .filter(|artists| artists.len() <= GENRE_CAP)
    {
        artists.sort();
        for (index, a) in artists.iter().enumerate() {
            for b in &artists[index + 1..] {
                pairs.insert(pair(a, b));
            }
        }
    }

    // Score every pair, keep each artist's best.
    let mut best: HashMap<String, Vec<(String, f64, Value)>> = HashMap::new();
    for (a, b) in pairs {
        let found = counts.get(&(a.clone(), b.clone()));
        let jaccard = match (genres.get(&a), genres.get(&b)) {
            (Some(x), Some(y)) if !x.is_empty() && !y.is_empty() => {
                x.intersection(y).count() as f64 / x.union(y).count() as f64
            }
            _ => 0.0,
        };
        let saturate = |n: u32, k: f64| f64::from(n) / (f64::from(n) + k);
        let signals = [
            (
                ArtistReason::ListenedTogether,
                found.map_or(0.0, |c| saturate(c.listened, 2.0)),
            ),
            (
                ArtistReason::LikedTogether,
                found.map_or(0.0, |c| saturate(c.liked, 1.0)),
            ),
            (
                ArtistReason::SamePlaylist,
                found.map_or(0.0, |c| saturate(c.playlists, 1.0)),
            ),
            (ArtistReason::SharedGenre, jaccard),
        ];
        let miss: f64 = signals
            .iter()
            .map(|(reason, strength)| 1.0 - reason.weight() * strength)
            .product();
        let score = ((1.0 - miss) * 10_000.0).round() / 10_000.0;
        if score <= 0.0 {
            continue;
        }
        let reasons: serde_json::Map<String, Value> = signals
            .iter()
            .filter(|(_, strength)| *strength > 0.0)
            .map(|(reason, strength)| {
                (
                    reason.as_str().to_string(),
                    Value::from((strength * 1000.0).round() / 1000.0),
                )
            })
            .collect();
        let reasons = Value::Object(reasons);
        best.entry(a.clone())
            .or_default()
            .push((b.clone(), score, reasons.clone()));
        best.entry(b).or_default().push((a, score, reasons));
    }
    let mut rows: Vec<(String, String, f64, String)> = Vec::new();
    for (artist, mut similar) in best {
        similar.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        similar.truncate(KEEP);
        for (other, score, reasons) in similar {
            rows.push((artist.clone(), other, score, reasons.to_string()));
        }
    }
    let report = SimilarityReport {
        artists: rows
            .iter()
            .map(|row| row.0.as_str())
            .collect::<HashSet<_>>()
            .len(),
        pairs: rows.len(),
    };

    let mut tx = db.begin().await?;
    db.sql("DELETE FROM artist_similarity")
        .execute(&mut *tx)
        .await?;
    for chunk in rows.chunks(crate::db::CHUNK / 4) {
        let mut insert =
            db.sql("INSERT INTO artist_similarity (artist_id, similar_id, score, reasons) VALUES ");
        insert.push_values(chunk, |row, (artist, other, score, reasons)| {
            row.bind(artist.as_str())
                .bind(other.as_str())
                .bind(*score)
                .bind(reasons.as_str());
        });
        insert.execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(report)
}

/// Rows `(group, artist)` sorted by group, as each group's artists.
fn grouped(rows: Vec<(String, String)>) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut current: Option<String> = None;
    for (group, artist) in rows {
        if current.as_deref() != Some(group.as_str()) {
            groups.push(Vec::new());
            current = Some(group);
        }
        groups.last_mut().expect("pushed above").push(artist);
    }
    groups
}

/// The artists most similar to `id`, best first, with the reasons that link them (the
/// strongest first).
pub(crate) async fn similar(
    db: &Db,
    id: &ArtistId,
    limit: usize,
) -> Result<Vec<(ArtistId, f64, Vec<ArtistReason>)>> {
    let rows: Vec<(String, f64, String)> = db
        .sql(&format!(
            "SELECT similar_id, score, reasons FROM artist_similarity WHERE artist_id = $1
             ORDER BY score DESC, similar_id LIMIT {limit}"
        ))
        .bind(id)
        .fetch_all(db.pool())
        .await?;
    Ok(rows
        .into_iter()
        .map(|(other, score, reasons)| {
            let strengths: HashMap<ArtistReason, f64> =
                serde_json::from_str(&reasons).unwrap_or_default();
            let mut reasons: Vec<(ArtistReason, f64)> = strengths.into_iter().collect();
            reasons.sort_by(|a, b| {
                (b.0.weight() * b.1)
                    .total_cmp(&(a.0.weight() * a.1))
                    .then_with(|| a.0.cmp(&b.0))
            });
            (
                ArtistId::from_db(other),
                score,
                reasons.into_iter().map(|(reason, _)| reason).collect(),
            )
        })
        .collect())
}

/// The `compute_similarity` job: recomputes artist similarity (one live job at a time).
#[derive(Debug)]
pub struct ComputeSimilarity;

/// The job's payload (nothing to say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputeSimilarityPayload {}

impl JobKind for ComputeSimilarity {
    const NAME: &'static str = "compute_similarity";
    const POOL: Pool = Pool::General;
    type Payload = ComputeSimilarityPayload;
    type Service = super::Recommend;

    fn dedup_key(_payload: &ComputeSimilarityPayload) -> Option<String> {
        Some(Self::NAME.to_string())
    }

    async fn run(
        recommend: &super::Recommend,
        _context: &JobContext,
        _payload: ComputeSimilarityPayload,
    ) -> Result<Value, JobError> {
        let report = compute(&recommend.db).await?;
        Ok(serde_json::to_value(report).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_split_and_capped() {
        let rows = vec![
            ("u1".to_string(), "a".to_string()),
            ("u1".to_string(), "b".to_string()),
            ("u2".to_string(), "c".to_string()),
        ];
        let groups = grouped(rows);
        assert_eq!(
            groups,
            [
                vec!["a".to_string(), "b".to_string()],
                vec!["c".to_string()]
            ]
        );
        let mut counts = HashMap::new();
        let many: Vec<String> = (0..300).map(|n| format!("a{n:03}")).collect();
        count_group(&mut counts, &many, |counts| &mut counts.liked);
        assert_eq!(counts.len(), GROUP_CAP * (GROUP_CAP - 1) / 2);
    }
}
