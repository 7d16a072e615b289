//! Integration tests of musiclib-core, each run on the embedded default (SQLite + local disk)
//! and on scale-out (PostgreSQL + S3).
//!
//! Modules:
//! - `accounts`: registration, login, tokens.
//! - `catalog`: upload, listing, filters, edits, deletion, search.
//! - `cleanup`: the `cleanup_storage` job and its refusals.
//! - `scan`: local-folder import against the generated corpus.
//! - `enrichment`: tags, fingerprint, AcoustID (mocked), cover art.
//! - `jobs`: the durable queue: leases, heartbeats, backoff, retries, concurrent workers,
//!   jobs queued by an earlier release.
//! - `layers`: the layers of core's modules, read from the sources: uses point down, never
//!   round a loop.
//! - `lyrics`: lyrics from embedded tags and sidecar files, in order.
//! - `migrations`: every migration run on the schema before it holding data, which it keeps;
//!   the newest release reads that data; `schema_status` of older and newer databases.
//! - `paging`: lists of a larger library paged at any offset in every sort, short searches.
//! - `permissions`: the table of who may do what, decided by core.
//! - `podcasts`: feeds on a loopback server subscribed, refreshed, episodes downloaded and
//!   streamed; private addresses refused by default; feeds that attack the parser refused.
//! - `recommend`: the radio, similar tracks and artists, sound analysis, the external
//!   recommender, on a library built so the right answers are known.
//! - `remote`: remote sources (a mock Subsonic server, the real yt-dlp on a loopback site):
//!   search, placeholders, materialization, downloads, retries, cancellation.
//! - `renditions`: Opus renditions (ffmpeg), the LRU cache.
//! - `replaygain`: ReplayGain from the tags of every format, measured loudness against
//!   ffmpeg's `ebur128` filter (tracks and albums), the measurement's job.
//! - `folders`: the import folder's tree as folders, uploads filed by album artist and album.
//! - `shares`: sharing links: what a link reaches, until it expires or is revoked; the throttle.
//! - `smart`: smart playlists: rules checked and bound, evaluated, following the library.
//! - `hls`: HLS segments encoded ahead of the player, published whole.
//! - `sync`: playlists with versions, likes, plays, and the sync protocol.

mod support;

mod accounts;
mod catalog;
mod claims;
mod cleanup;
mod enrichment;
mod folders;
mod hls;
mod jobs;
mod layers;
mod lyrics;
mod migrations;
mod paging;
mod permissions;
mod podcasts;
mod recommend;
mod remote;
mod renditions;
mod replaygain;
mod scan;
mod shares;
mod smart;
mod sync;
