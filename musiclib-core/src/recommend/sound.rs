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
//! Neighbours come from an in-memory k-d tree (kiddo) over every analysed track: a query
//! costs about `log n` on well-spread data and never reads all pairs; the build is
//! `n log n`. The stored features change while the analysis runs (each analysed track bumps
//! a counter in `server_state`, read by key per request), and the tree follows in the
//! background: at most one rebuild in flight, at least [`REBUILD_INTERVAL`] apart, the old
//! tree answering meanwhile (a track analysed since has no neighbours until then). A request
//! builds the tree itself only when none was ever built and its seed has stored features.
//! Every track answered is playable: the tree is asked for more neighbours when some are
//! not.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::num::NonZero;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
use crate::jobs::{JobContext, JobError, JobKind, Jobs, Pool};
use crate::storage::Storage;
use crate::{Error, Result};

/// The analysis version stored with features; features of another are analysed again.
pub(crate) const VERSION: i64 = bliss_audio::FeaturesVersion::LATEST as i64;
/// What `sounds_like` adds to a candidate's score at full similarity.
const SOUNDS_LIKE: f64 = 0.5;
/// The `server_state` key counting changes of the stored features.
const STAMP_KEY: &str = "sound_features_stamp";
/// Least time between two builds of the neighbour index.
pub(crate) const REBUILD_INTERVAL: Duration = Duration::from_secs(5);

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
    /// Held by the build; when the last one ended.
    building: Arc<Mutex<Option<Instant>>>,
    /// Whether a background rebuild is scheduled or running.
    scheduled: Arc<AtomicBool>,
    /// Builds so far (for tests).
    builds: Arc<AtomicUsize>,
    /// Least time between two builds ([`REBUILD_INTERVAL`]; tests set their own, see
    /// `Recommend::set_sound_rebuild_interval`). A scheduled rebuild waiting for it sees a
    /// change at once.
    rebuild_interval: Arc<tokio::sync::watch::Sender<Duration>>,
}

#[cfg(feature = "test-support")]
impl super::Recommend {
    /// Sets the least time between two background builds of the sound index (5 s by
    /// default; a rebuild already waiting uses the new one at once): a test holds the old
    /// index for an hour, then lets the rebuild run, instead of racing the clock.
    pub fn set_sound_rebuild_interval(&self, interval: Duration) {
        self.sound().set_rebuild_interval(interval);
    }
}

/// Clears the scheduled flag when the background rebuild ends, however it ends.
struct Unschedule(Arc<AtomicBool>);

impl Drop for Unschedule {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Sound {
    pub(crate) fn new(db: Db, enabled: bool, cpu: crate::cpu::CpuSlots) -> Sound {
        Sound {
            db,
            enabled,
            cpu,
            index: Arc::default(),
            building: Arc::default(),
            scheduled: Arc::default(),
            builds: Arc::default(),
            rebuild_interval: Arc::new(tokio::sync::watch::Sender::new(REBUILD_INTERVAL)),
        }
    }

    /// How many times the neighbour index was built.
    #[cfg(feature = "test-support")]
    pub(crate) fn builds(&self) -> usize {
        self.builds.load(Ordering::SeqCst)
    }

