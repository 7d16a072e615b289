//! The AcoustID lookup client: fingerprint + duration → MusicBrainz recordings.
//!
//! Lookups are batched: [`Lookups`] queues the fingerprints of every enrichment running in
//! the process and sends up to [`MAX_BATCH`] of them in one request (`batch=1`), while one
//! [`Throttle`] keeps the whole process at the configured rate (AcoustID asks for 3 requests
//! per second). With a full batch that is 60 tracks per second instead of 3. Transient
//! failures (5xx, 429, timeouts) are retried with exponential backoff; the rest are
//! permanent (a bad API key does not get better by asking again).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};

use super::throttle::Throttle;

/// The most fingerprints AcoustID takes in one request.
pub const MAX_BATCH: usize = 20;

/// What musiclib asks AcoustID to return for each match.
const META: &str = "recordings releasegroups compress";

/// One fingerprint to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupQuery {
    /// Compressed base64url fingerprint (as `fpcalc` prints it).
    pub fingerprint: String,
    /// Whole seconds of the file (AcoustID rejects fractions).
    pub duration: u32,
}

/// One AcoustID track matching a fingerprint, with its MusicBrainz recordings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Match {
    /// AcoustID track id.
    pub id: String,
    /// Similarity, 0–1.
    pub score: f64,
    /// Linked MusicBrainz recordings (absent when none is linked).
    #[serde(default)]
    pub recordings: Vec<Recording>,
}

/// A MusicBrainz recording as the lookup returns it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Recording {
    /// Recording MBID.
    pub id: String,
    /// Title; absent when MusicBrainz metadata is missing.
    pub title: Option<String>,
    /// Length in seconds (may be fractional).
    pub duration: Option<f64>,
    /// Artist credit.
    #[serde(default)]
    pub artists: Vec<Credit>,
    /// Release groups the recording appears on.
    #[serde(default)]
    pub releasegroups: Vec<ReleaseGroup>,
}

/// One artist of a credit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Credit {
    /// Artist MBID.
    pub id: Option<String>,
    /// Credited name.
    pub name: String,
    /// Text joining this artist to the next (" feat. ", " & ").
    pub joinphrase: Option<String>,
}

/// A MusicBrainz release group (an album, single, EP…).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReleaseGroup {
    /// Release-group MBID (covers are fetched by it).
    pub id: String,
    /// Title.
    pub title: Option<String>,
    /// Primary type: Album, Single, EP…
    #[serde(rename = "type")]
    pub primary_type: Option<String>,
    /// Secondary types: Compilation, Live…
    #[serde(default)]
    pub secondarytypes: Vec<String>,
    /// Credit, present only when it differs from the recording's (the `compress` meta).
    pub artists: Option<Vec<Credit>>,
}

/// Joins a credit the way MusicBrainz displays it: "A feat. B".
pub fn credit_name(credit: &[Credit]) -> Option<String> {
    if credit.is_empty() {
        return None;
    }
    let mut name = String::new();
    for (index, artist) in credit.iter().enumerate() {
        name.push_str(&artist.name);
        match &artist.joinphrase {
            Some(join) => name.push_str(join),
            None if index + 1 < credit.len() => name.push_str(", "),
            None => {}
        }
    }
    Some(name.trim().to_string())
}

/// Why a lookup failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// Worth retrying later (the service is down, slow or rate-limiting).
    #[error("AcoustID is unavailable: {0}")]
    Transient(String),
    /// Will fail again the same way (bad key, bad fingerprint…).
    #[error("AcoustID refused the lookup: {0}")]
    Permanent(String),
}

#[derive(Debug, Deserialize)]
struct Response {
    status: String,
    #[serde(default)]
    results: Option<Vec<Match>>,
    #[serde(default)]
    fingerprints: Option<Vec<BatchEntry>>,
    error: Option<ErrorBody>,
}

#[derive(Debug, Deserialize)]
struct BatchEntry {
    index: serde_json::Value,
    #[serde(default)]
    results: Vec<Match>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    code: Option<i64>,
    message: Option<String>,
}

/// Settings of the client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL, e.g. `https://api.acoustid.org`.
    pub base_url: String,
    /// Application key.
    pub api_key: String,
    /// Requests per second for the whole process.
    pub requests_per_second: f64,
    /// Attempts per request (first try included) on transient failures.
    pub attempts: u32,
    /// First retry delay; doubles each retry.
    pub retry_base: Duration,
    /// Timeout of one request.
    pub timeout: Duration,
}

