//! Assembling one batch of the radio from scored candidates: pure, so every rule of the feed
//! is a property test (below) rather than a hope about the database.
//!
//! The rules, in the order they bind:
//!
//! 1. never an excluded id, never the seed, never a track twice;
//! 2. no artist more than [`artist_cap`] times (2 in a batch of 20) while other candidates
//!    remain; only when every pool is exhausted may an artist come back;
//! 3. [`exploration_slots`] of the batch (a fifth, rounded) are exploration picks when there
//!    are enough of them, placed at even intervals; the rest are the best-scored similar
//!    candidates. Over many batches the share stays within half a slot per batch plus 0.02
//!    of [`EXPLORATION_SHARE`] (a property test over random libraries and seeds);
//! 4. whatever is still missing comes from the other pool, then from random playable filler,
//!    so the feed never runs dry while a playable track remains.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

/// Why a track was recommended; one or more per item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// By the seed's artist (or album artist).
    SameArtist,
    /// By an artist similar to the seed's (shared genres, co-listening, co-liking, playlists).
    SimilarArtist,
    /// Of the seed's genre (normalised: "Hip-Hop", "hip hop" and "HipHop" are one).
    SameGenre,
    /// From within five years of the seed.
    SameEra,
    /// Played by the same people within half an hour of the seed.
    ListenedTogether,
    /// Liked by the caller (or, for a feed without a seed, like what the caller likes).
    Liked,
    /// Close to the seed by its analysed sound (tempo, loudness, timbre, chroma).
    SoundsLike,
    /// Suggested by the external recommender.
    External,
    /// Chosen at random outside the seed's artists and genres, to widen the feed.
    Exploration,
    /// Random playable track, when the other signals ran out.
    Filler,
}

impl Reason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::SameArtist => "same_artist",
            Reason::SimilarArtist => "similar_artist",
            Reason::SameGenre => "same_genre",
            Reason::SameEra => "same_era",
            Reason::ListenedTogether => "listened_together",
            Reason::Liked => "liked",
            Reason::SoundsLike => "sounds_like",
            Reason::External => "external",
            Reason::Exploration => "exploration",
            Reason::Filler => "filler",
        }
    }
}

/// A track that may go in a batch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    pub track_id: String,
    /// The artist the cap counts (the track's artist id, else its artist name key).
    pub artist: Option<String>,
    pub score: f64,
    pub reasons: Vec<Reason>,
}

/// The candidates of one batch, by where they come from.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pools {
    /// Similar to the seed, best first after [`merge`].
    pub similar: Vec<Candidate>,
    /// Random playable tracks outside the seed's artists and genres.
    pub exploration: Vec<Candidate>,
    /// Random playable tracks.
    pub filler: Vec<Candidate>,
}

/// Share of a batch that is exploration.
pub const EXPLORATION_SHARE: f64 = 0.2;

/// Exploration picks in a batch of `count`.
pub(crate) fn exploration_slots(count: usize) -> usize {
    (count as f64 * EXPLORATION_SHARE).round() as usize
}

/// Most tracks of one artist in a batch of `count` (2 per 20, at least 1).
pub(crate) fn artist_cap(count: usize) -> usize {
    count.div_ceil(10).max(1)
}

/// Adds up what several signals said of the same track: one candidate per track, its score
/// the sum, its reasons the union; best first (ties by id, so the order is stable).
pub(crate) fn merge(candidates: impl IntoIterator<Item = Candidate>) -> Vec<Candidate> {
    let mut merged: Vec<Candidate> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for candidate in candidates {
        match index.get(&candidate.track_id) {
            Some(&at) => {
                let known = &mut merged[at];
                known.score += candidate.score;
                for reason in candidate.reasons {
                    if !known.reasons.contains(&reason) {
                        known.reasons.push(reason);
                    }
                }
                if known.artist.is_none() {
                    known.artist = candidate.artist;
                }
            }
            None => {
                index.insert(candidate.track_id.clone(), merged.len());
                merged.push(candidate);
            }
        }
    }
    for candidate in &mut merged {
        candidate.reasons.sort();
    }
    merged.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.track_id.cmp(&b.track_id))
    });
    merged
}

