//! Tests of the `/api/v1` adapter: the router built on a test library and called with
//! `oneshot`, no sockets. Each scenario runs on SQLite + local disk and on PostgreSQL + S3.
//! `permissions` is the table of who may do what.

/// Declares `$name::embedded` and `$name::scale_out`, running `$body(backend)`. The
/// scale-out variant needs PostgreSQL and S3; `services` marks a test that needs the corpus
/// and ffmpeg on both. Outside the README test command those are ignored (and counted so).
macro_rules! both_backends {
    (services $name:ident, $body:expr) => {
        both_backends!(@define [cfg_attr(
            not(musiclib_services),
            ignore = "needs the corpus and ffmpeg: run the README test command"
        )] $name, $body);
    };
    ($name:ident, $body:expr) => {
        both_backends!(@define [] $name, $body);
    };
    (@define [$($embedded:meta)?] $name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            $(#[$embedded])?
            async fn embedded() {
                ($body)(musiclib_core::testing::Backend::Embedded).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(musiclib_services),
                ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
            )]
            async fn scale_out() {
                ($body)(musiclib_core::testing::Backend::ScaleOut).await
            }
        }
    };
}

mod accounts;
mod admin;
mod api;
mod avatars;
mod bad_input;
mod covers;
mod hls;
mod lyrics;
mod metrics;
mod permissions;
mod podcasts;
mod radio;
mod remote;
mod scrobbling;
mod security;
mod settings;
mod stations;
mod storage;
mod stream;
mod sync;