/// Talks to the AcoustID web service.
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    config: ClientConfig,
    throttle: Throttle,
}

impl Client {
    /// A client with its own throttle.
    pub fn new(http: reqwest::Client, config: ClientConfig) -> Client {
        Client {
            throttle: Throttle::per_second(config.requests_per_second),
            http,
            config,
        }
    }

    /// Looks up `queries` (at most [`MAX_BATCH`]) in one request, waiting for the throttle
    /// before each attempt. The answer has one list of matches per query, in order.
    pub async fn lookup(&self, queries: &[LookupQuery]) -> Result<Vec<Vec<Match>>, LookupError> {
        self.throttle.ready().await;
        self.lookup_after_permit(queries).await
    }

    /// As [`Client::lookup`], when the caller already waited for the throttle once.
    async fn lookup_after_permit(
        &self,
        queries: &[LookupQuery],
    ) -> Result<Vec<Vec<Match>>, LookupError> {
        assert!(
            !queries.is_empty() && queries.len() <= MAX_BATCH,
            "a lookup takes 1 to {MAX_BATCH} queries"
        );
        let mut delay = self.config.retry_base;
        let mut attempt = 1;
        loop {
            match self.send(queries).await {
                Err(LookupError::Transient(reason)) if attempt < self.config.attempts => {
                    tracing::warn!(attempt, %reason, retry_in_ms = delay.as_millis() as u64, "AcoustID lookup failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                    attempt += 1;
                    self.throttle.ready().await;
                }
                other => return other,
            }
        }
    }

    async fn send(&self, queries: &[LookupQuery]) -> Result<Vec<Vec<Match>>, LookupError> {
        let url = format!("{}/v2/lookup", self.config.base_url.trim_end_matches('/'));
        let mut form: Vec<(String, String)> = vec![
            ("client".into(), self.config.api_key.clone()),
            ("meta".into(), META.into()),
            ("format".into(), "json".into()),
        ];
        let batched = queries.len() > 1;
        if batched {
            form.push(("batch".into(), "1".into()));
            for (index, query) in queries.iter().enumerate() {
                form.push((format!("duration.{index}"), query.duration.to_string()));
                form.push((format!("fingerprint.{index}"), query.fingerprint.clone()));
            }
        } else {
            form.push(("duration".into(), queries[0].duration.to_string()));
            form.push(("fingerprint".into(), queries[0].fingerprint.clone()));
        }
        let request = self
            .http
            .post(&url)
            .timeout(self.config.timeout)
            .form(&form);
        let response = crate::outside::send(crate::metrics::Service::AcoustId, request)
            .await
            .map_err(|error| LookupError::Transient(describe_reqwest(&error)))?;
        let status = response.status();
        // A batch of 20 fingerprints with their recordings and release groups is well under
        // a mebibyte.
        let body = crate::outside::read_capped(response, 8 * 1024 * 1024)
            .await
            .map_err(LookupError::Transient)?;
        let parsed: Option<Response> = serde_json::from_slice(&body).ok();
        if let Some(Response {
            status: ok,
            error: None,
            results,
            fingerprints,
        }) = &parsed
        {
            if status.is_success() && ok == "ok" {
                return Ok(collate(
                    queries.len(),
                    results.clone(),
                    fingerprints.as_deref(),
                ));
            }
        }
        let (code, message) = parsed
            .and_then(|response| response.error)
            .map(|error| (error.code, error.message.unwrap_or_default()))
            .unwrap_or((None, format!("HTTP {status} with an unexpected body")));
        let reason = match code {
            Some(code) => format!("{message} (code {code}, HTTP {})", status.as_u16()),
            None => message,
        };
        // 429 / code 14 (rate limited) and 5xx / code 5 (internal error) pass.
        if status.is_server_error() || status.as_u16() == 429 || matches!(code, Some(5) | Some(14))
        {
            Err(LookupError::Transient(reason))
        } else {
            Err(LookupError::Permanent(reason))
        }
    }
}

/// Orders the answer as the queries: a single lookup has `results`; a batch has one
/// `fingerprints` entry per query found, keyed by its index (a bad entry is skipped by the
/// server, so missing indexes mean "no match").
fn collate(
    count: usize,
    results: Option<Vec<Match>>,
    fingerprints: Option<&[BatchEntry]>,
) -> Vec<Vec<Match>> {
    let mut answer = vec![Vec::new(); count];
    match fingerprints {
        Some(entries) => {
            for entry in entries {
                let index = match &entry.index {
                    serde_json::Value::Number(number) => number.as_u64().map(|n| n as usize),
                    serde_json::Value::String(text) => text.parse().ok(),
                    _ => None,
                };
                if let Some(slot) = index.and_then(|index| answer.get_mut(index)) {
                    *slot = sorted(entry.results.clone());
                }
            }
        }
        None => answer[0] = sorted(results.unwrap_or_default()),
    }
    answer
}

fn sorted(mut matches: Vec<Match>) -> Vec<Match> {
    matches.sort_by(|a, b| b.score.total_cmp(&a.score));
    matches
}

fn describe_reqwest(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "the request timed out".into()
    } else if error.is_connect() {
        format!("cannot connect: {}", crate::error_chain(error))
    } else {
        crate::error_chain(error)
    }
}