/// One batch of at most `count` items from `pools` (see the module's rules). `seed` and
/// `excluded` never appear.
pub(crate) fn assemble(
    pools: Pools,
    count: usize,
    seed: Option<&str>,
    excluded: &HashSet<String>,
) -> Vec<Candidate> {
    let cap = artist_cap(count);
    let mut taken: HashSet<String> = HashSet::new();
    if let Some(seed) = seed {
        taken.insert(seed.to_string());
    }
    let mut per_artist: HashMap<String, usize> = HashMap::new();
    let usable = |candidate: &Candidate, taken: &HashSet<String>| {
        !excluded.contains(&candidate.track_id) && !taken.contains(&candidate.track_id)
    };

    // Takes up to `want` from `pool` in order, under the artist cap when `capped`.
    let mut pick = |pool: &mut Vec<Candidate>,
                    want: usize,
                    capped: bool,
                    taken: &mut HashSet<String>|
     -> Vec<Candidate> {
        let mut out = Vec::new();
        let mut rest = Vec::with_capacity(pool.len());
        for candidate in pool.drain(..) {
            if out.len() >= want || !usable(&candidate, taken) {
                if usable(&candidate, taken) {
                    rest.push(candidate);
                }
                continue;
            }
            if capped {
                if let Some(artist) = &candidate.artist {
                    if per_artist.get(artist).copied().unwrap_or(0) >= cap {
                        rest.push(candidate);
                        continue;
                    }
                }
            }
            if let Some(artist) = &candidate.artist {
                *per_artist.entry(artist.clone()).or_default() += 1;
            }
            taken.insert(candidate.track_id.clone());
            out.push(candidate);
        }
        *pool = rest;
        out
    };

    let Pools {
        mut similar,
        mut exploration,
        mut filler,
    } = pools;
    // A similar track is never exploration.
    let similar_ids: HashSet<&str> = similar.iter().map(|c| c.track_id.as_str()).collect();
    exploration.retain(|candidate| !similar_ids.contains(candidate.track_id.as_str()));
    // Exploration first, so the artist cap never crowds it out of a small library.
    let explore_want = exploration_slots(count);
    let mut explored = pick(&mut exploration, explore_want, true, &mut taken);
    let mut chosen = pick(
        &mut similar,
        count.saturating_sub(explored.len()),
        true,
        &mut taken,
    );
    // Short: the other pools under the cap (filler before more exploration, so the share
    // holds while anything else is left), then anything left regardless of it.
    for capped in [true, false] {
        for pool in [&mut similar, &mut filler, &mut exploration] {
            let missing = count.saturating_sub(chosen.len() + explored.len());
            if missing == 0 {
                break;
            }
            let extra = pick(pool, missing, capped, &mut taken);
            for mut candidate in extra {
                if candidate.reasons.is_empty() {
                    candidate.reasons.push(Reason::Filler);
                }
                if candidate.reasons.contains(&Reason::Exploration) {
                    explored.push(candidate);
                } else {
                    chosen.push(candidate);
                }
            }
        }
    }
    interleave(chosen, explored)
}

