//! The sound of each track: analysed by bliss-audio (decoding through symphonia) into a
//! vector of tempo, zero-crossing rate, spectral centroid, rolloff and flatness, loudness and
//! chroma features, stored in `track_features`, and searched by nearest neighbours.
//!
//! Analysis runs in the `analyze_sound` job, which works through the tracks that have no
//! features yet, one at a time, on one CPU slot (bliss uses a few threads per track for its
//! descriptors), and yields: before each track it looks for queued or running imports and
//! enrichment (`scan_local_folder`, `enrich_task`, `materialize_track`, `download_task`)
//! and stops when there are any, to be started again by the next sweep. Workers sweep
//! every `sweep_interval` (and once at start): they queue `analyze_sound` when tracks wait
//! and no import does, and `compute_similarity` when plays, likes, playlists or tracks
//! changed since the last computation.
//!
//! Neighbours come from an in-memory k-d tree (kiddo) over every analysed track, rebuilt
//! when the stored features change (a counter in `server_state`, read by key per request):
//! a query costs about `log n` on well-spread data and never reads all pairs; the build is
//! `n log n` and happens once per change, off the request when an index already exists.

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZero;
use std::path::Path;
use std::sync::Arc;

use bliss_audio::decoder::symphonia::SymphoniaDecoder;
use bliss_audio::decoder::Decoder as _;
use bliss_audio::NUMBER_FEATURES;
use kiddo::{ImmutableKdTree, SquaredEuclidean};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Mutex, RwLock};

use super::batch::{Candidate, Reason};
use crate::db::Db;
use crate::ids::TrackId;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::storage::Storage;
use crate::{Error, Library, Result};

/// The analysis version stored with features; features of another are analysed again.
pub(crate) const VERSION: i64 = bliss_audio::FeaturesVersion::LATEST as i64;
/// What `sounds_like` adds to a candidate's score at full similarity.
const SOUNDS_LIKE: f64 = 0.5;
/// The `server_state` key counting changes of the stored features.
const STAMP_KEY: &str = "sound_features_stamp";
/// Jobs an analysis gives way to.
const IMPORT_KINDS: [&str; 4] = [
    "scan_local_folder",
    "enrich_task",
    "materialize_track",
    "download_task",
];

type Point = [f32; NUMBER_FEATURES];

/// How much of the library has its sound analysed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SoundStatus {
    /// Tracks with features.
    pub analyzed: i64,
    /// Tracks whose audio could not be analysed.
    pub failed: i64,
    /// Playable tracks still waiting.
    pub pending: i64,
}

/// What one run of the analysis did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SoundReport {
    /// Tracks analysed.
    pub analyzed: usize,
    /// Tracks whose audio could not be analysed (kept with the reason).
    pub failed: usize,
    /// Whether it stopped to let imports run.
    pub yielded: bool,
}

struct Index {
    stamp: i64,
    tree: ImmutableKdTree<f32, NUMBER_FEATURES>,
    ids: Vec<String>,
    points: Vec<Point>,
    by_id: HashMap<String, usize>,
}

/// The analysis and the neighbour index.
#[derive(Clone)]
pub(crate) struct Sound {
    db: Db,
    enabled: bool,
    cpu: crate::cpu::CpuSlots,
    index: Arc<RwLock<Option<Arc<Index>>>>,
    building: Arc<Mutex<()>>,
}

