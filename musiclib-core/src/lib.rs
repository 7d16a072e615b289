//! musiclib-core: a self-hosted music library as a library.
//!
//! Open a [`Library`] from a [`Config`] and call its methods: every service of the music
//! server lives here, with no web framework. The `/api/v1` JSON API (`musiclib-http`) and the
//! Subsonic interface (`musiclib-subsonic`) are thin adapters over this crate.
//!
//! # Layout
//! - [`library`]: the [`Library`] handle adapters hold.
//! - [`config`]: typed configuration (built by the caller; nothing read from the environment).
//! - [`domain`] and [`ids`]: tracks, albums, artists, paging, and newtype ids.
//! - [`auth`]: accounts, password hashes, access tokens.
//! - [`browse`]: album lists, genres, stars and ratings, now playing, play queues.
//! - [`catalog`]: browsing, filters, library search, manual edits, artist/album resolution.
//! - [`ingest`]: upload and local-folder import; [`ingest::probe`] reads tags and checks audio.
//! - [`enrichment`]: the metadata pipeline run by `enrich_task` jobs: tags, fingerprint,
//!   AcoustID lookup, cover art.
//! - [`fingerprint`]: Chromaprint fingerprints identical to `fpcalc`'s.
//! - [`covers`]: album covers and their thumbnails.
//! - [`jobs`]: the durable job queue and its workers.
//! - [`renditions`]: cached Opus renditions built by ffmpeg (`transcode_track`).
//! - [`streaming`]: the audio of a track as byte ranges, from disk or S3.
//! - [`blobs`]: local-disk or S3 storage with atomic writes and ranged reads.
//! - [`db`]: SQLite / PostgreSQL access through one body of portable SQL.
#![warn(missing_docs)]

pub mod auth;
pub mod blobs;
pub mod browse;
mod cache;
pub mod catalog;
pub mod config;
pub mod covers;
pub mod db;
pub mod domain;
pub mod enrichment;
mod error;
pub mod fingerprint;
pub mod hls;
pub mod ids;
pub mod ingest;
pub mod jobs;
pub mod library;
pub mod playlists;
pub mod renditions;
pub mod streaming;
pub mod sync;
pub mod text;
mod time;

#[cfg(feature = "test-support")]
pub mod testing;

pub use config::Config;
pub use error::{Error, ErrorKind, Result};
pub use ids::{AlbumId, ArtistId, JobId, PlaylistId, TrackId, UserId};
pub use library::Library;
pub use time::Timestamp;

/// Formats an error with its whole `source` chain, for logs and job records.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