    /// Sets the least time between two builds (a rebuild already waiting uses it at once).
    #[cfg(feature = "test-support")]
    pub(crate) fn set_rebuild_interval(&self, interval: Duration) {
        self.rebuild_interval.send_replace(interval);
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
        let waiting: Vec<(String, String, Option<String>, Option<i64>)> = self
            .db
            .sql(&format!(
                "SELECT t.id, t.storage_uri, t.content_sha256, t.duration_ms FROM tracks t
                 WHERE t.availability = 'available' AND t.storage_uri <> '' AND NOT EXISTS
                   (SELECT 1 FROM track_features f WHERE f.track_id = t.id AND f.version = $1
                      AND (f.content_sha256 = t.content_sha256 OR f.content_sha256 IS NULL))
                 ORDER BY t.created_at, t.id LIMIT {limit}"
            ))
            .bind(VERSION)
            .fetch_all(self.db.pool())
            .await?;
        for (id, key, sha, duration_ms) in waiting {
            if should_yield().await {
                report.yielded = true;
                break;
            }
            let too_long = duration_ms.is_some_and(|ms| ms > MAX_ANALYSED_MS);
            let outcome = match storage.local_file(&key).await {
                // bliss decodes the whole track into memory (22,050 samples a second): a
                // three-hour recording would hold a gigabyte.
                Ok(_) if too_long => Err(format!(
                    "longer than {} minutes: not analysed (the analysis holds the whole decoded track in memory)",
                    MAX_ANALYSED_MS / 60_000
                )),
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

    /// Candidates that sound like `id` (none when it has no features), playable.
    pub(crate) async fn sounds_like(&self, id: &str, limit: usize) -> Result<Vec<Candidate>> {
        Ok(self
            .nearest_playable(id, limit)
            .await?
            .into_iter()
            .map(|(track, similarity)| Candidate {
                track_id: track.id,
                artist: track.artist,
                score: SOUNDS_LIKE * similarity,
                reasons: vec![Reason::SoundsLike],
            })
            .collect())
    }

    /// The `count` playable tracks nearest to `id` by sound, with their similarity (1 the
    /// same).
    pub(crate) async fn nearest(&self, id: &TrackId, count: usize) -> Result<Vec<(String, f64)>> {
        Ok(self
            .nearest_playable(id.as_str(), count)
            .await?
            .into_iter()
            .map(|(track, similarity)| (track.id, similarity))
            .collect())
    }

    /// The `count` playable tracks nearest to `id`: the tree is asked for a few more than
    /// `count`, and for more again while unplayable ones leave the answer short.
    async fn nearest_playable(&self, id: &str, count: usize) -> Result<Vec<(Playable, f64)>> {
        let Some(index) = self.index_with(&[id]).await? else {
            return Ok(Vec::new());
        };
        let Some(&at) = index.by_id.get(id) else {
            return Ok(Vec::new());
        };
        if count == 0 {
            return Ok(Vec::new());
        }
        let total = index.ids.len();
        let mut wanted = count + count / 2 + 2;
        loop {
            let Some(asked) = NonZero::new(wanted.min(total)) else {
                return Ok(Vec::new());
            };
            let hits: Vec<usize> = index
                .tree
                .query(&index.points[at])
                .nearest_n::<SquaredEuclidean<f32>>(asked)
                .execute()
                .into_iter()
                .map(|hit| hit.item as usize)
                .filter(|&item| item != at)
                .collect();
            let playable = self
                .playable(hits.iter().map(|&item| index.ids[item].as_str()))
                .await?;
            let found: Vec<(Playable, f64)> = hits
                .iter()
                .filter_map(|&item| {
                    let track = playable.get(index.ids[item].as_str())?.clone();
                    let distance = euclidean(&index.points[at], &index.points[item]);
                    Some((track, similarity(distance)))
                })
                .take(count)
                .collect();
            if found.len() >= count || wanted >= total {
                return Ok(found);
            }
            wanted *= 4;
        }
    }

    /// Which of `ids` are playable, with the artist the cap counts.
    async fn playable<'a>(
        &self,
        ids: impl Iterator<Item = &'a str>,
    ) -> Result<HashMap<String, Playable>> {
        let ids: Vec<&str> = ids.collect();
        let mut out = HashMap::new();
        for chunk in ids.chunks(crate::db::CHUNK) {
            let mut select = self.db.sql(
                "SELECT t.id, t.artist_id, t.artist_name FROM tracks t
                 WHERE t.availability = 'available' AND t.id IN (",
            );
            select.push_list(chunk.iter().copied()).push(")");
            let rows: Vec<(String, Option<String>, Option<String>)> =
                select.fetch_all(self.db.pool()).await?;
            for (id, artist_id, artist_name) in rows {
                let artist =
                    artist_id.or_else(|| artist_name.as_deref().map(crate::text::name_key));
                out.insert(id.clone(), Playable { id, artist });
            }
        }
        Ok(out)
    }

    /// Records in `known` whether each of `items` (of `index`) is playable, reading only
    /// those not known yet.
    async fn learn_playable(
        &self,
        index: &Index,
        items: impl Iterator<Item = usize>,
        known: &mut HashMap<usize, bool>,
    ) -> Result<()> {
        let unknown: Vec<usize> = items
            .filter(|item| !known.contains_key(item))
            .collect::<HashSet<usize>>()
            .into_iter()
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let playable = self
            .playable(unknown.iter().map(|&item| index.ids[item].as_str()))
            .await?;
        for item in unknown {
            known.insert(item, playable.contains_key(index.ids[item].as_str()));
        }
        Ok(())
    }

    /// About `count` tracks from `from` to `to`: both ends, and between them the unused
    /// playable track nearest to each evenly spaced point of the straight line joining their
    /// sounds. Each similarity is to `from` (OpenSubsonic: relative to the starting song).
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
        let total = index.ids.len();
        let mut used: HashSet<usize> = HashSet::from([start, end]);
        let mut path = vec![(index.ids[start].clone(), 1.0)];
        let steps = count.max(2) - 1;
        let points: Vec<[f32; NUMBER_FEATURES]> = (1..steps)
            .map(|step| {
                let t = step as f32 / steps as f32;
                let mut point = [0f32; NUMBER_FEATURES];
                for (axis, value) in point.iter_mut().enumerate() {
                    *value = a[axis] + (b[axis] - a[axis]) * t;
                }
                point
            })
            .collect();
        let nearest = |point: &[f32; NUMBER_FEATURES], wanted: usize| -> Vec<usize> {
            let asked = NonZero::new(wanted.min(total)).expect("at least one");
            index
                .tree
                .query(point)
                .nearest_n::<SquaredEuclidean<f32>>(asked)
                .execute()
                .into_iter()
                .map(|hit| hit.item as usize)
                .collect()
        };
        // Whether each track near the path is playable, read once for every step: enough
        // neighbours per step that the tracks earlier steps took still leave some.
        let mut playable: HashMap<usize, bool> = HashMap::new();
        let near: Vec<Vec<usize>> = points
            .iter()
            .map(|point| nearest(point, points.len() + 10))
            .collect();
        self.learn_playable(&index, near.iter().flatten().copied(), &mut playable)
            .await?;
        for (point, mut hits) in points.iter().zip(near) {
            let mut wanted = hits.len();
            let next = loop {
                let found = hits
                    .iter()
                    .copied()
                    .find(|item| !used.contains(item) && playable.get(item) == Some(&true));
                if found.is_some() || wanted >= total {
                    break found;
                }
                // Rare: most tracks near this point are taken or not playable.
                wanted *= 4;
                hits = nearest(point, wanted);
                self.learn_playable(&index, hits.iter().copied(), &mut playable)
                    .await?;
            };
            if let Some(item) = next {
                used.insert(item);
                let distance = euclidean(&a, &index.points[item]);
                path.push((index.ids[item].clone(), similarity(distance)));
            }
        }
        if start != end {
            path.push((index.ids[end].clone(), similarity(euclidean(&a, &b))));
        }
        Ok(path)
    }

    /// The index for a query about `ids`. A request never waits for a build, except the
    /// very first when all of `ids` have stored features; an index older than the stored
    /// features answers while a rebuild is scheduled in the background (see
    /// [`Sound::schedule_rebuild`]).
    async fn index_with(&self, ids: &[&str]) -> Result<Option<Arc<Index>>> {
        let current = self.index.read().await.clone();
        if let Some(index) = current {
            if read_stamp(&self.db).await? != index.stamp {
                self.schedule_rebuild();
            }
            return Ok(Some(index));
        }
        if !self.all_analysed(ids).await? {
            return Ok(None);
        }
        self.rebuild().await?;
        Ok(self.index.read().await.clone())
    }

    /// Whether every one of `ids` has stored features.
    async fn all_analysed(&self, ids: &[&str]) -> Result<bool> {
        let unique: HashSet<&str> = ids.iter().copied().collect();
        let mut select = self.db.sql(
            "SELECT COUNT(*) FROM track_features
             WHERE features IS NOT NULL AND version = ",
        );
        select
            .push_bind(VERSION)
            .push(" AND track_id IN (")
            .push_list(unique.iter().copied())
            .push(")");
        let found: i64 = select.fetch_scalar(self.db.pool()).await?;
        Ok(found as usize == unique.len())
    }

    /// Rebuilds the index in the background: nothing when a rebuild is already scheduled or
    /// running; otherwise once [`REBUILD_INTERVAL`] has passed since the last build.
    fn schedule_rebuild(&self) {
        if self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let _unschedule = Unschedule(this.scheduled.clone());
            let mut interval = this.rebuild_interval.subscribe();
            loop {
                let wait = this.building.lock().await.map_or(Duration::ZERO, |at| {
                    interval.borrow_and_update().saturating_sub(at.elapsed())
                });
                if wait.is_zero() {
                    break;
                }
                // Until the interval has passed since the last build, or it changes.
                tokio::select! {
                    () = tokio::time::sleep(wait) => break,
                    changed = interval.changed() => {
                        if changed.is_err() {
                            break;
                        }
                    }
                }
            }
            if let Err(error) = this.rebuild().await {
                tracing::warn!(error = %crate::error_chain(&error), "cannot rebuild the sound index");
            }
        });
    }