impl Sound {
    pub(crate) fn new(db: Db, enabled: bool, cpu: crate::cpu::CpuSlots) -> Sound {
        Sound {
            db,
            enabled,
            cpu,
            index: Arc::default(),
            building: Arc::default(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    pub(crate) async fn status(&self) -> Result<SoundStatus> {
        let (analyzed, failed): (i64, i64) = self
            .db
            .sql(
                "SELECT COALESCE(SUM(CASE WHEN features IS NOT NULL THEN 1 ELSE 0 END), 0),
                        COALESCE(SUM(CASE WHEN features IS NULL THEN 1 ELSE 0 END), 0)
                 FROM track_features WHERE version = $1",
            )
            .bind(VERSION)
            .fetch_optional(self.db.pool())
            .await?
            .unwrap_or((0, 0));
        let pending: i64 = self
            .db
            .sql(
                "SELECT COUNT(*) FROM tracks t WHERE t.availability = 'available' AND NOT EXISTS
                   (SELECT 1 FROM track_features f WHERE f.track_id = t.id AND f.version = $1
                      AND (f.content_sha256 = t.content_sha256 OR f.content_sha256 IS NULL))",
            )
            .bind(VERSION)
            .fetch_scalar(self.db.pool())
            .await?;
        Ok(SoundStatus {
            analyzed,
            failed,
            pending,
        })
    }

    /// Analyses up to `limit` tracks without current features, asking `should_yield`
    /// before each.
    pub(crate) async fn analyze_pending<F, Fut>(
        &self,
        storage: &Storage,
        limit: usize,
        should_yield: F,
    ) -> Result<SoundReport>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = bool>,
    {
        let mut report = SoundReport::default();
        if !self.enabled {
            return Ok(report);
        }
        let waiting: Vec<(String, String, Option<String>)> = self
            .db
            .sql(&format!(
                "SELECT t.id, t.storage_uri, t.content_sha256 FROM tracks t
                 WHERE t.availability = 'available' AND t.storage_uri <> '' AND NOT EXISTS
                   (SELECT 1 FROM track_features f WHERE f.track_id = t.id AND f.version = $1
                      AND (f.content_sha256 = t.content_sha256 OR f.content_sha256 IS NULL))
                 ORDER BY t.created_at, t.id LIMIT {limit}"
            ))
            .bind(VERSION)
            .fetch_all(self.db.pool())
            .await?;
        for (id, key, sha) in waiting {
            if should_yield().await {
                report.yielded = true;
                break;
            }
            let outcome = match storage.local_file(&key).await {
                Ok(file) => {
                    let _slot = self.cpu.acquire().await;
                    analyze_file(&file.path).await
                }
                Err(error) => Err(crate::error_chain(&error)),
            };
            let (features, error) = match outcome {
                Ok(features) => {
                    report.analyzed += 1;
                    (
                        Some(serde_json::to_string(&features).unwrap_or_default()),
                        None,
                    )
                }
                Err(reason) => {
                    tracing::info!(track_id = %id, %reason, "cannot analyse the sound of a track");
                    report.failed += 1;
                    (None, Some(reason))
                }
            };
            let mut tx = self.db.begin().await?;
            self.db
                .sql(
                    "INSERT INTO track_features (track_id, version, features, content_sha256, error, analyzed_at)
                     SELECT $1, $2, $3, $4, $5, {now} WHERE EXISTS (SELECT 1 FROM tracks WHERE id = $1)
                     ON CONFLICT (track_id) DO UPDATE SET version = excluded.version, features = excluded.features,
                       content_sha256 = excluded.content_sha256, error = excluded.error, analyzed_at = excluded.analyzed_at",
                )
                .bind(id.as_str())
                .bind(VERSION)
                .bind(features)
                .bind(sha)
                .bind(error)
                .execute(&mut *tx)
                .await?;
            bump_stamp(&self.db, &mut tx).await?;
            tx.commit().await?;
        }
        Ok(report)
    }

    /// Candidates that sound like `id` (none when it has no features).
    pub(crate) async fn sounds_like(&self, id: &str, limit: usize) -> Result<Vec<Candidate>> {
        let near = self.nearest_str(id, limit).await?;
        if near.is_empty() {
            return Ok(Vec::new());
        }
        let mut select = self
            .db
            .sql("SELECT t.id, t.artist_id, t.artist_name FROM tracks t WHERE t.availability = 'available' AND t.id IN (");
        select
            .push_list(near.iter().map(|(id, _)| id.as_str()))
            .push(")");
        let rows: Vec<(String, Option<String>, Option<String>)> =
            select.fetch_all(self.db.pool()).await?;
        Ok(rows
            .into_iter()
            .map(|(track, artist_id, artist_name)| {
                let similarity = near
                    .iter()
                    .find(|(id, _)| *id == track)
                    .map_or(0.0, |(_, similarity)| *similarity);
                Candidate {
                    track_id: track,
                    artist: artist_id.or_else(|| artist_name.as_deref().map(crate::text::name_key)),
                    score: SOUNDS_LIKE * similarity,
                    reasons: vec![Reason::SoundsLike],
                }
            })
            .collect())
    }

    /// The `count` tracks nearest to `id` by sound, with their similarity (1 the same).
    pub(crate) async fn nearest(&self, id: &TrackId, count: usize) -> Result<Vec<(String, f64)>> {
        self.nearest_str(id.as_str(), count).await
    }

    async fn nearest_str(&self, id: &str, count: usize) -> Result<Vec<(String, f64)>> {
        let Some(index) = self.index_with(&[id]).await? else {
            return Ok(Vec::new());
        };
        let Some(&at) = index.by_id.get(id) else {
            return Ok(Vec::new());
        };
        let Some(wanted) = NonZero::new((count + 1).min(index.ids.len())) else {
            return Ok(Vec::new());
        };
        let found = index
            .tree
            .query(&index.points[at])
            .nearest_n::<SquaredEuclidean<f32>>(wanted)
            .execute();
        Ok(found
            .into_iter()
            .map(|hit| hit.item as usize)
            .filter(|&item| item != at)
            .take(count)
            .map(|item| {
                let distance = euclidean(&index.points[at], &index.points[item]);
                (index.ids[item].clone(), similarity(distance))
            })
            .collect())
    }

    /// About `count` tracks from `from` to `to`: both ends, and between them the unused
    /// track nearest to each evenly spaced point of the straight line joining their sounds.
    pub(crate) async fn path(
        &self,
        from: &TrackId,
        to: &TrackId,
        count: usize,
    ) -> Result<Vec<(String, f64)>> {
        let Some(index) = self.index_with(&[from.as_str(), to.as_str()]).await? else {
            return Ok(Vec::new());
        };
        let (Some(&start), Some(&end)) =
            (index.by_id.get(from.as_str()), index.by_id.get(to.as_str()))
        else {
            return Ok(Vec::new());
        };
        let (a, b) = (index.points[start], index.points[end]);
        let mut used = vec![start, end];
        let mut path = vec![(index.ids[start].clone(), 1.0)];
        let steps = count.max(2) - 1;
        for step in 1..steps {
            let t = step as f32 / steps as f32;
            let mut point = [0f32; NUMBER_FEATURES];
            for (axis, value) in point.iter_mut().enumerate() {
                *value = a[axis] + (b[axis] - a[axis]) * t;
            }
            let wanted = NonZero::new((used.len() + 1).min(index.ids.len())).expect("at least one");
            let next = index
                .tree
                .query(&point)
                .nearest_n::<SquaredEuclidean<f32>>(wanted)
                .execute()
                .into_iter()
                .map(|hit| hit.item as usize)
                .find(|item| !used.contains(item));
            if let Some(item) = next {
                used.push(item);
                let distance = euclidean(&point, &index.points[item]);
                path.push((index.ids[item].clone(), similarity(distance)));
            }
        }
        if start != end {
            path.push((index.ids[end].clone(), 1.0));
        }
        Ok(path)
    }

    /// The index for a query about `ids`. When the stored features changed since it was
    /// built, it is rebuilt: by this request when there is none yet or it lacks one of `ids`
    /// (a track analysed since), otherwise in the background while the old one answers.
    async fn index_with(&self, ids: &[&str]) -> Result<Option<Arc<Index>>> {
        let stamp = read_stamp(&self.db).await?;
        let current = self.index.read().await.clone();
        match current {
            Some(index) if index.stamp == stamp => Ok(Some(index)),
            Some(index) if ids.iter().any(|id| !index.by_id.contains_key(*id)) => {
                self.rebuild(stamp).await?;
                Ok(self.index.read().await.clone())
            }
            Some(index) => {
                let this = self.clone();
                tokio::spawn(async move {
                    if let Err(error) = this.rebuild(stamp).await {
                        tracing::warn!(error = %crate::error_chain(&error), "cannot rebuild the sound index");
                    }
                });
                Ok(Some(index))
            }
            None => {
                self.rebuild(stamp).await?;
                Ok(self.index.read().await.clone())
            }
        }
    }

    async fn rebuild(&self, stamp: i64) -> Result<()> {
        let _building = self.building.lock().await;
        if self
            .index
            .read()
            .await
            .as_ref()
            .is_some_and(|index| index.stamp == stamp)
        {
            return Ok(());
        }
        let rows: Vec<(String, String)> = self
            .db
            .sql("SELECT track_id, features FROM track_features WHERE features IS NOT NULL AND version = $1 ORDER BY track_id")
            .bind(VERSION)
            .fetch_all(self.db.pool())
            .await?;
        let built = tokio::task::spawn_blocking(move || {
            let mut ids = Vec::with_capacity(rows.len());
            let mut points = Vec::with_capacity(rows.len());
            for (id, features) in rows {
                let Ok(values) = serde_json::from_str::<Vec<f32>>(&features) else {
                    continue;
                };
                let Ok(point) = Point::try_from(values.as_slice()) else {
                    continue;
                };
                if point.iter().all(|value| value.is_finite()) {
                    ids.push(id);
                    points.push(point);
                }
            }
            let tree = ImmutableKdTree::new_from_slice(&points).map_err(|error| {
                Error::internal(format!("cannot build the sound index: {error:?}"))
            })?;
            let by_id = ids
                .iter()
                .enumerate()
                .map(|(at, id)| (id.clone(), at))
                .collect();
            Ok::<_, Error>(Index {
                stamp,
                tree,
                ids,
                points,
                by_id,
            })
        })
        .await
        .map_err(Error::task("the sound index build"))??;
        *self.index.write().await = Some(Arc::new(built));
        Ok(())
    }
}

/// 1 for the same sound, falling towards 0 as the distance grows (bliss's features lie in
/// [-1, 1], so distances between real songs are a few units at most).
fn similarity(distance: f32) -> f64 {
    let similarity = 1.0 / (1.0 + f64::from(distance));
    (similarity * 10_000.0).round() / 10_000.0
}

fn euclidean(a: &Point, b: &Point) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f32>()
        .sqrt()
}

/// The features of the audio file at `path`, or why there are none.
pub(crate) async fn analyze_file(path: &Path) -> std::result::Result<Vec<f32>, String> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        SymphoniaDecoder::song_from_path(&path)
            .map(|song| song.analysis.as_vec())
            .map_err(|error| format!("cannot analyse the audio: {error}"))
    })
    .await
    .map_err(|error| format!("the analysis task failed: {error}"))?
}

