//! Outside web services (AcoustID, the Cover Art Archive, and later LRCLIB, Last.fm,
//! ListenBrainz): the one HTTP client they share, and the rules every client follows.
//!
//! A client lives with the service that uses it (`enrichment::acoustid`,
//! `enrichment::coverart`), takes its base URL from [`crate::Config`] (so tests point it at a
//! wiremock server fed with the service's real responses from `shared/fixtures`), keeps to
//! the service's rate limit (`enrichment::throttle`), and degrades: a failure of an outside
//! service is a reason recorded on the result, never a failed request of ours.

use std::time::Duration;

/// The HTTP client of every outside service: our User-Agent (public services ask for one
/// that names the program), a connect timeout; request timeouts are each client's.
pub(crate) fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .user_agent(concat!(
            "musiclib/",
            env!("CARGO_PKG_VERSION"),
            " (self-hosted music library server)"
        ))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .expect("a TLS backend is compiled in")
}
