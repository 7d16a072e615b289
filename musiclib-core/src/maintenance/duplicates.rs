//! Duplicate tracks (`GET /storage/duplicates`): groups of tracks that are the same recording,
//! each with its reasons and a suggested keeper. Three detectors, each an index lookup, never
//! a comparison of all pairs:
//!
//! - **identical bytes**: the same `content_sha256` (a `GROUP BY` over its index);
//! - **same MusicBrainz recording**: the same `musicbrainz_recording_id` (likewise);
//! - **same audio**: Chromaprint fingerprints. Re-encodes of one recording share most of their
//!   32-bit items exactly (the corpus' re-encodes differ in under 1% of bits). Each
//!   fingerprint contributes the items whose value falls in a fixed 1-in-8 sample (chosen by
//!   value, so two copies sample the same items) to an inverted index; keys shared by more than
//!   [`MAX_POSTINGS`] tracks (silence, tones) are dropped. Only pairs sharing enough keys are
//!   candidates, and only candidates are compared in full ([`musiclib_fingerprint::compare`]:
//!   best alignment within ±80 items, similarity ≥ [`SAME_AUDIO`]). The work grows with the
//!   number of fingerprint items plus the candidates, not with the square of the library.
//!
//! Groups join every track linked by any detector (a union-find). The keeper is the copy to
//! keep: lossless over lossy, then the higher bitrate, then the more complete tags, then the
//! oldest.

use std::collections::{BTreeSet, HashMap};

use super::Maintenance;
use crate::auth::Caller;
use crate::domain::{Page, Paged, Track};
use crate::{Result, TrackId};

/// Similarity (1 − bit error rate) from which two fingerprints are the same audio. The
/// corpus' duplicates score 0.993 and more, its most similar distinct songs 0.594.
pub const SAME_AUDIO: f64 = 0.90;
/// Index keys shared by more tracks than this are too common to tell anything.
const MAX_POSTINGS: usize = 64;
/// The index takes the items whose scrambled value has its top 3 bits clear: one in 8.
const SAMPLE_SHIFT: u32 = 29;
/// Alignment searched when comparing two fingerprints, in items (about 10 s).
const MAX_OFFSET: usize = 80;
/// Fewest shared items for a comparison to count.
const MIN_OVERLAP: usize = 100;
/// Formats that lose nothing.
const LOSSLESS: [&str; 6] = ["flac", "wav", "aiff", "alac", "ape", "wv"];

/// Why tracks are grouped as one recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DuplicateReason {
    /// The same file, byte for byte.
    IdenticalBytes,
    /// Tagged (or identified) as the same MusicBrainz recording.
    SameRecording,
    /// The same audio by fingerprint (another encoding, or another release of it).
    SameAudio,
}

impl DuplicateReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateReason::IdenticalBytes => "identical_bytes",
            DuplicateReason::SameRecording => "same_recording",
            DuplicateReason::SameAudio => "same_audio",
        }
    }
}

/// Tracks that are one recording.
#[derive(Debug, Clone)]
pub struct DuplicateGroup {
    /// Why they are grouped (every reason that links any two of them).
    pub reasons: Vec<DuplicateReason>,
    /// The suggested copy to keep.
    pub keeper: TrackId,
    /// The tracks, keeper first.
    pub tracks: Vec<Track>,
}

/// Union-find over track indexes.
struct Groups {
    parent: Vec<usize>,
}

impl Groups {
    fn find(&mut self, mut index: usize) -> usize {
        while self.parent[index] != index {
            self.parent[index] = self.parent[self.parent[index]];
            index = self.parent[index];
        }
        index
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }
}

/// Tracks and the links between them, by track id.
#[derive(Default)]
struct Links {
    index: HashMap<String, usize>,
    ids: Vec<String>,
    edges: Vec<(usize, usize, DuplicateReason)>,
}

impl Links {
    fn slot(&mut self, id: &str) -> usize {
        if let Some(&slot) = self.index.get(id) {
            return slot;
        }
        self.ids.push(id.to_string());
        self.index.insert(id.to_string(), self.ids.len() - 1);
        self.ids.len() - 1
    }

