//! Recommendations: the stateless radio (`POST /radio`, `/radio/next`), similar tracks and
//! similar artists, each item with its reasons and a score; the legacy interface's random,
//! top and similar songs use the same engine.
//!
//! Everything is computed from the library itself:
//!
//! - metadata: the seed's artist, its genre (normalised by [`genre_key`]) and era;
//! - artists similar to the seed's (`artists.rs`: shared genres, co-listening, co-liking and
//!   shared playlists, weighed by the `compute_similarity` job into `artist_similarity`);
//! - tracks played by the same people within half an hour of the seed (`listened_together`,
//!   read per request from `play_events` by track);
//! - the caller's likes;
//! - the sound (`sound.rs`: bliss-audio features per track, nearest neighbours from an
//!   in-memory k-d tree);
//! - optionally an external recommender (`external.rs`), asked alongside and waited for
//!   only while the heuristics compute plus [`EXTERNAL_GRACE`]: left out when absent, slow
//!   or failing, so it never makes an answer slower than the heuristics and the grace.
//!
//! Signals become scored [`batch::Candidate`]s, merged per track; `batch.rs` assembles a
//! batch under the feed's rules (pure and property-tested). The server keeps no session: a
//! batch depends only on the request (seed, exclusions, count) and the library, so any
//! replica answers `POST /radio/next`. Random samples are range reads over the indexed
//! `tracks.shuffle_key`, never `ORDER BY RANDOM()` over the table.

mod artists;
pub(crate) mod batch;
mod external;
mod signals;
mod sound;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Caller;
use crate::catalog::{Catalog, ItemKind, TrackRow, TRACK_SELECT};
use crate::config::RecommendConfig;
use crate::db::Db;
use crate::domain::{shuffle_key, Artist, Availability, Track};
use crate::ids::{ArtistId, TrackId};
use crate::jobs::{Jobs, Registry};
use crate::storage::Storage;
use crate::{Error, Result};

pub use artists::{ArtistReason, ComputeSimilarity, SimilarityReport};
pub use batch::{Reason, EXPLORATION_SHARE};
pub use external::{
    ExternalPlugin, ExternalRecommender, ExternalRequest, ExternalSeed, ExternalSuggestion,
    HttpRecommender,
};
pub use sound::{AnalyzeSound, SoundReport, SoundStatus};

use batch::{Candidate, Pools};
use signals::Seed;

/// Default and largest batch of the radio.
pub const RADIO_DEFAULT_COUNT: usize = 20;
/// Largest batch of the radio.
pub const RADIO_MAX_COUNT: usize = 100;
/// Most ids a radio request may exclude.
pub const RADIO_MAX_EXCLUDE: usize = 5000;
/// How many of the caller's liked tracks (at random) seed a feed without a seed track.
const LIKED_SEEDS: usize = 3;
/// Largest answer of the similar-tracks and similar-artists lists.
pub const SIMILAR_MAX: usize = 100;
pub use crate::config::EXTERNAL_GRACE;

/// A genre as compared: lower case, "&" as "and", letters and digits only, so "Hip-Hop",
/// "hip hop" and "HipHop" are one genre. A tag holding several ("Rock; Pop") is split on
/// `;`, `/`, `,` and `|`.
pub fn genre_keys(genre: &str) -> Vec<String> {
    genre
        .split([';', '/', ',', '|'])
        .map(genre_key)
        .filter(|key| !key.is_empty())
        .collect()
}

