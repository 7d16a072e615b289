//! Tests of the Subsonic interface through its router: authentication, every method in
//! both encodings with the XML validated against the official 1.16.1 schema, media, and the
//! app password at rest. Each runs on the embedded default and on PostgreSQL + S3.

mod auth;
mod endpoints;
mod harness;
mod media;

/// Runs an async test body once per backend pairing (scale-out when configured).
#[macro_export]
macro_rules! both_backends {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                let body = $body;
                body(musiclib_core::testing::Backend::Embedded).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn scale_out() {
                if !musiclib_core::testing::scale_out_available() {
                    return;
                }
                let body = $body;
                body(musiclib_core::testing::Backend::ScaleOut).await;
            }
        }
    };
}
