//! Metrics for the people who run the server, in the Prometheus text format.
//!
//! - [`install_recorder`]: the process's Prometheus recorder (the binary installs it; once per
//!   process, later calls do nothing). Core and the adapters record through the `metrics`
//!   facade into it.
//! - The request middleware ([`router`](crate::router) adds it): every request by `method`,
//!   `route` (the matched template, `/api/v1/tracks/{id}`, or the Subsonic method,
//!   `/rest/search3`; never the raw path) and `status`, with a latency histogram.
//! - `GET /metrics` (and `/api/v1/metrics`): superusers only (core decides,
//!   `Admin::metrics`); [`private_router`] serves it without authentication on an address the
//!   operator set aside for scrapers (`METRICS_BIND_ADDRESS`).
//!
//! The job queue's gauges are read from the database at each scrape and rendered by a
//! recorder of the scrape's own, so they are the database's numbers (the same on every
//! process) and never mix with another library's in the same process (tests).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use musiclib_core::Library;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::error::{ApiError, ErrorBody};
use crate::extract::Auth;

/// Counter: requests by `method`, `route` and `status`.
pub const REQUESTS: &str = "musiclib_http_requests_total";
/// Histogram: time to the response's head (a stream's body is not waited for), by `method`
/// and `route`.
pub const REQUEST_SECONDS: &str = "musiclib_http_request_duration_seconds";
/// Gauge: jobs by `kind` and `state`.
pub const JOBS: &str = "musiclib_jobs";
/// Gauge: queued jobs due now, by `kind`.
pub const QUEUE_DEPTH: &str = "musiclib_job_queue_depth";
/// The `route` of a request no route matched.
pub const UNMATCHED: &str = "unmatched";
/// The content type of the Prometheus text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Buckets of request latencies, in seconds.
const REQUEST_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Buckets of outside calls, in seconds (AcoustID batches and downloads take long).
const OUTSIDE_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
/// Buckets of job attempts, in seconds (a scan or a download can take an hour).
const JOB_BUCKETS: &[f64] = &[
    0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];
/// How often histograms are drained into their buckets between scrapes (else their samples
/// pile up in memory while nobody scrapes).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The installed recorder's handle; `None` when another recorder was installed first.
static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process's Prometheus recorder, once: later calls (every test that builds a
/// router, say) return at once. Answers whether this recorder is the process's; when the
/// program installed another one first, `/metrics` shows only the job queue.
pub fn install_recorder() -> bool {
    RECORDER
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(REQUEST_SECONDS.into()), REQUEST_BUCKETS)
                .and_then(|builder| {
                    builder.set_buckets_for_metric(
                        Matcher::Full(musiclib_core::metrics::OUTSIDE_CALL_SECONDS.into()),
                        OUTSIDE_BUCKETS,
                    )
                })
                .and_then(|builder| {
                    builder.set_buckets_for_metric(
                        Matcher::Full(musiclib_core::metrics::JOB_RUN_SECONDS.into()),
                        JOB_BUCKETS,
                    )
                })
                .and_then(PrometheusBuilder::install_recorder);
            match handle {
                Ok(handle) => {
                    describe();
                    musiclib_core::metrics::describe();
                    let upkeep = handle.clone();
                    let spawned = std::thread::Builder::new()
                        .name("metrics-upkeep".into())
                        .spawn(move || loop {
                            upkeep.run_upkeep();
                            std::thread::sleep(UPKEEP_EVERY);
                        });
                    if let Err(error) = spawned {
                        tracing::warn!(%error, "cannot start the metrics upkeep thread");
                    }
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "another metrics recorder is installed: /metrics shows the job queue only");
                    None
                }
            }
        })
        .is_some()
}

fn describe() {
    use metrics::{describe_histogram, Unit};
    metrics::describe_counter!(
        REQUESTS,
        "HTTP requests by method, route template (Subsonic: method) and status"
    );
    describe_histogram!(
        REQUEST_SECONDS,
        Unit::Seconds,
        "Time from a request to its response's head, by method and route template"
    );
}

/// Counts each request by its route template and status, and times it. Added with
/// `Router::layer`, so it runs after routing and sees the matched route.
pub(crate) async fn track(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = route_label(request.extensions().get::<MatchedPath>());
    let method = method_label(request.method());
    let response = next.run(request).await;
    let status = response.status().as_str().to_string();
    metrics::histogram!(REQUEST_SECONDS, "method" => method, "route" => route.clone())
        .record(started.elapsed().as_secs_f64());
    metrics::counter!(REQUESTS, "method" => method, "route" => route, "status" => status)
        .increment(1);
    response
}

/// The route template, with a Subsonic method's `.view` spelling counted as its plain one;
/// [`UNMATCHED`] for a request no route took (axum's catch-all of a nested router's
/// fallback included), so a scanner's random paths add no series.
fn route_label(matched: Option<&MatchedPath>) -> String {
    match matched.map(MatchedPath::as_str) {
        Some(route) if !route.contains("{*") => {
            route.strip_suffix(".view").unwrap_or(route).to_string()
        }
        _ => UNMATCHED.to_string(),
    }
}

