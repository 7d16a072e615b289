//! What the library counts for the people who run it, through the `metrics` facade: calls to
//! outside services by outcome, cache lookups, bytes of audio sent, jobs run. Nothing here
//! exports: the program installs a recorder (the binary a Prometheus one, which musiclib-http
//! serves at `/metrics`); with none installed, recording costs next to nothing.
//!
//! Every name starts with `musiclib_` and every label value comes from a fixed set (never an
//! id, a path or a user's text), so the number of series stays bounded. The job queue's
//! gauges are not recorded here: they are read from the database when scraped
//! ([`crate::admin::Admin::metrics`]), so every process reports the whole queue.

use std::time::Instant;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};

/// How many jobs are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Waiting to run.
    pub queued: i64,
    /// Leased to a worker.
    pub running: i64,
    /// Finished.
    pub succeeded: i64,
    /// Gave up.
    pub failed: i64,
}

/// The jobs of one kind: how many are in each state, and how many queued ones are due now
/// (the queue depth: what idle workers would claim at once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindStats {
    /// The kind's stored name.
    pub kind: String,
    /// Jobs by state.
    pub counts: JobCounts,
    /// Queued jobs whose time has come (not waiting for a retry's backoff).
    pub ready: i64,
}

/// Counter: calls to outside services, by `service` and `outcome`.
pub const OUTSIDE_CALLS: &str = "musiclib_outside_calls_total";
/// Histogram: how long an outside call took, by `service`.
pub const OUTSIDE_CALL_SECONDS: &str = "musiclib_outside_call_duration_seconds";
/// Counter: lookups in the main caches, by `cache` and `result` (`hit` or `miss`).
pub const CACHE_LOOKUPS: &str = "musiclib_cache_lookups_total";
/// Counter: renditions built, by `kind` (`opus`, `hls`).
pub const RENDITION_BUILDS: &str = "musiclib_rendition_builds_total";
/// Counter: bytes of audio sent to players, by `delivery` (`stored`: an original or a cached
/// rendition; `transcode`: a live transcode; `hls`: HLS segments).
pub const STREAM_BYTES: &str = "musiclib_stream_bytes_total";
/// Counter: job attempts this process ran, by `kind` and `outcome` (`succeeded`, `failed`).
pub const JOB_RUNS: &str = "musiclib_job_runs_total";
/// Histogram: how long a job attempt took, by `kind`.
pub const JOB_RUN_SECONDS: &str = "musiclib_job_run_duration_seconds";

/// Describes every metric this crate records to the installed recorder (its `# HELP`
/// lines). Call it once, after installing the recorder.
pub fn describe() {
    use metrics::{describe_counter, describe_histogram, Unit};
    describe_counter!(
        OUTSIDE_CALLS,
        "Calls to outside services (AcoustID, Cover Art Archive, LRCLIB, Last.fm, ListenBrainz, remote sources, the external recommender) by outcome"
    );
    describe_histogram!(
        OUTSIDE_CALL_SECONDS,
        Unit::Seconds,
        "Duration of calls to outside services"
    );
    describe_counter!(
        CACHE_LOOKUPS,
        "Lookups in the server's caches, hits and misses"
    );
    describe_counter!(RENDITION_BUILDS, "Renditions built (cache fills)");
    describe_counter!(STREAM_BYTES, Unit::Bytes, "Bytes of audio sent to players");
    describe_counter!(JOB_RUNS, "Job attempts run by this process, by outcome");
    describe_histogram!(
        JOB_RUN_SECONDS,
        Unit::Seconds,
        "Duration of job attempts run by this process"
    );
}

/// What the server reports at a scrape, read from the database when asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Jobs of every kind by state, and how many queued ones are due now (the queue depth).
    pub jobs: Vec<KindStats>,
}