    /// Builds the index from the stored features, unless it is already as new as they are
    /// (the counter is read under the build lock, before the features).
    async fn rebuild(&self) -> Result<()> {
        let mut building = self.building.lock().await;
        let stamp = read_stamp(&self.db).await?;
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
        self.builds.fetch_add(1, Ordering::SeqCst);
        *building = Some(Instant::now());
        Ok(())
    }
}

/// A playable track with the artist the cap counts.
#[derive(Debug, Clone)]
struct Playable {
    id: String,
    artist: Option<String>,
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

/// Tracks longer than this are not analysed: the decoded track (mono, 22,050 Hz, f32) is
/// held in memory whole, about 80 MB for 15 minutes.
pub(crate) const MAX_ANALYSED_MS: i64 = 15 * 60 * 1000;

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
async fn imports_waiting(jobs: &Jobs) -> bool {
    jobs.imports_waiting().await
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
    type Service = super::Recommend;

    fn dedup_key(_payload: &AnalyzeSoundPayload) -> Option<String> {
        Some(Self::NAME.to_string())
    }

    async fn run(
        recommend: &super::Recommend,
        context: &JobContext,
        _payload: AnalyzeSoundPayload,
    ) -> Result<Value, JobError> {
        let jobs = recommend.jobs.clone();
        let mut total = SoundReport::default();
        loop {
            let report = recommend
                .sound()
                .analyze_pending(&recommend.storage, 20, || imports_waiting(&jobs))
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
pub(crate) async fn sweep(recommend: &super::Recommend) -> Result<()> {
    let db = &recommend.db;
    if recommend.sound().enabled() && !imports_waiting(&recommend.jobs).await {
        let status = recommend.sound().status().await?;
        if status.pending > 0 {
            recommend
                .jobs
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
        recommend
            .jobs
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
pub(crate) async fn sweep_forever(recommend: super::Recommend, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let interval = recommend.sweep_interval;
    loop {
        if let Err(error) = sweep(&recommend).await {
            tracing::warn!(error = %crate::error_chain(&error), "cannot look for recommendation work");
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