/// A reply to one queued query.
type Reply = oneshot::Sender<Result<Vec<Match>, LookupError>>;

/// The process-wide lookup queue that batches concurrent lookups.
#[derive(Debug, Clone)]
pub struct Lookups {
    queue: mpsc::UnboundedSender<(LookupQuery, Reply)>,
}

impl Lookups {
    /// Starts the batching task on the current tokio runtime. It stops when the last
    /// [`Lookups`] handle is dropped.
    pub fn start(client: Client) -> Lookups {
        let (queue, receiver) = mpsc::unbounded_channel();
        tokio::spawn(batch_loop(Arc::new(client), receiver));
        Lookups { queue }
    }

    /// Looks one fingerprint up, in a batch with whatever else is waiting.
    pub async fn lookup(&self, query: LookupQuery) -> Result<Vec<Match>, LookupError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send((query, reply))
            .map_err(|_| LookupError::Transient("the lookup queue has stopped".into()))?;
        answer
            .await
            .unwrap_or_else(|_| Err(LookupError::Transient("the lookup was dropped".into())))
    }
}

/// Waits for a first query, then for the throttle; everything queued meanwhile (up to a
/// full batch) goes in the same request. The request runs in its own task so the next batch
/// can start collecting at once.
async fn batch_loop(
    client: Arc<Client>,
    mut receiver: mpsc::UnboundedReceiver<(LookupQuery, Reply)>,
) {
    while let Some(first) = receiver.recv().await {
        client.throttle.ready().await;
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let client = client.clone();
        tokio::spawn(async move {
            let (queries, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            match client.lookup_after_permit(&queries).await {
                Ok(answers) => {
                    for (reply, answer) in replies.into_iter().zip(answers) {
                        let _ = reply.send(Ok(answer));
                    }
                }
                Err(error) => {
                    for reply in replies {
                        let _ = reply.send(Err(error.clone()));
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/acoustid")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
    }

    #[test]
    fn parses_a_single_lookup_with_partial_recordings() {
        let response: Response = serde_json::from_str(&fixture("lookup_high_score.json")).unwrap();
        let answer = collate(1, response.results, None);
        let best = &answer[0][0];
        assert_eq!(best.score, 0.971834);
        assert_eq!(best.recordings[0].title.as_deref(), Some("Polar Drift"));
        assert_eq!(best.recordings[0].releasegroups[0].artists, None);
        assert_eq!(
            best.recordings[0].releasegroups[1].secondarytypes,
            vec!["Compilation".to_string()]
        );
        // The second match's recording has only an id.
        assert_eq!(answer[0][1].recordings[0].title, None);
    }

    #[test]
    fn collates_a_batch_by_index_and_keeps_missing_ones_empty() {
        let response: Response = serde_json::from_str(&fixture("lookup_batch.json")).unwrap();
        let answer = collate(3, None, response.fingerprints.as_deref());
        assert_eq!(answer.len(), 3);
        assert!(!answer[0].is_empty());
        assert!(answer[1].is_empty());
        assert!(!answer[2].is_empty());
    }

    #[test]
    fn joins_credits_with_their_join_phrases() {
        let credit = vec![
            Credit {
                id: None,
                name: "A".into(),
                joinphrase: Some(" feat. ".into()),
            },
            Credit {
                id: None,
                name: "B".into(),
                joinphrase: None,
            },
        ];
        assert_eq!(credit_name(&credit).as_deref(), Some("A feat. B"));
        assert_eq!(credit_name(&[]), None);
    }
}