async fn read_stamp(db: &Db) -> Result<i64> {
    let value: Option<String> = db
        .sql("SELECT value FROM server_state WHERE key = $1")
        .bind(STAMP_KEY)
        .fetch_scalar_optional(db.pool())
        .await?;
    Ok(value.and_then(|value| value.parse().ok()).unwrap_or(0))
}

async fn bump_stamp(db: &Db, tx: &mut crate::db::Tx) -> Result<()> {
    db.sql(
        "INSERT INTO server_state (key, value, updated_at) VALUES ($1, '1', {now})
         ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(server_state.value AS BIGINT) + 1 AS TEXT),
           updated_at = excluded.updated_at",
    )
    .bind(STAMP_KEY)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Whether imports or enrichment are queued or running.
async fn imports_waiting(db: &Db) -> bool {
    let mut select =
        db.sql("SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running') AND kind IN (");
    select.push_list(IMPORT_KINDS).push(")");
    match select.fetch_scalar::<i64, _>(db.pool()).await {
        Ok(count) => count > 0,
        Err(_) => true,
    }
}

/// The `analyze_sound` job: analyses tracks without features until none is left or imports
/// are waiting (one live job at a time).
#[derive(Debug)]
pub struct AnalyzeSound;

/// The job's payload (nothing to say).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalyzeSoundPayload {}