/// One genre as compared (see [`genre_keys`]).
pub fn genre_key(genre: &str) -> String {
    genre
        .to_lowercase()
        .replace('&', "and")
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// A radio request: the wire shape of `POST /radio` and `POST /radio/next`.
#[derive(Debug, Clone, Default)]
pub struct RadioRequest {
    /// The seed; without one the feed starts from the caller's likes.
    pub seed_track_id: Option<String>,
    /// Tracks the client has already seen (at most [`RADIO_MAX_EXCLUDE`]).
    pub exclude_ids: Vec<String>,
    /// Batch size, 1 to [`RADIO_MAX_COUNT`] ([`RADIO_DEFAULT_COUNT`] when absent).
    pub count: Option<usize>,
}

/// One recommended track.
#[derive(Debug, Clone)]
pub struct RadioItem {
    /// The track.
    pub track: Track,
    /// Why (at least one).
    pub reasons: Vec<Reason>,
    /// How strongly the signals recommend it (0 for exploration and filler).
    pub score: f64,
}

/// One similar artist.
#[derive(Debug, Clone)]
pub struct SimilarArtist {
    /// The artist.
    pub artist: Artist,
    /// Why (at least one).
    pub reasons: Vec<ArtistReason>,
    /// How similar, 0 to 1.
    pub score: f64,
}

/// A track acoustically near another.
#[derive(Debug, Clone)]
pub struct SonicMatch {
    /// The track.
    pub track: Track,
    /// 1 for the same sound, towards 0 for very different sounds.
    pub similarity: f64,
}

/// The recommendations service.
#[derive(Clone)]
pub struct Recommend {
    db: Db,
    catalog: Catalog,
    storage: Storage,
    jobs: Jobs,
    /// How often a worker process looks for recommendation work (`sweep_interval`).
    sweep_interval: std::time::Duration,
    signals: signals::Signals,
    sound: sound::Sound,
    external: Option<external::Guarded>,
    /// How long a batch waits for the external recommender once its own signals are read.
    external_grace: std::time::Duration,
}

impl std::fmt::Debug for Recommend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recommend")
            .field("external", &self.external.is_some())
            .finish_non_exhaustive()
    }
}

impl Recommend {
    pub(crate) fn new(
        db: Db,
        catalog: Catalog,
        storage: Storage,
        jobs: Jobs,
        config: &RecommendConfig,
        cpu: crate::cpu::CpuSlots,
    ) -> Recommend {
        let external = config
            .external
            .as_ref()
            .map(|plugin| plugin.0.clone())
            .or_else(|| {
                config.external_url.as_ref().map(|url| {
                    Arc::new(HttpRecommender::new(url.clone())) as Arc<dyn ExternalRecommender>
                })
            })
            .map(|recommender| external::Guarded::new(recommender, config));
        Recommend {
            external_grace: config.external_grace,
            signals: signals::Signals::new(db.clone()),
            sound: sound::Sound::new(db.clone(), config.sound_analysis, cpu),
            db,
            catalog,
            storage,
            jobs,
            sweep_interval: config.sweep_interval,
            external,
        }
    }

