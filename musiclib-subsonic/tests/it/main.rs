//! Tests of the Subsonic interface through its router: authentication, every method in
//! both encodings with the XML validated against the official 1.16.1 schema, media, and the
//! app password at rest. Each runs on the embedded default and on PostgreSQL + S3.

mod apps;
mod auth;
mod endpoints;
mod harness;
mod limits;
mod lyrics;
mod media;
mod permissions;
mod podcasts;
mod recommend;
mod remote;
mod scrobbling;
mod throttle;
mod transcoding;

/// Runs an async test body once per backend pairing. Every scenario uploads tracks of the
/// corpus and validates with xmllint, and the scale-out one needs PostgreSQL and S3: outside
/// the README test command they are ignored (and counted so).
#[macro_export]
macro_rules! both_backends {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(musiclib_services),
                ignore = "needs the corpus and xmllint: run the README test command"
            )]
            async fn embedded() {
                let body = $body;
                body(musiclib_core::testing::Backend::Embedded).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(musiclib_services),
                ignore = "needs PostgreSQL, S3, the corpus and xmllint: run the README test command"
            )]
            async fn scale_out() {
                let body = $body;
                body(musiclib_core::testing::Backend::ScaleOut).await;
            }
        }
    };
}