/// Declares the outside services once: the enum, and the list of them in the order the
/// admins' report shows them.
macro_rules! services {
    ($($(#[$meta:meta])* $variant:ident),+ $(,)?) => {
        /// An outside service: the label of its calls in the metrics, and its line in the
        /// admins' service report (`Admin::services`). To add one: a variant here, its label
        /// and its report below (both matches are exhaustive), and its settings in
        /// [`crate::config::declared`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Service {
            $($(#[$meta])* $variant),+
        }

        impl Service {
            /// Every outside service, in the report's order.
            pub(crate) const ALL: &[Service] = &[$(Service::$variant),+];
        }
    };
}

services!(
    AcoustId,
    CoverArtArchive,
    LastFm,
    ListenBrainz,
    Lrclib,
    Recommender,
    /// The yt-dlp remote source (`remote`).
    YtDlp,
    /// A Subsonic server as a remote source (`subsonic`).
    SubsonicSource,
    /// Podcast feeds, their episodes and images (URLs users give).
    Podcasts,
);

impl Service {
    /// Its label in the metrics and its name in the admins' report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Service::AcoustId => "acoustid",
            Service::CoverArtArchive => "coverartarchive",
            Service::LastFm => "lastfm",
            Service::ListenBrainz => "listenbrainz",
            Service::Lrclib => "lrclib",
            Service::Recommender => "recommender",
            // The remote sources' names (`remote::YTDLP`, `remote::SUBSONIC`).
            Service::YtDlp => "remote",
            Service::SubsonicSource => "subsonic",
            Service::Podcasts => "podcasts",
        }
    }

    /// How the admins' report shows a web service its settings alone describe: its address
    /// (credentials redacted) when it is set up, or why it is off. `None` for the services
    /// whose state is read live (the recommender, the remote sources).
    pub(crate) fn configured(self, config: &crate::Config) -> Option<Result<String, &'static str>> {
        use crate::config::redact_url;
        let enrichment = &config.enrichment;
        let scrobbling = &config.scrobbling;
        Some(match self {
            Service::AcoustId => match enrichment.acoustid_api_key {
                Some(_) => Ok(redact_url(&enrichment.acoustid_base_url)),
                None => Err("ACOUSTID_API_KEY is not set: fingerprint lookups are skipped"),
            },
            Service::CoverArtArchive if enrichment.coverart_enabled => {
                Ok(redact_url(&enrichment.coverart_base_url))
            }
            Service::CoverArtArchive => Err("COVERART_ENABLED is false"),
            Service::LastFm if scrobbling.lastfm_available() => {
                Ok(redact_url(&scrobbling.lastfm_base_url))
            }
            Service::LastFm => {
                Err("LASTFM_API_KEY and LASTFM_API_SECRET are not both set: no Last.fm scrobbling")
            }
            Service::ListenBrainz => Ok(redact_url(&scrobbling.listenbrainz_base_url)),
            Service::Lrclib => Ok(redact_url(&enrichment.lrclib_base_url)),
            // Podcasts: each feed is a user's URL, no server setting describes them.
            Service::Recommender | Service::YtDlp | Service::SubsonicSource | Service::Podcasts => {
                return None
            }
        })
    }
}

/// How an outside call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It answered what was asked.
    Ok,
    /// It has no such thing (HTTP 404 or 410).
    NotFound,
    /// It asked us to slow down (HTTP 429).
    RateLimited,
    /// It refused us (HTTP 401 or 403, a sign-in or bot check).
    Refused,
    /// It could not be reached or failed on its side (HTTP 5xx, a connection error).
    Unavailable,
    /// It did not answer in time.
    Timeout,
    /// Any other failure (another HTTP status, an answer we cannot use).
    Failed,
    /// The caller stopped waiting (dropped before the call ended).
    Cancelled,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotFound => "not_found",
            Outcome::RateLimited => "rate_limited",
            Outcome::Refused => "refused",
            Outcome::Unavailable => "unavailable",
            Outcome::Timeout => "timeout",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The outcome of an HTTP answer with `status`.
    pub(crate) fn of_status(status: u16) -> Outcome {
        match status {
            200..=299 => Outcome::Ok,
            404 | 410 => Outcome::NotFound,
            429 => Outcome::RateLimited,
            401 | 403 => Outcome::Refused,
            500..=599 => Outcome::Unavailable,
            _ => Outcome::Failed,
        }
    }
}

/// One call to an outside service, counted when it ends; dropped unfinished (its caller
/// timed out or went away), it counts as `cancelled`.
#[derive(Debug)]
pub(crate) struct OutsideCall {
    service: Service,
    started: Instant,
    finished: bool,
}

impl OutsideCall {
    pub(crate) fn start(service: Service) -> OutsideCall {
        OutsideCall {
            service,
            started: Instant::now(),
            finished: false,
        }
    }