    fn link(&mut self, a: &str, b: &str, reason: DuplicateReason) {
        let (a, b) = (self.slot(a), self.slot(b));
        self.edges.push((a, b, reason));
    }
}

impl Maintenance {
    /// Groups of tracks that are the same recording, each with its reasons and keeper, the
    /// largest groups first. For any signed-in user.
    pub async fn duplicates(&self, _caller: &Caller, page: Page) -> Result<Paged<DuplicateGroup>> {
        let mut links = Links::default();
        for (column, reason) in [
            ("content_sha256", DuplicateReason::IdenticalBytes),
            ("musicbrainz_recording_id", DuplicateReason::SameRecording),
        ] {
            let rows: Vec<(String, String)> = self
                .db
                .sql(&format!(
                    "SELECT t.{column}, t.id FROM tracks t
                     WHERE t.{column} IN (SELECT {column} FROM tracks
                         WHERE {column} IS NOT NULL AND {column} <> ''
                         GROUP BY {column} HAVING COUNT(*) > 1)
                     ORDER BY t.{column}, t.id"
                ))
                .fetch_all(self.db.pool())
                .await?;
            for pair in rows.windows(2) {
                if pair[0].0 == pair[1].0 {
                    links.link(&pair[0].1, &pair[1].1, reason);
                }
            }
        }
        for (a, b) in self.same_audio_pairs().await? {
            links.link(&a, &b, DuplicateReason::SameAudio);
        }

        let mut groups = Groups {
            parent: (0..links.ids.len()).collect(),
        };
        for &(a, b, _) in &links.edges {
            groups.join(a, b);
        }
        let mut members: HashMap<usize, (Vec<usize>, BTreeSet<DuplicateReason>)> = HashMap::new();
        for slot in 0..links.ids.len() {
            let root = groups.find(slot);
            members.entry(root).or_default().0.push(slot);
        }
        for &(a, _, reason) in &links.edges {
            let root = groups.find(a);
            if let Some(group) = members.get_mut(&root) {
                group.1.insert(reason);
            }
        }
        let ids: Vec<&str> = links.ids.iter().map(String::as_str).collect();
        let tracks: HashMap<String, Track> = self
            .catalog
            .tracks_in_order(&ids)
            .await?
            .into_iter()
            .map(|track| (track.id.to_string(), track))
            .collect();
        let mut all: Vec<DuplicateGroup> = members
            .into_values()
            .filter_map(|(slots, reasons)| {
                let mut group: Vec<Track> = slots
                    .iter()
                    .filter_map(|slot| tracks.get(&links.ids[*slot]).cloned())
                    .collect();
                if group.len() < 2 {
                    return None;
                }
                group.sort_by(|a, b| keeper_rank(b).cmp(&keeper_rank(a)).then(a.id.cmp(&b.id)));
                Some(DuplicateGroup {
                    reasons: reasons.into_iter().collect(),
                    keeper: group[0].id.clone(),
                    tracks: group,
                })
            })
            .collect();
        all.sort_by(|a, b| {
            b.tracks
                .len()
                .cmp(&a.tracks.len())
                .then_with(|| a.keeper.cmp(&b.keeper))
        });
        let total = all.len() as i64;
        let items = all
            .into_iter()
            .skip(page.offset() as usize)
            .take(page.limit() as usize)
            .collect();
        Ok(Paged { items, total, page })
    }