impl JobKind for AnalyzeSound {
    const NAME: &'static str = "analyze_sound";
    const POOL: Pool = Pool::General;
    type Payload = AnalyzeSoundPayload;

    fn dedup_key(_payload: &AnalyzeSoundPayload) -> Option<String> {
        Some(Self::NAME.to_string())
    }

    async fn run(context: &JobContext, _payload: AnalyzeSoundPayload) -> Result<Value, JobError> {
        let library = context.library();
        let db = library.db().clone();
        let mut total = SoundReport::default();
        loop {
            let report = library
                .recommend()
                .sound()
                .analyze_pending(library.storage(), 20, || imports_waiting(&db))
                .await?;
            total.analyzed += report.analyzed;
            total.failed += report.failed;
            total.yielded = report.yielded;
            context
                .progress(
                    &serde_json::json!({ "analyzed": total.analyzed, "failed": total.failed }),
                )
                .await;
            if report.yielded || report.analyzed + report.failed == 0 {
                break;
            }
        }
        Ok(serde_json::to_value(total).unwrap_or_default())
    }
}

/// A fingerprint of what artist similarity depends on.
async fn similarity_inputs(db: &Db) -> Result<String> {
    let row: (i64, i64, i64, i64, Option<i64>) = db
        .sql(
            "SELECT (SELECT COUNT(*) FROM play_events), (SELECT COUNT(*) FROM like_events),
                    (SELECT COUNT(*) FROM playlist_changes), (SELECT COUNT(*) FROM tracks),
                    (SELECT MAX(updated_at) FROM tracks)",
        )
        .fetch_optional(db.pool())
        .await?
        .unwrap_or_default();
    Ok(format!(
        "{}:{}:{}:{}:{}",
        row.0,
        row.1,
        row.2,
        row.3,
        row.4.unwrap_or(0)
    ))
}