/// The request method, from a fixed set (any other token is `other`).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

pub(crate) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new().routes(routes!(metrics))
}

/// Admin only: the server's metrics, in the Prometheus text format.
///
/// Requests by route and status with latencies, stream bytes, jobs by kind and state and the
/// queue depth, outside calls by service and outcome, cache hits and misses. Also served at
/// the root `/metrics`, and without a token on `METRICS_BIND_ADDRESS` when the operator sets
/// one.
#[utoipa::path(get, path = "/metrics", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "Metrics in the Prometheus text format 0.0.4", body = String,
            content_type = "text/plain; version=0.0.4; charset=utf-8"),
        (status = 401, description = "No valid access token", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 503, description = "The database is unreachable", body = ErrorBody)))]
pub(crate) async fn metrics(
    State(library): State<Library>,
    Auth(caller): Auth,
) -> Result<Response, ApiError> {
    let snapshot = library.admin().metrics(&caller).await?;
    Ok(exposition(&snapshot))
}

/// `/metrics` without authentication, and nothing else (404 for any other path): for a
/// listener on an address the operator set aside for metrics scrapers.
pub fn private_router(library: Library) -> Router {
    Router::new()
        .route("/metrics", axum::routing::get(private_metrics))
        .fallback(crate::not_found)
        .with_state(library)
}

async fn private_metrics(State(library): State<Library>) -> Result<Response, ApiError> {
    let snapshot = library.admin().metrics_snapshot().await?;
    Ok(exposition(&snapshot))
}

/// What this process recorded, then the job queue's gauges.
fn exposition(snapshot: &musiclib_core::metrics::Snapshot) -> Response {
    let mut text = RECORDER
        .get()
        .and_then(Option::as_ref)
        .map(PrometheusHandle::render)
        .unwrap_or_default();
    text.push_str(&render_jobs(snapshot));
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
        text,
    )
        .into_response()
}

/// The job gauges of `snapshot`, through a recorder of this scrape's own.
fn render_jobs(snapshot: &musiclib_core::metrics::Snapshot) -> String {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        metrics::describe_gauge!(JOBS, "Jobs in the queue by kind and state");
        metrics::describe_gauge!(
            QUEUE_DEPTH,
            "Queued jobs due now (not waiting for a retry), by kind"
        );
        for stats in &snapshot.jobs {
            let counts = &stats.counts;
            for (state, count) in [
                ("queued", counts.queued),
                ("running", counts.running),
                ("succeeded", counts.succeeded),
                ("failed", counts.failed),
            ] {
                metrics::gauge!(JOBS, "kind" => stats.kind.clone(), "state" => state)
                    .set(count as f64);
            }
            metrics::gauge!(QUEUE_DEPTH, "kind" => stats.kind.clone()).set(stats.ready as f64);
        }
    });
    // Descriptions are published by the upkeep.
    handle.run_upkeep();
    handle.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt;

    /// `method route status` of each series of requests made to `router` for `paths`, with
    /// its count.
    fn requests(router: Router, paths: &[&str]) -> Vec<(String, u64)> {
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        // One thread, so the recorder local to it sees every request.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                for path in paths {
                    let request = axum::http::Request::get(*path)
                        .body(axum::body::Body::empty())
                        .unwrap();
                    router.clone().oneshot(request).await.unwrap();
                }
            })
        });
        let mut series: Vec<(String, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                metrics_util::debugging::DebugValue::Counter(count)
                    if key.key().name() == REQUESTS =>
                {
                    let labels: Vec<&str> = key.key().labels().map(|label| label.value()).collect();
                    Some((labels.join(" "), count))
                }
                _ => None,
            })
            .collect();
        series.sort();
        series
    }

    #[test]
    fn requests_are_counted_by_route_template_never_by_path() {
        let api = Router::new()
            .route("/tracks/{id}", get(|| async { "track" }))
            .fallback(|| async { StatusCode::NOT_FOUND });
        let router = Router::new()
            .nest("/api/v1", api)
            .route("/rest/ping", get(|| async { "pong" }))
            .route("/rest/ping.view", get(|| async { "pong" }))
            .fallback(|| async { StatusCode::NOT_FOUND })
            .layer(axum::middleware::from_fn(track));
        let series = requests(
            router,
            &[
                "/api/v1/tracks/1",
                "/api/v1/tracks/2",
                "/api/v1/no/such/thing",
                "/rest/ping.view",
                "/rest/ping",
                "/wp-login.php",
            ],
        );
        assert_eq!(
            series,
            vec![
                ("GET /api/v1/tracks/{id} 200".to_string(), 2),
                ("GET /rest/ping 200".to_string(), 2),
                ("GET unmatched 404".to_string(), 2),
            ]
        );
    }

    #[test]
    fn unusual_methods_are_one_label() {
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
        assert_eq!(method_label(&Method::DELETE), "DELETE");
    }
}
