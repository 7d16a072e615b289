//! Outside web services (AcoustID, the Cover Art Archive, and later LRCLIB, Last.fm,
//! ListenBrainz): the one HTTP client they share, and the rules every client follows.
//!
//! A client lives with the service that uses it (`enrichment::acoustid`,
//! `enrichment::coverart`), takes its base URL from [`crate::Config`] (so tests point it at a
//! wiremock server fed with the service's real responses from `shared/fixtures`), keeps to
//! the service's rate limit (`enrichment::throttle`), and degrades: a failure of an outside
//! service is a reason recorded on the result, never a failed request of ours. Every request
//! goes through [`send`], which counts it by service and outcome (`crate::metrics`). A failure
//! is logged or recorded through [`describe`], never with its URL (it may carry a key).

use std::time::Duration;

use crate::metrics::{Outcome, OutsideCall, Service};

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

/// A failed call as logs and recorded reasons may show it: the chain of causes without the
/// request's URL, which reqwest writes into its errors and whose query or user part may carry
/// a secret (the Subsonic source's `apiKey`, or `t` and `s`; credentials in a recommender URL).
pub(crate) fn describe(error: reqwest::Error) -> String {
    crate::error_chain(&error.without_url())
}

/// Sends `request` to `service`, counting the call by its outcome: the HTTP status class,
/// a timeout, or a connection failure. What the answer means is the client's to decide.
pub(crate) async fn send(
    service: Service,
    request: reqwest::RequestBuilder,
) -> reqwest::Result<reqwest::Response> {
    let call = OutsideCall::start(service);
    let result = request.send().await;
    call.finish(match &result {
        Ok(response) => Outcome::of_status(response.status().as_u16()),
        Err(error) if error.is_timeout() => Outcome::Timeout,
        Err(_) => Outcome::Unavailable,
    });
    result
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn described_failures_never_show_the_url() {
        // Nothing listens on port 1: the connection is refused at once.
        let error = super::http_client()
            .get("http://127.0.0.1:1/rest/ping?u=alice&t=sekrit-token&s=salt&apiKey=sekrit-key")
            .send()
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("sekrit"),
            "reqwest shows the URL: {error}"
        );
        let described = super::describe(error);
        assert!(!described.contains("sekrit"), "{described}");
        assert!(!described.is_empty());
    }
}