/// One sweep (see the module's notes): queues the recommendation jobs that have work.
pub(crate) async fn sweep(library: &Library) -> Result<()> {
    let db = library.db();
    let recommend = library.recommend();
    if recommend.sound().enabled() && !imports_waiting(db).await {
        let status = recommend.sound().status().await?;
        if status.pending > 0 {
            library
                .jobs()
                .enqueue::<AnalyzeSound>(&AnalyzeSoundPayload::default(), None)
                .await?;
        }
    }
    let inputs = similarity_inputs(db).await?;
    let known: Option<String> = db
        .sql("SELECT value FROM server_state WHERE key = 'similarity_inputs'")
        .fetch_scalar_optional(db.pool())
        .await?;
    if known.as_deref() != Some(inputs.as_str()) {
        library
            .jobs()
            .enqueue::<super::ComputeSimilarity>(&Default::default(), None)
            .await?;
        db.sql(
            "INSERT INTO server_state (key, value, updated_at) VALUES ('similarity_inputs', $1, {now})
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(inputs)
        .execute(db.pool())
        .await?;
    }
    Ok(())
}

/// Sweeps every `sweep_interval` until `shutdown` resolves.
pub async fn sweep_forever(library: Library, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let interval = library.config().recommend.sweep_interval;
    loop {
        if let Err(error) = sweep(&library).await {
            tracing::warn!(error = %crate::error_chain(&error), "cannot look for recommendation work");
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