    /// Pairs of tracks whose fingerprints are the same audio (see the module's comment).
    async fn same_audio_pairs(&self) -> Result<Vec<(String, String)>> {
        // The sampled items of every fingerprint, read a page at a time.
        let mut ids: Vec<String> = Vec::new();
        // (key, track) for every sampled item: sorted, equal keys sit together. (A flat
        // vector, not a map of lists: a million keys are a million allocations otherwise.)
        let mut entries: Vec<(u32, u32)> = Vec::new();
        let mut keys_of: Vec<u32> = Vec::new();
        let mut after = String::new();
        loop {
            let rows: Vec<(String, String)> = self
                .db
                .sql(
                    "SELECT id, fingerprint FROM tracks
                     WHERE fingerprint IS NOT NULL AND fingerprint <> '' AND id > $1
                     ORDER BY id LIMIT 1000",
                )
                .bind(after.as_str())
                .fetch_all(self.db.pool())
                .await?;
            let Some(last) = rows.last() else { break };
            after = last.0.clone();
            for (id, fingerprint) in rows {
                let Some(items) = musiclib_fingerprint::compare::decompress(&fingerprint) else {
                    continue;
                };
                let track = ids.len() as u32;
                ids.push(id);
                let mut keys: Vec<u32> = items.into_iter().filter(|item| sampled(*item)).collect();
                keys.sort_unstable();
                keys.dedup();
                keys_of.push(keys.len() as u32);
                entries.extend(keys.into_iter().map(|key| (key, track)));
            }
        }
        entries.sort_unstable();
        // Candidates: pairs sharing enough keys (keys shared too widely skipped).
        let mut shared: HashMap<(u32, u32), u32> = HashMap::new();
        for run in entries.chunk_by(|a, b| a.0 == b.0) {
            if run.len() < 2 || run.len() > MAX_POSTINGS {
                continue;
            }
            for (position, &(_, a)) in run.iter().enumerate() {
                for &(_, b) in &run[position + 1..] {
                    *shared.entry((a, b)).or_default() += 1;
                }
            }
        }
        drop(entries);
        let candidates: Vec<(u32, u32)> = shared
            .into_iter()
            .filter(|&((a, b), count)| {
                let smaller = keys_of[a as usize].min(keys_of[b as usize]);
                count >= 4 && count * 5 >= smaller
            })
            .map(|(pair, _)| pair)
            .collect();
        // Compare the candidates in full: their fingerprints read once, in chunks.
        let mut wanted: Vec<&str> = candidates
            .iter()
            .flat_map(|&(a, b)| [ids[a as usize].as_str(), ids[b as usize].as_str()])
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut raw: HashMap<String, Vec<u32>> = HashMap::new();
        for chunk in wanted.chunks(crate::db::CHUNK) {
            let mut select = self
                .db
                .sql("SELECT id, fingerprint FROM tracks WHERE id IN (");
            select.push_list(chunk.iter().copied()).push(")");
            let rows: Vec<(String, String)> = select.fetch_all(self.db.pool()).await?;
            raw.extend(rows.into_iter().filter_map(|(id, text)| {
                Some((id, musiclib_fingerprint::compare::decompress(&text)?))
            }));
        }
        let mut pairs = Vec::new();
        for (a, b) in candidates {
            let (a, b) = (&ids[a as usize], &ids[b as usize]);
            if let (Some(x), Some(y)) = (raw.get(a), raw.get(b)) {
                let score =
                    musiclib_fingerprint::compare::similarity(x, y, MAX_OFFSET, MIN_OVERLAP);
                if score >= SAME_AUDIO {
                    pairs.push((a.clone(), b.clone()));
                }
            }
        }
        Ok(pairs)
    }
}

/// Whether a fingerprint item goes into the index: a fixed sample of values, so two copies of
/// one recording sample the same items.
fn sampled(item: u32) -> bool {
    item != 0 && item != u32::MAX && item.wrapping_mul(0x9e37_79b9) >> SAMPLE_SHIFT == 0
}

/// How much a copy is worth keeping: lossless, bitrate, tags, then age (older is better).
fn keeper_rank(track: &Track) -> (bool, i64, usize, std::cmp::Reverse<i64>) {
    let lossless = track
        .format
        .as_deref()
        .is_some_and(|format| LOSSLESS.contains(&format));
    let tags = [
        !track.title.trim().is_empty(),
        track.artist_id.is_some(),
        track.album_id.is_some(),
        track.year.is_some(),
        track
            .genre
            .as_deref()
            .is_some_and(|genre| !genre.is_empty()),
        track.track_number.is_some(),
        track.has_cover,
        track.musicbrainz_recording_id.is_some(),
    ]
    .into_iter()
    .filter(|present| *present)
    .count();
    (
        lossless,
        track.bitrate_kbps.unwrap_or(0),
        tags,
        std::cmp::Reverse(track.created_at.as_micros()),
    )
}
