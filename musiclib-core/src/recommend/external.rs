//! The optional external recommender: a plug-in asked alongside the heuristics, whose
//! suggestions are mixed into the radio with the reason `external`.
//!
//! Embedders implement [`ExternalRecommender`] and hand it over in
//! [`crate::config::RecommendConfig::external`]; the binary
//! uses [`HttpRecommender`] when `RECOMMENDER_URL` is set. Either way the call is guarded:
//! it runs in a task of its own beside the heuristics, and the radio waits for it only
//! until its own signals are read plus [`crate::config::EXTERNAL_GRACE`] (20 ms), so a slow
//! recommender never slows an answer down. The call itself may take
//! `RECOMMENDER_TIMEOUT_MS` (150 ms by default); a timeout or a failure (an error status, a
//! malformed answer, no connection) leaves it out for 30 s (`external_pause`), during
//! which it is not asked at all (the heuristics answer alone).
//!
//! The HTTP protocol: `POST {RECOMMENDER_URL}` with
//! `{"user_id", "seeds": [{"track_id", "title", "artist", "album", "musicbrainz_recording_id"}], "count"}`
//! (no seeds for a feed from the caller's likes), answered by
//! `{"suggestions": [{"track_id"?, "musicbrainz_recording_id"?, "score"?}]}`, where a
//! suggestion names a track of this library by id or by MusicBrainz recording id, and
//! `score` (0 to 1, default 1) weighs it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;

use crate::config::RecommendConfig;
pub use crate::extension::{
    ExternalPlugin, ExternalRecommender, ExternalRequest, ExternalSeed, ExternalSuggestion,
};
use crate::metrics::{Outcome, OutsideCall, Service};

/// The HTTP recommender (`RECOMMENDER_URL`).
#[derive(Clone)]
pub struct HttpRecommender {
    url: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for HttpRecommender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRecommender")
            .field("url", &crate::config::redact_url(&self.url))
            .finish_non_exhaustive()
    }
}

impl HttpRecommender {
    /// A recommender answering `POST url`.
    pub fn new(url: String) -> HttpRecommender {
        HttpRecommender {
            url,
            client: crate::outside::same_origin_client(),
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    suggestions: Vec<ExternalSuggestion>,
}

#[async_trait]
impl ExternalRecommender for HttpRecommender {
    async fn suggest(&self, request: &ExternalRequest) -> Result<Vec<ExternalSuggestion>, String> {
        let response = self
            .client
            .post(&self.url)
            .json(request)
            .send()
            .await
            .map_err(|error| {
                format!(
                    "cannot reach the recommender: {}",
                    crate::outside::describe(error)
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the recommender answered {status}"));
        }
        let answer: Answer = crate::outside::json_capped(response, 1024 * 1024)
            .await
            .map_err(|error| format!("the recommender's answer is malformed: {error}"))?;
        Ok(answer.suggestions)
    }
}

/// A recommender behind its timeout and its pause after a failure.
#[derive(Clone)]
pub(crate) struct Guarded {
    inner: Arc<dyn ExternalRecommender>,
    timeout: Duration,
    pause: Duration,
    /// Until when it is left out, and why.
    paused_until: Arc<std::sync::Mutex<Option<(Instant, String)>>>,
}

impl Guarded {
    pub(crate) fn new(inner: Arc<dyn ExternalRecommender>, config: &RecommendConfig) -> Guarded {
        Guarded {
            inner,
            timeout: config.external_timeout,
            pause: config.external_pause,
            paused_until: Arc::default(),
        }
    }

    /// How long it is still left out, and why; `None` when it is asked.
    pub(crate) fn paused(&self) -> Option<(Duration, String)> {
        let paused = self
            .paused_until
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let (until, reason) = paused.as_ref()?;
        let left = until.checked_duration_since(Instant::now())?;
        (!left.is_zero()).then(|| (left, reason.clone()))
    }

    /// The suggestions, or none when the recommender is paused, slow or failing.
    pub(crate) async fn suggest(&self, request: &ExternalRequest) -> Vec<ExternalSuggestion> {
        if self.paused().is_some() {
            return Vec::new();
        }
        let call = OutsideCall::start(Service::Recommender);
        let outcome = tokio::time::timeout(self.timeout, self.inner.suggest(request)).await;
        let failure = match outcome {
            Ok(Ok(suggestions)) => {
                call.finish(Outcome::Ok);
                return suggestions;
            }
            Ok(Err(message)) => {
                call.finish(Outcome::Failed);
                message
            }
            Err(_) => {
                call.finish(Outcome::Timeout);
                format!("no answer within {} ms", self.timeout.as_millis())
            }
        };
        tracing::warn!(error = %failure, pause_seconds = self.pause.as_secs(), "external recommender left out");
        *self
            .paused_until
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) =
            Some((Instant::now() + self.pause, failure));
        Vec::new()
    }
}
