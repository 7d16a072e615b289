//! musiclib-core: a self-hosted music library as a library.
//!
//! Open a [`Library`] from a [`Config`] and call its services: every capability of the music
//! server lives here, with no web framework. The `/api/v1` JSON API (`musiclib-http`) and the
//! Subsonic interface (`musiclib-subsonic`) are thin adapters over this crate.
//!
//! ```no_run
//! # async fn run() -> musiclib_core::Result<()> {
//! use musiclib_core::{domain::Page, Config, Library};
//! let library = Library::open(Config::embedded("./data")).await?;
//! let albums = library.catalog().list_albums(&Default::default(), None, Page::default()).await?;
//! # Ok(()) }
//! ```
//!
//! # Layout
//! The handle and its foundations:
//! - [`library`]: [`Library`], which builds every service and hands them out.
//! - [`workflows`]: operations that cross services (deleting a track).
//! - [`config`]: typed configuration (built by the caller; nothing read from the environment).
//! - [`domain`] and [`ids`]: tracks, albums, artists, paging, and newtype ids.
//! - [`error`]: [`Error`] and the [`ErrorKind`] adapters map to their wire codes.
//!
//! The services, each owning its state and naming what it depends on:
//! - [`auth`]: [`auth::Accounts`] (users, passwords, tokens, app passwords) and
//!   [`auth::policy`], every permission decision.
//! - [`catalog`]: tracks, albums, artists, genres, search, manual edits, name resolution.
//! - [`ingest`]: uploads and the local-folder import ([`ingest::probe`] reads files).
//! - [`enrichment`]: tags, fingerprint, AcoustID lookup, cover art (`enrich_task`).
//! - [`media`]: original audio, Opus renditions, HLS, covers.
//! - [`playlists`]: versioned playlists.
//! - [`social`]: likes, plays, stars and ratings, the play queue, and offline sync.
//! - [`recommend`]: the radio, similar tracks and artists (metadata, listening, sound), random
//!   and top tracks.
//! - [`admin`]: admin-only server operations.
//! - [`jobs`]: the durable queue, the typed job registry, workers.
//! - [`storage`]: the blob layout ([`storage::layout`]) on local disk or S3.
//! - [`metrics`]: what the library counts for its operators (outside calls, caches, streams,
//!   jobs), through the `metrics` facade; the program installs the recorder.
//!
//! Inside, never public: `db` (SQLite/PostgreSQL, the dialect seam, the statement builder),
//! `outside` (the HTTP client of outside web services), `cache`, `cpu`, `text`, `time`.
//!
//! Fingerprinting itself is the `musiclib-fingerprint` crate.
#![warn(missing_docs)]

pub mod admin;
pub mod auth;
mod cache;
pub mod catalog;
pub mod config;
mod cpu;
mod db;
pub mod domain;
pub mod enrichment;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod ids;
pub mod ingest;
pub mod jobs;
pub mod library;
pub mod lyrics;
pub mod maintenance;
pub mod media;
pub mod metrics;
mod outside;
pub mod playlists;
pub mod recommend;
pub mod remote;
pub mod scrobbling;
pub mod settings;
pub mod social;
pub mod storage;
pub mod text;
mod time;
pub mod workflows;

#[cfg(feature = "test-support")]
pub mod testing;

pub use config::Config;
pub use db::DatabaseKind;
pub use error::{Error, ErrorKind, Result};
pub use ids::{AlbumId, ArtistId, DownloadId, JobId, PlaylistId, TrackId, UserId};
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
