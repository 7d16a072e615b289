//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

pub use musiclib_core::testing::{Backend, TestLibrary};

/// Declares `$name` as an async test run once per backend: `$name::embedded` and
/// `$name::scale_out`. The scale-out variant needs PostgreSQL and S3; a test marked
/// `#[services]` needs the corpus and ffmpeg on both. Outside the README test command (which
/// turns on `cfg(musiclib_services)`), such tests are ignored, and shown as ignored.
#[macro_export]
macro_rules! backend_test {
    (#[services] $(#[$meta:meta])* async fn $name:ident($backend:ident: Backend) $body:block) => {
        $crate::backend_test!(@define
            [cfg_attr(not(musiclib_services), ignore = "needs the corpus and ffmpeg: run the README test command")]
            $(#[$meta])* async fn $name($backend: Backend) $body);
    };
    ($(#[$meta:meta])* async fn $name:ident($backend:ident: Backend) $body:block) => {
        $crate::backend_test!(@define [] $(#[$meta])* async fn $name($backend: Backend) $body);
    };
    (@define [$($embedded:meta)?] $(#[$meta:meta])* async fn $name:ident($backend:ident: Backend) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$meta])*
            async fn run($backend: $crate::support::Backend) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            $(#[$embedded])?
            async fn embedded() {
                run($crate::support::Backend::Embedded).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(musiclib_services),
                ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
            )]
            async fn scale_out() {
                run($crate::support::Backend::ScaleOut).await
            }
        }
    };
}

/// The generated corpus (the README test command makes it).
pub fn corpus() -> PathBuf {
    musiclib_core::testing::corpus()
}

/// Reads a corpus file.
pub fn corpus_file(corpus: &Path, relative: &str) -> Vec<u8> {
    std::fs::read(corpus.join(relative)).unwrap_or_else(|error| panic!("read {relative}: {error}"))
}

/// The parsed manifest of the corpus.
pub fn manifest(corpus: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).expect("manifest"))
        .expect("manifest json")
}

/// A signed-in ordinary user of `library`.
pub async fn user(library: &musiclib_core::Library, name: &str) -> musiclib_core::auth::Caller {
    let user = library
        .accounts()
        .create_user(name, "user-password", false)
        .await
        .expect("create user");
    musiclib_core::auth::Caller { user }
}
