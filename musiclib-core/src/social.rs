//! Social and sync: what each user does with the catalogue, and how their devices agree on it.
//!
//! - `events`: likes and plays, append-only logs with client event ids (push, history, like
//!   state).
//! - `sync`: the pull side of the sync protocol (`GET /sync/changes`).
//! - `annotations`: stars and ratings (a star on a track is a like).
//! - `listening`: now playing and the saved play queue.
//! - `bookmarks`: positions to resume a track from.

mod annotations;
mod bookmarks;
mod events;
pub(crate) use events::{check_push, LATEST_LIKE};
mod listening;
mod sync;

pub use annotations::{Annotation, Starred};
pub use bookmarks::{Bookmark, MAX_BOOKMARK_COMMENT};
pub use events::{
    LikeEvent, LikeState, LikedTrack, NewLike, NewPlay, PlayEvent, PushOutcome,
    MAX_CLIENT_EVENT_ID, MAX_PUSH_EVENTS,
};
pub use listening::{
    NowPlaying, PlayQueue, PlaybackReport, PlaybackState, Timeline, MAX_PLAYBACK_RATE,
    MAX_QUEUE_TRACKS,
};
pub use sync::{SyncChanges, DEFAULT_PULL_LIMIT, MAX_PULL_LIMIT};

use crate::catalog::{Catalog, ItemKind};
use crate::db::Db;
use crate::playlists::Playlists;
use crate::scrobbling::Forwarder;

/// Each user's current likes, kept at the version (newest like stamp, newest tombstone) they
/// were read at.
type LikesCache =
    crate::cache::VersionedCache<String, (Option<i64>, Option<i64>), events::CurrentLikes>;

/// The social and sync service.
#[derive(Clone, Debug)]
pub struct Social {
    db: Db,
    catalog: Catalog,
    playlists: Playlists,
    /// Queues recorded plays for the user's scrobbling services.
    forwarder: Forwarder,
    /// Each user's current likes, newest first, with the version they were read at
    /// (`events.rs`).
    likes: std::sync::Arc<LikesCache>,
    /// Each user's play count and the places its history pages start, with the version
    /// they were read at (`events.rs`).
    history_places:
        std::sync::Arc<crate::cache::VersionedCache<String, i64, events::HistoryPlaces>>,
    /// Each user's plays per track and per album, with the version they were read at
    /// (`annotations.rs`).
    tallies: std::sync::Arc<
        crate::cache::VersionedCache<
            (String, ItemKind),
            annotations::TallyVersion,
            annotations::Tally,
        >,
    >,
    /// Held while a user's plays are counted per track or per album, so that requests
    /// arriving together count once (`annotations.rs`).
    tallying: std::sync::Arc<crate::cache::KeyedLocks<(String, ItemKind)>>,
}

impl Social {
    pub(crate) fn new(
        db: Db,
        catalog: Catalog,
        playlists: Playlists,
        forwarder: Forwarder,
    ) -> Social {
        Social {
            db,
            catalog,
            playlists,
            forwarder,
            likes: std::sync::Arc::new(crate::cache::VersionedCache::new(
                "liked_tracks",
                std::time::Duration::from_secs(600),
                256,
            )),
            history_places: std::sync::Arc::new(crate::cache::VersionedCache::new(
                "history_places",
                std::time::Duration::from_secs(600),
                256,
            )),
            tallying: Default::default(),
            tallies: std::sync::Arc::new(crate::cache::VersionedCache::new(
                "play_tallies",
                std::time::Duration::from_secs(600),
                256,
            )),
        }
    }
}
