//! Integration tests of musiclib-core, each run on the embedded default (SQLite + local disk)
//! and on scale-out (PostgreSQL + S3).
//!
//! Modules:
//! - `accounts`: registration, login, tokens.
//! - `catalog`: upload, listing, filters, edits, deletion, search.
//! - `scan`: local-folder import against the generated corpus.
//! - `enrichment`: tags, fingerprint, AcoustID (mocked), cover art.
//! - `jobs`: the durable queue: retries, leases, concurrent workers.
//! - `renditions`: Opus renditions (ffmpeg), the LRU cache.
//! - `hls`: HLS segments encoded ahead of the player, published whole.
//! - `blobs`: atomic writes and ranged reads on both storage backends.
//! - `sync`: playlists with versions, likes, plays, and the sync protocol.

mod support;

mod accounts;
mod blobs;
mod catalog;
mod enrichment;
mod hls;
mod jobs;
mod renditions;
mod scan;
mod sync;