/// The similar items in order with the exploration picks spread at even intervals.
fn interleave(chosen: Vec<Candidate>, explored: Vec<Candidate>) -> Vec<Candidate> {
    let total = chosen.len() + explored.len();
    if explored.is_empty() || total == 0 {
        return chosen;
    }
    let step = total as f64 / explored.len() as f64;
    let slots: HashSet<usize> = (0..explored.len())
        .map(|index| ((index as f64 + 0.5) * step) as usize)
        .collect();
    let mut chosen = chosen.into_iter();
    let mut explored = explored.into_iter();
    let mut out = Vec::with_capacity(total);
    for position in 0..total {
        let next = if slots.contains(&position) {
            explored.next().or_else(|| chosen.next())
        } else {
            chosen.next().or_else(|| explored.next())
        };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn candidate(id: usize, artist: usize, score: f64, reason: Reason) -> Candidate {
        Candidate {
            track_id: format!("t{id}"),
            artist: Some(format!("a{artist}")),
            score,
            reasons: vec![reason],
        }
    }

    /// A library of `tracks` tracks over `artists` artists, split into pools the way the
    /// service builds them (ids may repeat across pools, as they do there).
    fn pools_strategy() -> impl Strategy<Value = (Pools, usize, HashSet<String>, Option<String>)> {
        (
            1usize..200,
            1usize..40,
            0usize..60,
            0usize..30,
            0usize..60,
            1usize..60,
            proptest::collection::vec(0usize..200, 0..80),
            proptest::option::of(0usize..200),
            any::<u64>(),
        )
            .prop_map(
                |(tracks, artists, similar, exploration, filler, count, excluded, seed, salt)| {
                    let id = |n: u64| {
                        (n.wrapping_mul(6364136223846793005).wrapping_add(salt) % tracks as u64)
                            as usize
                    };
                    let artist_of = |track: usize| track % artists;
                    let make = |n: usize, offset: u64, reason: Reason| -> Vec<Candidate> {
                        (0..n)
                            .map(|i| {
                                let track = id(i as u64 + offset);
                                candidate(track, artist_of(track), 1.0 / (i + 1) as f64, reason)
                            })
                            .collect()
                    };
                    let pools = Pools {
                        similar: merge(make(similar, 0, Reason::SameGenre)),
                        exploration: make(exploration, 1000, Reason::Exploration),
                        filler: make(filler, 2000, Reason::Filler),
                    };
                    let excluded = excluded.into_iter().map(|n| format!("t{n}")).collect();
                    (pools, count, excluded, seed.map(|n| format!("t{n}")))
                },
            )
    }

    proptest! {
        #[test]
        fn never_excluded_never_the_seed_never_twice(
            (pools, count, excluded, seed) in pools_strategy()
        ) {
            let batch = assemble(pools, count, seed.as_deref(), &excluded);
            prop_assert!(batch.len() <= count);
            let mut seen = HashSet::new();
            for item in &batch {
                prop_assert!(!excluded.contains(&item.track_id));
                prop_assert!(Some(&item.track_id) != seed.as_ref());
                prop_assert!(seen.insert(item.track_id.clone()), "{} twice", item.track_id);
                prop_assert!(!item.reasons.is_empty());
            }
        }

        #[test]
        fn the_batch_is_full_while_anything_usable_remains(
            (pools, count, excluded, seed) in pools_strategy()
        ) {
            let mut usable: HashSet<String> = pools
                .similar
                .iter()
                .chain(&pools.exploration)
                .chain(&pools.filler)
                .map(|candidate| candidate.track_id.clone())
                .filter(|id| !excluded.contains(id))
                .collect();
            if let Some(seed) = &seed {
                usable.remove(seed);
            }
            let batch = assemble(pools, count, seed.as_deref(), &excluded);
            prop_assert_eq!(batch.len(), count.min(usable.len()));
        }

        #[test]
        fn an_artist_at_most_twice_in_twenty_when_the_library_allows(
            (pools, _count, excluded, seed) in pools_strategy()
        ) {
            let count = 20;
            let cap = artist_cap(count);
            // Candidates within the cap: per artist, at most `cap` of its usable tracks.
            let mut available: HashMap<String, HashSet<String>> = HashMap::new();
            for candidate in pools.similar.iter().chain(&pools.exploration).chain(&pools.filler) {
                if excluded.contains(&candidate.track_id) || Some(&candidate.track_id) == seed.as_ref() {
                    continue;
                }
                available
                    .entry(candidate.artist.clone().unwrap())
                    .or_default()
                    .insert(candidate.track_id.clone());
            }
            let within_cap: usize = available.values().map(|tracks| tracks.len().min(cap)).sum();
            let batch = assemble(pools, count, seed.as_deref(), &excluded);
            if within_cap >= count {
                let mut per_artist: HashMap<&str, usize> = HashMap::new();
                for item in &batch {
                    *per_artist.entry(item.artist.as_deref().unwrap()).or_default() += 1;
                }
                prop_assert!(per_artist.values().all(|&n| n <= cap), "{per_artist:?}");
            }
        }
    }

    /// How far the exploration share of many batches may stray from [`EXPLORATION_SHARE`]
    /// when the library allows it: the rounding of [`exploration_slots`] (half a slot per
    /// batch) plus 0.02.
    fn share_tolerance(count: usize) -> f64 {
        0.5 / count as f64 + 0.02
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// A library of random size and shape (artists of random sizes, a "similar" region
        /// the seed's genre covers and an exploration region), random seeds and scores, and
        /// a client asking 100 batches in a row, each excluding the last five batches: the
        /// exploration share stays within [`share_tolerance`] of [`EXPLORATION_SHARE`].
        #[test]
        fn the_exploration_share_holds_over_many_batches(
            count in 5usize..=40,
            artist_sizes in proptest::collection::vec(1usize..40, 20..80),
            similar_fraction in 0.2f64..0.6,
            salt in any::<u64>(),
        ) {
            // Track i belongs to the artist whose range holds it.
            let mut artist_of = Vec::new();
            for (artist, size) in artist_sizes.iter().enumerate() {
                artist_of.extend(std::iter::repeat_n(artist, *size));
            }
            let tracks = artist_of.len();
            let split = ((tracks as f64 * similar_fraction) as usize).max(1);
            // The library allows the share: both regions hold many batches' worth.
            prop_assume!(split >= 10 * count && tracks - split >= 10 * count);
            let mut state = salt | 1;
            let mut next = move || {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 33) as usize
            };
            let mut seen: Vec<String> = Vec::new();
            let (mut explored, mut total) = (0usize, 0usize);
            for _ in 0..100 {
                let excluded: HashSet<String> = seen.iter().rev().take(5 * count).cloned().collect();
                let seed = next() % tracks;
                let similar = merge((0..3 * count).map(|_| {
                    let track = next() % split;
                    candidate(track, artist_of[track], (next() % 1000) as f64, Reason::SameGenre)
                }));
                let exploration = (0..3 * count)
                    .map(|_| {
                        let track = split + next() % (tracks - split);
                        candidate(track, artist_of[track], 0.0, Reason::Exploration)
                    })
                    .collect();
                let filler = (0..2 * count)
                    .map(|_| {
                        let track = next() % tracks;
                        candidate(track, artist_of[track], 0.0, Reason::Filler)
                    })
                    .collect();
                let seed_id = format!("t{seed}");
                let batch = assemble(
                    Pools { similar, exploration, filler },
                    count,
                    Some(&seed_id),
                    &excluded,
                );
                prop_assert_eq!(batch.len(), count);
                explored += batch
                    .iter()
                    .filter(|item| item.reasons.contains(&Reason::Exploration))
                    .count();
                total += batch.len();
                seen.extend(batch.into_iter().map(|item| item.track_id));
            }
            let share = explored as f64 / total as f64;
            let tolerance = share_tolerance(count);
            prop_assert!(
                (share - EXPLORATION_SHARE).abs() <= tolerance,
                "exploration share {share:.3} in batches of {count}, wanted {EXPLORATION_SHARE} ± {tolerance:.3}"
            );
        }
    }

    #[test]
    fn merging_adds_scores_and_unites_reasons() {
        let merged = merge([
            candidate(1, 1, 0.5, Reason::SameGenre),
            candidate(2, 2, 0.4, Reason::SameArtist),
            candidate(1, 1, 0.3, Reason::SoundsLike),
        ]);
        assert_eq!(merged[0].track_id, "t1");
        assert!((merged[0].score - 0.8).abs() < 1e-9);
        assert_eq!(merged[0].reasons, [Reason::SameGenre, Reason::SoundsLike]);
        assert_eq!(merged[1].track_id, "t2");
    }

    #[test]
    fn exploration_is_spread_through_the_batch() {
        let similar = (0..16)
            .map(|i| candidate(i, i, 1.0, Reason::SameGenre))
            .collect();
        let exploration = (100..104)
            .map(|i| candidate(i, i, 0.0, Reason::Exploration))
            .collect();
        let batch = assemble(
            Pools {
                similar,
                exploration,
                filler: Vec::new(),
            },
            20,
            None,
            &HashSet::new(),
        );
        let positions: Vec<usize> = batch
            .iter()
            .enumerate()
            .filter(|(_, item)| item.reasons.contains(&Reason::Exploration))
            .map(|(position, _)| position)
            .collect();
        assert_eq!(positions, [2, 7, 12, 17]);
    }
}