    pub(crate) fn finish(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    fn record(&mut self, outcome: Outcome) {
        self.finished = true;
        let service = self.service.as_str();
        metrics::counter!(OUTSIDE_CALLS, "service" => service, "outcome" => outcome.as_str())
            .increment(1);
        metrics::histogram!(OUTSIDE_CALL_SECONDS, "service" => service)
            .record(self.started.elapsed().as_secs_f64());
    }
}

impl Drop for OutsideCall {
    fn drop(&mut self) {
        if !self.finished {
            self.record(Outcome::Cancelled);
        }
    }
}

/// Counts a lookup in `cache`.
pub(crate) fn cache_lookup(cache: &'static str, hit: bool) {
    let result = if hit { "hit" } else { "miss" };
    metrics::counter!(CACHE_LOOKUPS, "cache" => cache, "result" => result).increment(1);
}

/// Counts `hits` and `misses` of several lookups in `cache` at once.
pub(crate) fn cache_lookups(cache: &'static str, hits: u64, misses: u64) {
    metrics::counter!(CACHE_LOOKUPS, "cache" => cache, "result" => "hit").increment(hits);
    metrics::counter!(CACHE_LOOKUPS, "cache" => cache, "result" => "miss").increment(misses);
}

/// Counts a rendition of `kind` built.
pub(crate) fn rendition_built(kind: &'static str) {
    metrics::counter!(RENDITION_BUILDS, "kind" => kind).increment(1);
}

/// `stream`, counting each chunk in [`STREAM_BYTES`] as it is handed to the player's
/// connection (a player that leaves early is counted for what it was sent).
pub(crate) fn counted_stream(
    delivery: &'static str,
    stream: BoxStream<'static, std::io::Result<Bytes>>,
) -> BoxStream<'static, std::io::Result<Bytes>> {
    let counter = metrics::counter!(STREAM_BYTES, "delivery" => delivery);
    Box::pin(stream.inspect(move |chunk| {
        if let Ok(bytes) = chunk {
            counter.increment(bytes.len() as u64);
        }
    }))
}

/// Counts `bytes` of audio sent whole (an HLS segment).
pub(crate) fn stream_bytes(delivery: &'static str, bytes: usize) {
    metrics::counter!(STREAM_BYTES, "delivery" => delivery).increment(bytes as u64);
}

/// Counts a job attempt of `kind` and how long it took.
pub(crate) fn job_run(kind: &str, succeeded: bool, started: Instant) {
    let outcome = if succeeded { "succeeded" } else { "failed" };
    metrics::counter!(JOB_RUNS, "kind" => kind.to_string(), "outcome" => outcome).increment(1);
    metrics::histogram!(JOB_RUN_SECONDS, "kind" => kind.to_string())
        .record(started.elapsed().as_secs_f64());
}

#[cfg(test)]
mod tests {

    #[test]
    fn each_outside_service_has_one_label_and_a_report() {
        let labels: std::collections::HashSet<_> = Service::ALL
            .iter()
            .map(|service| service.as_str())
            .collect();
        assert_eq!(labels.len(), Service::ALL.len());
        let config = crate::Config::embedded("/srv/musiclib");
        let reported: Vec<_> = Service::ALL
            .iter()
            .filter(|service| service.configured(&config).is_some())
            .map(|service| service.as_str())
            .collect();
        assert_eq!(
            reported,
            [
                "acoustid",
                "coverartarchive",
                "lastfm",
                "listenbrainz",
                "lrclib"
            ]
        );
        // Off until its key is set, and then it says where it calls.
        assert!(Service::AcoustId.configured(&config).unwrap().is_err());
    }

    use super::*;

    #[test]
    fn statuses_map_onto_outcomes() {
        let cases = [
            (200, "ok"),
            (204, "ok"),
            (404, "not_found"),
            (410, "not_found"),
            (429, "rate_limited"),
            (401, "refused"),
            (403, "refused"),
            (503, "unavailable"),
            (400, "failed"),
            (302, "failed"),
        ];
        for (status, outcome) in cases {
            assert_eq!(Outcome::of_status(status).as_str(), outcome, "{status}");
        }
    }

    #[test]
    fn an_unfinished_call_counts_as_cancelled_and_a_finished_one_once() {
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            drop(OutsideCall::start(Service::Lrclib));
            OutsideCall::start(Service::AcoustId).finish(Outcome::RateLimited);
        });
        let counts: Vec<(String, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                metrics_util::debugging::DebugValue::Counter(count) => {
                    let labels: Vec<String> = key
                        .key()
                        .labels()
                        .map(|label| format!("{}={}", label.key(), label.value()))
                        .collect();
                    Some((labels.join(","), count))
                }
                _ => None,
            })
            .collect();
        assert!(counts.contains(&("service=lrclib,outcome=cancelled".into(), 1)));
        assert!(counts.contains(&("service=acoustid,outcome=rate_limited".into(), 1)));
        assert_eq!(counts.len(), 2, "{counts:?}");
    }
}