    /// Registers the recommendations' job kinds and the sweep that queues them.
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<AnalyzeSound>(self.clone(), config);
        registry.kind::<ComputeSimilarity>(self.clone(), config);
        let recommend = self.clone();
        registry.periodic("recommend_sweep", move |shutdown| {
            sound::sweep_forever(recommend.clone(), shutdown)
        });
    }

    /// A batch of the radio: similar tracks to the seed (or to the caller's likes when there
    /// is none) mixed with an exploration share, then random playable filler, never an
    /// excluded id or the seed, never a track twice, at most [`batch::artist_cap`] tracks of
    /// an artist while the library allows. Fewer than `count` items only when fewer playable
    /// tracks remain.
    pub async fn radio(&self, caller: &Caller, request: &RadioRequest) -> Result<Vec<RadioItem>> {
        let count = request.count.unwrap_or(RADIO_DEFAULT_COUNT);
        if !(1..=RADIO_MAX_COUNT).contains(&count) {
            return Err(Error::invalid(
                "count",
                format!("must be between 1 and {RADIO_MAX_COUNT}"),
            ));
        }
        if request.exclude_ids.len() > RADIO_MAX_EXCLUDE {
            return Err(Error::invalid(
                "exclude_ids",
                format!("at most {RADIO_MAX_EXCLUDE} ids"),
            ));
        }
        let excluded: HashSet<String> = request.exclude_ids.iter().cloned().collect();
        let seeds = match &request.seed_track_id {
            Some(id) => {
                let id = TrackId::parse(id).map_err(|_| Error::not_found("track", id))?;
                vec![self
                    .signals
                    .seed(&id)
                    .await?
                    .ok_or_else(|| Error::not_found("track", &id))?]
            }
            None => self.signals.liked_seeds(caller, LIKED_SEEDS).await?,
        };
        let seed_id = request.seed_track_id.as_deref();

        // The external recommender runs beside the signal reads, in a task of its own (so its
        // timeout and pause apply even when this request stops waiting for it).
        let external = self.external_candidates(caller, &seeds, count);
        // The seeds' reads and the caller's likes at once (a feed from likes has several
        // seeds), each seed's share of the candidates smaller the more seeds there are.
        let per_seed = (60 / seeds.len().max(1)).max(20);
        let per_seed_sound = (30 / seeds.len().max(1)).max(10);
        let seed_reads = futures::future::try_join_all(seeds.iter().map(|seed| async move {
            let mut found = self.signals.similar(seed, per_seed).await?;
            found.extend(self.sound.sounds_like(&seed.id, per_seed_sound).await?);
            Ok::<_, Error>(found)
        }));
        let liked_reads = async {
            if request.seed_track_id.is_none() {
                self.signals.liked(caller, 100).await
            } else {
                Ok(Vec::new())
            }
        };
        let (reads, liked_candidates, liked) =
            futures::try_join!(seed_reads, liked_reads, self.signals.liked_set(caller))?;
        let mut candidates: Vec<_> = reads.into_iter().flatten().collect();
        candidates.extend(liked_candidates);

        // Exploration: random playable tracks outside the seeds' artists and genres.
        let want = count + excluded.len().min(4 * count);
        let seed_artists: HashSet<&str> = seeds.iter().flat_map(|seed| seed.artists()).collect();
        let seed_genres: HashSet<&str> = seeds
            .iter()
            .flat_map(|seed| seed.genres.iter().map(String::as_str))
            .collect();
        let exploration: Vec<Candidate> = self
            .signals
            .random(2 * want)
            .await?
            .into_iter()
            .filter(|track| {
                !track
                    .artist
                    .as_deref()
                    .is_some_and(|artist| seed_artists.contains(artist))
                    && !track
                        .genres
                        .iter()
                        .any(|genre| seed_genres.contains(genre.as_str()))
            })
            .map(|track| track.candidate(0.0, vec![Reason::Exploration]))
            .collect();
        let filler = self
            .signals
            .random(2 * want)
            .await?
            .into_iter()
            .map(|track| track.candidate(0.0, vec![Reason::Filler]))
            .collect();

        // The heuristics are done: the external suggestions that came, or those that come
        // within the grace.
        if let Some(external) = external {
            if let Ok(Ok(suggested)) = tokio::time::timeout(self.external_grace, external).await {
                candidates.extend(suggested);
            }
        }
        mark_liked(&mut candidates, &liked);
        jitter(&mut candidates);
        let similar = batch::merge(candidates);
        let mut pools = Pools {
            similar,
            exploration,
            filler,
        };
        let mut chosen = batch::assemble(pools.clone(), count, seed_id, &excluded);
        let taken = |chosen: &[Candidate]| {
            let mut taken = excluded.clone();
            taken.extend(chosen.iter().map(|item| item.track_id.clone()));
            if let Some(seed) = seed_id {
                taken.insert(seed.to_string());
            }
            taken
        };
        if chosen.len() < count {
            // The samples were used up by exclusions: walk the library for what is left.
            pools.filler = self
                .signals
                .remaining(&taken(&chosen), &HashSet::new(), count - chosen.len())
                .await?
                .into_iter()
                .map(|track| track.candidate(0.0, vec![Reason::Filler]))
                .collect();
            chosen = batch::assemble(pools.clone(), count, seed_id, &excluded);
        }
        // The cap gave way for the samples, which may not for the library (one artist holding
        // most of it): walk the library for other artists' tracks before accepting it.
        let over = over_cap(&chosen, batch::artist_cap(count));
        if !over.is_empty() {
            let others: Vec<Candidate> = self
                .signals
                .remaining(&taken(&chosen), &over, count)
                .await?
                .into_iter()
                .map(|track| track.candidate(0.0, vec![Reason::Filler]))
                .collect();
            if !others.is_empty() {
                pools.filler.extend(others);
                chosen = batch::assemble(pools, count, seed_id, &excluded);
            }
        }
        self.items(chosen).await
    }

    /// Tracks like `id`, best first: the radio's signals without exploration or filler.
    pub async fn similar_tracks_of(
        &self,
        caller: &Caller,
        id: &TrackId,
        limit: usize,
    ) -> Result<Vec<RadioItem>> {
        let limit = limit.clamp(1, SIMILAR_MAX);
        let seed = self
            .signals
            .seed(id)
            .await?
            .ok_or_else(|| Error::not_found("track", id))?;
        let mut candidates = self.signals.similar(&seed, limit.max(40)).await?;
        candidates.extend(self.sound.sounds_like(id.as_str(), limit).await?);
        let liked = self.signals.liked_set(caller).await?;
        mark_liked(&mut candidates, &liked);
        let mut ranked = batch::merge(candidates);
        ranked.retain(|candidate| candidate.track_id != id.as_str());
        ranked.truncate(limit);
        self.items(ranked).await
    }

    /// Artists like `id`, best first, with the signals that link them.
    pub async fn similar_artists(&self, id: &ArtistId, limit: usize) -> Result<Vec<SimilarArtist>> {
        let limit = limit.clamp(1, SIMILAR_MAX);
        // Not found when the artist is not.
        self.catalog.get_artist(id).await?;
        let ranked = artists::similar(&self.db, id, limit).await?;
        let ids: Vec<ArtistId> = ranked.iter().map(|(artist, _, _)| artist.clone()).collect();
        let found = self.catalog.artists_by_ids(&ids).await?;
        Ok(ranked
            .into_iter()
            .filter_map(|(artist_id, score, reasons)| {
                let artist = found.iter().find(|artist| artist.id == artist_id)?.clone();
                Some(SimilarArtist {
                    artist,
                    reasons,
                    score,
                })
            })
            .collect())
    }

    /// Recomputes artist similarity now (what the `compute_similarity` job runs).
    pub async fn compute_similarity(&self) -> Result<SimilarityReport> {
        artists::compute(&self.db).await
    }

    /// Analyses the sound of up to `limit` tracks that have none yet (what the
    /// `analyze_sound` job runs, without its yielding to imports).
    pub async fn analyze_pending(
        &self,
        storage: &crate::storage::Storage,
        limit: usize,
    ) -> Result<SoundReport> {
        self.sound
            .analyze_pending(storage, limit, || async { false })
            .await
    }

    /// How much of the library has its sound analysed.
    pub async fn sound_status(&self) -> Result<SoundStatus> {
        self.sound.status().await
    }

    /// Tracks that sound like `id` (the OpenSubsonic `getSonicSimilarTracks`), nearest
    /// first. Empty when `id` has no analysed sound.
    pub async fn sonic_similar(&self, id: &TrackId, count: usize) -> Result<Vec<SonicMatch>> {
        self.catalog.get_track(id).await?;
        let near = self.sound.nearest(id, count.clamp(1, SIMILAR_MAX)).await?;
        self.sonic_matches(near).await
    }

    /// A path of about `count` tracks leading by sound from `from` to `to` (the
    /// OpenSubsonic `findSonicPath`): both ends included, each step the unused track
    /// nearest to the evenly spaced point between them. Empty when either end has no
    /// analysed sound.
    pub async fn sonic_path(
        &self,
        from: &TrackId,
        to: &TrackId,
        count: usize,
    ) -> Result<Vec<SonicMatch>> {
        self.catalog.get_track(from).await?;
        self.catalog.get_track(to).await?;
        let path = self
            .sound
            .path(from, to, count.clamp(2, SIMILAR_MAX))
            .await?;
        self.sonic_matches(path).await
    }

    /// The tracks of `ids` that are (still) playable, by id.
    async fn playable_tracks(&self, ids: &[&str]) -> Result<HashMap<String, Track>> {
        Ok(self
            .catalog
            .tracks_in_order(ids)
            .await?
            .into_iter()
            .filter(|track| track.availability == Availability::Available)
            .map(|track| (track.id.to_string(), track))
            .collect())
    }

    /// The matches whose tracks are (still) playable, in order.
    async fn sonic_matches(&self, near: Vec<(String, f64)>) -> Result<Vec<SonicMatch>> {
        let ids: Vec<&str> = near.iter().map(|(id, _)| id.as_str()).collect();
        let mut tracks = self.playable_tracks(&ids).await?;
        Ok(near
            .into_iter()
            .filter_map(|(id, similarity)| {
                let track = tracks.remove(&id)?;
                Some(SonicMatch { track, similarity })
            })
            .collect())
    }

    /// The external recommender's candidates, asked in a task of its own; none when there
    /// is no recommender or it is paused.
    fn external_candidates(
        &self,
        caller: &Caller,
        seeds: &[Seed],
        count: usize,
    ) -> Option<tokio::task::JoinHandle<Vec<Candidate>>> {
        let external = self.external.clone()?;
        if external.paused().is_some() {
            return None;
        }
        let signals = self.signals.clone();
        let request = ExternalRequest {
            user_id: caller.user.id.to_string(),
            seeds: seeds.iter().map(Seed::external).collect(),
            count,
        };
        Some(tokio::spawn(async move {
            let suggestions = external.suggest(&request).await;
            signals.resolve_external(suggestions).await
        }))
    }

    /// How the external recommender stands.
    pub fn external_status(&self) -> ExternalStatus {
        match &self.external {
            None => ExternalStatus::Disabled,
            Some(external) => match external.paused() {
                Some((left, reason)) => ExternalStatus::Paused { left, reason },
                None => ExternalStatus::Configured,
            },
        }
    }

    /// The chosen candidates as items, each track looked up by id: a track gone (or no
    /// longer playable) since it was chosen drops only itself.
    async fn items(&self, chosen: Vec<Candidate>) -> Result<Vec<RadioItem>> {
        let ids: Vec<&str> = chosen.iter().map(|item| item.track_id.as_str()).collect();
        let mut tracks = self.playable_tracks(&ids).await?;
        Ok(chosen
            .into_iter()
            .filter_map(|candidate| {
                let track = tracks.remove(&candidate.track_id)?;
                Some(RadioItem {
                    track,
                    reasons: candidate.reasons,
                    score: (candidate.score * 1000.0).round() / 1000.0,
                })
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
        let count = count.max(1);
        let start = shuffle_key();
        let mut tracks = Vec::new();
        // From a random point of the shuffle order to its end, then from its beginning.
        for (from, to) in [(start, i64::MAX), (0, start)] {
            let mut select = self.db.sql(TRACK_SELECT);
            select.push_condition().push("t.availability = 'available'");
            select
                .push_condition()
                .push("t.shuffle_key >= ")
                .push_bind(from);
            select
                .push_condition()
                .push("t.shuffle_key < ")
                .push_bind(to);
            if let Some(genre) = genre.map(str::trim).filter(|genre| !genre.is_empty()) {
                select
                    .push_condition()
                    .push("LOWER(t.genre) = ")
                    .push_bind(genre.to_lowercase());
            }
            if let Some(from) = from_year {
                select.push_condition().push("t.year >= ").push_bind(from);
            }
            if let Some(to) = to_year {
                select.push_condition().push("t.year <= ").push_bind(to);
            }
            let left = count - tracks.len() as i64;
            select.push(&format!(" ORDER BY t.shuffle_key LIMIT {left}"));
            let rows: Vec<TrackRow> = select.fetch_all(self.db.pool()).await?;
            tracks.extend(rows.into_iter().map(Track::from));
            if tracks.len() as i64 >= count {
                break;
            }
        }
        Ok(tracks)
    }

    /// The most played tracks (by everyone) of the artist named `artist`, then the rest of
    /// theirs in album order.
    pub async fn top_tracks(&self, artist: &str, count: i64) -> Result<Vec<Track>> {
        let key = crate::text::name_key(artist.trim());
        let id: Option<String> = self
            .db
            .sql("SELECT id FROM artists WHERE name_key = $1")
            .bind(key)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        match id {
            Some(id) => self.top_tracks_of(&ArtistId::from_db(id), count).await,
            None => Ok(Vec::new()),
        }
    }

    /// The most played tracks (by everyone) of the artist `id`, then the rest of theirs in
    /// album order.
    pub async fn top_tracks_of(&self, id: &ArtistId, count: i64) -> Result<Vec<Track>> {
        let rows: Vec<TrackRow> = self
            .db
            .sql(&format!(
                "{TRACK_SELECT}
             LEFT JOIN (SELECT p.track_id, COUNT(*) AS plays FROM play_events p
                        JOIN tracks pt ON pt.id = p.track_id WHERE pt.artist_id = $1 GROUP BY p.track_id) s
               ON s.track_id = t.id
             WHERE t.artist_id = $1 AND t.availability = 'available'
             ORDER BY COALESCE(s.plays, 0) DESC, LOWER(t.album_title), t.disc_number, t.track_number, t.id
             LIMIT {}",
                count.max(1)
            ))
            .bind(id)
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(Track::from).collect())
    }

    /// Up to `count` playable tracks like the track, album or artist `id` (the legacy
    /// interface's `getSimilarSongs`): for a track, its similar tracks; for an album or an
    /// artist, those of a few of its tracks, merged.
    pub async fn similar_tracks(
        &self,
        caller: &Caller,
        id: &str,
        count: i64,
    ) -> Result<Vec<Track>> {
        let count = count.clamp(1, SIMILAR_MAX as i64) as usize;
        let seeds: Vec<TrackId> = match self.catalog.item_kind(id).await? {
            Some(ItemKind::Track) => vec![TrackId::parse(id)?],
            Some(ItemKind::Album) | Some(ItemKind::Artist) => {
                let column = if self.catalog.item_kind(id).await? == Some(ItemKind::Album) {
                    "album_id"
                } else {
                    "artist_id"
                };
                self.db
                    .sql(&format!(
                        "SELECT id FROM tracks WHERE {column} = $1 AND availability = 'available'
                         ORDER BY shuffle_key LIMIT 3"
                    ))
                    .bind(id)
                    .fetch_scalars(self.db.pool())
                    .await?
                    .into_iter()
                    .map(TrackId::from_db)
                    .collect()
            }
            _ => return Err(Error::not_found("track, album or artist", id)),
        };
        let mut candidates = Vec::new();
        for seed in &seeds {
            if let Some(seed) = self.signals.seed(seed).await? {
                candidates.extend(self.signals.similar(&seed, count.max(40)).await?);
            }
            candidates.extend(self.sound.sounds_like(seed.as_str(), count).await?);
        }
        let liked = self.signals.liked_set(caller).await?;
        mark_liked(&mut candidates, &liked);
        let seed_ids: HashSet<String> = seeds.iter().map(|seed| seed.to_string()).collect();
        let mut ranked = batch::merge(candidates);
        // The album's or artist's own tracks are no recommendation for it.
        let own: HashSet<String> = match self.catalog.item_kind(id).await? {
            Some(ItemKind::Track) => seed_ids,
            _ => self
                .db
                .sql("SELECT id FROM tracks WHERE album_id = $1 OR artist_id = $1")
                .bind(id)
                .fetch_scalars(self.db.pool())
                .await?
                .into_iter()
                .collect(),
        };
        ranked.retain(|candidate| !own.contains(&candidate.track_id));
        let chosen = batch::assemble(
            Pools {
                similar: ranked,
                ..Pools::default()
            },
            count,
            None,
            &HashSet::new(),
        );
        Ok(self
            .items(chosen)
            .await?
            .into_iter()
            .map(|item| item.track)
            .collect())
    }

    pub(crate) fn sound(&self) -> &sound::Sound {
        &self.sound
    }

    /// How many times this handle's sound index was built (for tests of its refresh).
    #[cfg(feature = "test-support")]
    pub fn sound_index_builds(&self) -> usize {
        self.sound.builds()
    }
}

/// How the external recommender stands (`GET /admin/services`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExternalStatus {
    /// None is configured.
    Disabled,
    /// Configured and asked.
    Configured,
    /// Left out after a failure or a timeout, for `left` more.
    Paused {
        /// Until it is asked again.
        left: Duration,
        /// What went wrong.
        reason: String,
    },
}

/// The artists holding more than `cap` items of `chosen`.
fn over_cap(chosen: &[Candidate], cap: usize) -> HashSet<String> {
    let mut per_artist: HashMap<&str, usize> = HashMap::new();
    for candidate in chosen {
        if let Some(artist) = &candidate.artist {
            *per_artist.entry(artist.as_str()).or_default() += 1;
        }
    }
    per_artist
        .into_iter()
        .filter(|(_, n)| *n > cap)
        .map(|(artist, _)| artist.to_string())
        .collect()
}

/// Adds [`Reason::Liked`] (and a little score) to candidates the caller likes.
fn mark_liked(candidates: &mut [Candidate], liked: &HashSet<String>) {
    for candidate in candidates {
        if liked.contains(&candidate.track_id) && !candidate.reasons.contains(&Reason::Liked) {
            candidate.reasons.push(Reason::Liked);
            candidate.score += 0.15;
        }
    }
}

/// Varies scores by up to a quarter either way, so consecutive batches of one feed differ
/// among candidates of about the same strength.
fn jitter(candidates: &mut [Candidate]) {
    for candidate in candidates {
        candidate.score *= 0.75 + 0.5 * rand::random::<f64>();
    }
}
