//! A mock AcoustID for tests and benchmarks (wiremock): it enforces the rate limit as the
//! real service does (429, code 14, above 3 requests in a window) and answers every
//! fingerprint, single or batched, with a recording named after the duration sent with it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wiremock::{Request, Respond, ResponseTemplate};

/// The mock's responder; mount it on `POST /v2/lookup`.
#[derive(Clone)]
pub struct RateLimitedAcoustId {
    window: Duration,
    seen: Arc<Mutex<Vec<(Instant, usize)>>>,
    refused: Arc<Mutex<usize>>,
}

impl RateLimitedAcoustId {
    /// Refuses a request when 3 others arrived within `window` before it. The real limit is
    /// 3 per second; a test on a loaded machine uses a shorter window to allow for the
    /// jitter between a request leaving the client and the mock reading it.
    pub fn new(window: Duration) -> RateLimitedAcoustId {
        RateLimitedAcoustId {
            window,
            seen: Arc::default(),
            refused: Arc::default(),
        }
    }

    /// Requests answered: when, and how many fingerprints each carried.
    pub fn answered(&self) -> Vec<(Instant, usize)> {
        self.seen.lock().unwrap().clone()
    }

    /// Requests refused with 429.
    pub fn refused(&self) -> usize {
        *self.refused.lock().unwrap()
    }
}

impl Respond for RateLimitedAcoustId {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let now = Instant::now();
        let form: Vec<(String, String)> =
            serde_urlencoded::from_bytes(&request.body).unwrap_or_default();
        // (index, duration) of each fingerprint: `duration` alone, or `duration.N` in a batch.
        let queries: Vec<(u64, String)> = form
            .iter()
            .filter_map(|(key, value)| match key.strip_prefix("duration") {
                Some("") => Some((0, value.clone())),
                Some(index) => index
                    .strip_prefix('.')?
                    .parse()
                    .ok()
                    .map(|index| (index, value.clone())),
                None => None,
            })
            .collect();
        {
            let mut seen = self.seen.lock().unwrap();
            let recent = seen
                .iter()
                .filter(|(at, _)| now.duration_since(*at) < self.window)
                .count();
            if recent >= 3 {
                *self.refused.lock().unwrap() += 1;
                return ResponseTemplate::new(429).set_body_json(serde_json::json!({
                    "status": "error",
                    "error": {"code": 14, "message": "too many requests: more than 3 per second"}
                }));
            }
            seen.push((now, queries.len()));
        }
        let results = |duration: &str| {
            serde_json::json!([{
                "id": format!("acoustid-{duration}"),
                "score": 0.99,
                "recordings": [{
                    "id": format!("rec-{duration}"),
                    "title": format!("Song of {duration} seconds"),
                    "artists": [{"id": "mock-artist", "name": "Mock Artist"}]
                }]
            }])
        };
        let batched = form
            .iter()
            .any(|(key, value)| key == "batch" && value == "1");
        let body = if batched {
            let entries: Vec<_> = queries
                .iter()
                .map(|(index, duration)| {
                    serde_json::json!({"index": index, "results": results(duration)})
                })
                .collect();
            serde_json::json!({"status": "ok", "fingerprints": entries})
        } else {
            let duration = queries
                .first()
                .map(|(_, duration)| duration.as_str())
                .unwrap_or("0");
            serde_json::json!({"status": "ok", "results": results(duration)})
        };
        ResponseTemplate::new(200).set_body_json(body)
    }
}
