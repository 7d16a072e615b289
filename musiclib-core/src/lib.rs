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
//! The modules form layers; a module uses only modules of its own layer or lower ones, never
//! round a loop (held by the `layers` test, `tests/it/layers.rs`).
//!
//! Foundation (no service, no database):
//! - [`ids`], `time` ([`Timestamp`]), [`text`] (name normalisation and caps on tag text),
//!   [`error`] ([`Error`] and the [`ErrorKind`] adapters map to their wire codes), [`domain`]
//!   (tracks, albums, artists, paging, plays).
//! - [`config`]: typed configuration (built by the caller; nothing read from the environment);
//!   [`extension`]: what an embedder plugs in (an external recommender).
//! - [`metrics`]: what the library counts for its operators, through the `metrics` facade
//!   (the program installs the recorder); `cache` (expiring in-process caches), `cpu` (one
//!   slot per core for CPU-heavy work), `outside` (the HTTP client of outside web services).
//! - [`probe`] (what an audio file is: facts and tags) and [`picture`] (a checked image).
//!
//! Storage, the job queue and accounts:
//! - `db` (SQLite/PostgreSQL, the dialect seam, the statement builder); [`storage`] (the blob
//!   layout, [`storage::layout`], on local disk or S3).
//! - [`jobs`]: the durable queue, workers, and the [`jobs::Registry`] each service registers
//!   its job kinds and periodic tasks in.
//! - [`auth`]: [`auth::Accounts`] (users, passwords, tokens, app passwords) and
//!   [`auth::policy`], every permission decision.
//!
//! The catalogue: [`catalog`] (tracks, albums, artists, genres, search, manual edits, name
//! resolution).
//!
//! Features, each a service owning its state and naming what it depends on:
//! - [`media`]: original audio, Opus renditions, HLS, covers.
//! - [`enrichment`]: tags, fingerprint, AcoustID lookup, cover art (`enrich_task`).
//! - [`ingest`]: uploads and the local-folder import.
//! - [`playlists`]: versioned playlists. [`settings`]: per-user settings.
//! - [`scrobbling`]: Last.fm and ListenBrainz credentials and forwarding plays.
//! - [`social`]: likes, plays, stars and ratings, the play queue, and offline sync.
//! - [`recommend`]: the radio, similar tracks and artists (metadata, listening, sound), random
//!   and top tracks.
//! - [`podcasts`]: subscribed feeds, their episodes downloaded into storage and streamed.
//! - [`avatars`]: users' pictures, uploaded or generated.
//! - [`stations`]: internet radio stations and the relay of their streams.
//! - [`lyrics`]: the lyrics cache and its sources. [`remote`]: remote sources, placeholders,
//!   downloads. [`maintenance`]: statistics, duplicates, broken files, cleanup.
//!
//! Above them: [`workflows`] (operations that cross services: deleting a track or an account),
//! [`admin`] (admin-only server operations), and [`library`]: [`Library`], which builds every
//! service, registers their jobs, and hands them out.
//!
//! Not part of the API: `fuzzing` (entry points for the fuzz targets) and, with the
//! `test-support` feature, `testing` (the test harness).
//!
//! Fingerprinting itself is the `musiclib-fingerprint` crate.
#![warn(missing_docs)]

pub mod admin;
pub mod auth;
pub mod avatars;
mod cache;
pub mod catalog;
pub mod config;
mod cpu;
mod db;
pub mod domain;
pub mod enrichment;
pub mod error;
pub mod extension;
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
pub mod picture;
pub mod playlists;
pub mod podcasts;
pub mod probe;
pub mod recommend;
pub mod remote;
pub mod scrobbling;
pub mod settings;
pub mod shares;
pub mod social;
pub mod stations;
pub mod storage;
pub mod text;
mod time;
pub mod workflows;

#[cfg(feature = "test-support")]
pub mod testing;

pub use config::Config;
pub use db::{
    schema_status, schema_version, sqlite_file, sqlite_snapshot, DatabaseKind, SchemaStatus,
};
pub use error::{Error, ErrorKind, Result};
pub use ids::{
    AlbumId, ArtistId, DownloadId, EpisodeId, JobId, PlaylistId, PodcastId, TrackId, UserId,
};
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
