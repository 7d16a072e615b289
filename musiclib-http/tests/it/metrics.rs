//! `GET /metrics`: superusers only (401 anonymous, 403 for a user), the Prometheus text
//! format; requests counted by route template and status, stream bytes, the job queue's
//! gauges, outside calls and cache lookups.
//!
//! The recorder is the process's (installed once, as the binary does), so counters would also
//! hold what other tests running at the same time did: each test runs again in a process of
//! its own ([`alone`]), where its counts are exactly its own requests', and the job gauges
//! come from the test's own database at each scrape.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::{Backend, TestLibrary};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::api::App;

/// The variable naming the one test a process runs alone.
const ALONE: &str = "MUSICLIB_METRICS_TEST_ALONE";

/// Whether this process runs the test `test` (of `backend`) alone. Otherwise it runs it again
/// in a new process of this test binary, alone, checks that it passed there, and says `false`:
/// the caller returns (the recorder is the process's, and any other test of this binary
/// running beside would bump the same series).
async fn alone(test: &str, backend: Backend) -> bool {
    let backend = match backend {
        Backend::Embedded => "embedded",
        Backend::ScaleOut => "scale_out",
    };
    let name = format!("metrics::{test}::{backend}");
    if std::env::var(ALONE).as_deref() == Ok(name.as_str()) {
        return true;
    }
    let child = name.clone();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([child.as_str(), "--exact", "--test-threads=1", "--nocapture"])
            .env(ALONE, &child)
            .output()
            .expect("run the test alone")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, alone in its process:\n{stdout}\n{stderr}"
    );
    false
}

/// An app whose process has the metrics recorder installed.
async fn app(library: TestLibrary) -> App {
    assert!(musiclib_http::metrics::install_recorder());
    App::new(library).await
}

/// The metrics text as `token` gets it at `uri`, checking the status and content type.
async fn scrape_at(app: &App, uri: &str, token: &str) -> String {
    let request = Request::get(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = app.raw(request).await;
    assert_eq!(status, StatusCode::OK);
    let content_type = headers[header::CONTENT_TYPE].to_str().unwrap();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    String::from_utf8(body).unwrap()
}

async fn scrape(app: &App, token: &str) -> String {
    scrape_at(app, "/metrics", token).await
}

/// The value of the sample `name` whose labels include `labels` (0 when there is none).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, rest) = series.split_once('{').unwrap_or((series, "}"));
            if series_name != name {
                return None;
            }
            let rest = rest.strip_suffix('}')?;
            let found = labels
                .iter()
                .all(|(key, value)| rest.contains(&format!("{key}=\"{value}\"")));
            found.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

both_backends!(
    metrics_need_an_admin_and_count_requests_by_route,
    |backend: Backend| async move {
        if !alone("metrics_need_an_admin_and_count_requests_by_route", backend).await {
            return;
        }
        let app = app(TestLibrary::new(backend).await).await;
        let admin = app.admin_token().await;
        let user = app.register("listener").await;
        for uri in ["/metrics", "/api/v1/metrics"] {
            let (status, body) = app.get(uri, None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}: {body}");
            assert_eq!(body["error"]["code"], "unauthenticated");
            let (status, body) = app.get(uri, Some(&user)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
            assert_eq!(body["error"]["code"], "forbidden");
        }
        scrape_at(&app, "/api/v1/metrics", &admin).await;

        musiclib_core::testing::insert_synthetic_tracks(&app.library, 2).await;
        let (_, page) = app.get("/api/v1/tracks", Some(&user)).await;
        let ids: Vec<String> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|track| track["id"].as_str().unwrap().to_string())
            .collect();
        let ok = [
            ("method", "GET"),
            ("route", "/api/v1/tracks/{id}"),
            ("status", "200"),
        ];
        let not_found = [("method", "GET"), ("route", "unmatched"), ("status", "404")];
        let before = scrape(&app, &admin).await;
        for id in &ids {
            let (status, _) = app.get(&format!("/api/v1/tracks/{id}"), Some(&user)).await;
            assert_eq!(status, StatusCode::OK);
        }
        let (status, _) = app.get("/api/v1/no/such/thing", Some(&user)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let after = scrape(&app, &admin).await;

        let requests = "musiclib_http_requests_total";
        assert_eq!(
            sample(&after, requests, &ok),
            sample(&before, requests, &ok) + 2.0
        );
        assert_eq!(
            sample(&after, requests, &not_found),
            sample(&before, requests, &not_found) + 1.0
        );
        let latencies = "musiclib_http_request_duration_seconds_count";
        let timed = &ok[..2];
        assert_eq!(
            sample(&after, latencies, timed),
            sample(&before, latencies, timed) + 2.0
        );
        // Route templates, never the paths themselves.
        for id in &ids {
            assert!(!after.contains(id.as_str()), "{id} is a label");
        }
        assert!(!after.contains("/no/such/thing"));
        // The scrapes themselves, 403s and 401s included: this process's only.
        let forbidden = [("route", "/metrics"), ("status", "403")];
        assert_eq!(sample(&after, requests, &forbidden), 1.0);
        let unauthenticated = [("route", "/api/v1/metrics"), ("status", "401")];
        assert_eq!(sample(&after, requests, &unauthenticated), 1.0);
        let scraped = [("route", "/metrics"), ("status", "200")];
        assert_eq!(
            sample(&after, requests, &scraped),
            sample(&before, requests, &scraped) + 1.0
        );
        assert!(after.contains("# TYPE musiclib_http_request_duration_seconds histogram"));
    }
);

both_backends!(
    the_job_gauges_show_the_queue,
    |backend: Backend| async move {
        if !alone("the_job_gauges_show_the_queue", backend).await {
            return;
        }
        let app = app(TestLibrary::new(backend).await).await;
        let admin = app.admin_token().await;
        let jobs = "musiclib_jobs";
        let queued = [("kind", "check_files"), ("state", "queued")];
        let depth = "musiclib_job_queue_depth";
        let text = scrape(&app, &admin).await;
        // Every kind, at zero.
        for kind in app.library.jobs().kinds().names() {
            assert!(
                text.contains(&format!("{jobs}{{kind=\"{kind}\",state=\"failed\"}} 0")),
                "{kind}: {text}"
            );
        }
        assert_eq!(sample(&text, jobs, &queued), 0.0);

        let (status, body) = app
            .json(
                "POST",
                "/api/v1/storage/broken/check",
                Some(&admin),
                serde_json::json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let text = scrape(&app, &admin).await;
        assert_eq!(sample(&text, jobs, &queued), 1.0, "{text}");
        assert_eq!(sample(&text, depth, &[("kind", "check_files")]), 1.0);
        assert_eq!(
            sample(
                &text,
                jobs,
                &[("kind", "check_files"), ("state", "running")]
            ),
            0.0
        );
        assert!(text.contains("# TYPE musiclib_jobs gauge"));

        // Run it: the gauges follow the database.
        musiclib_core::testing::drain_jobs(&app.library).await;
        let text = scrape(&app, &admin).await;
        assert_eq!(sample(&text, jobs, &queued), 0.0);
        assert_eq!(sample(&text, depth, &[("kind", "check_files")]), 0.0);
        let succeeded = [("kind", "check_files"), ("state", "succeeded")];
        assert_eq!(sample(&text, jobs, &succeeded), 1.0, "{text}");
        let runs = [("kind", "check_files"), ("outcome", "succeeded")];
        assert_eq!(sample(&text, "musiclib_job_runs_total", &runs), 1.0);
    }
);

both_backends!(
    stream_bytes_are_counted_as_they_are_sent,
    |backend: Backend| async move {
        if !alone("stream_bytes_are_counted_as_they_are_sent", backend).await {
            return;
        }
        let app = app(TestLibrary::new(backend).await).await;
        let admin = app.admin_token().await;
        let user = app.register("listener").await;
        let audio = musiclib_core::testing::wav_tone(1);
        let (status, track) = app.upload(&user, "tone.wav", &audio).await;
        assert_eq!(status, StatusCode::CREATED, "{track}");
        let uri = format!("/api/v1/stream/{}", track["id"].as_str().unwrap());
        let stored = [("delivery", "stored")];
        let bytes = "musiclib_stream_bytes_total";

        let hits = [("cache", "track_audio"), ("result", "hit")];
        let misses = [("cache", "track_audio"), ("result", "miss")];
        let lookups = "musiclib_cache_lookups_total";
        let text = scrape(&app, &admin).await;
        let before = sample(&text, bytes, &stored);
        let (hits_before, misses_before) = (
            sample(&text, lookups, &hits),
            sample(&text, lookups, &misses),
        );
        let whole = Request::get(&uri)
            .header(header::AUTHORIZATION, format!("Bearer {user}"))
            .body(Body::empty())
            .unwrap();
        let (status, _, body) = app.raw(whole).await;
        assert_eq!((status, body.len()), (StatusCode::OK, audio.len()));
        let part = Request::get(&uri)
            .header(header::AUTHORIZATION, format!("Bearer {user}"))
            .header(header::RANGE, "bytes=0-999")
            .body(Body::empty())
            .unwrap();
        let (status, _, body) = app.raw(part).await;
        assert_eq!((status, body.len()), (StatusCode::PARTIAL_CONTENT, 1000));
        let text = scrape(&app, &admin).await;
        let after = sample(&text, bytes, &stored);
        assert_eq!(
            after,
            before + (audio.len() + 1000) as f64,
            "{before} then {after}"
        );
        // The track's audio row was read once and then reused.
        let (hits, misses) = (
            sample(&text, lookups, &hits) - hits_before,
            sample(&text, lookups, &misses) - misses_before,
        );
        eprintln!("track_audio: {hits} hits, {misses} misses");
        assert_eq!(
            (hits, misses),
            (1.0, 1.0),
            "track_audio lookups over two streams"
        );
    }
);

both_backends!(
    outside_calls_are_counted_by_service_and_outcome,
    |backend: Backend| async move {
        if !alone("outside_calls_are_counted_by_service_and_outcome", backend).await {
            return;
        }
        let server = MockServer::start().await;
        let record = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../shared/fixtures/lrclib/get_synced.json"),
        )
        .unwrap();
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Content-Type", "application/json")
                    .set_body_string(record),
            )
            .expect(1)
            .mount(&server)
            .await;
        let base = server.uri();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.enrichment.lrclib_base_url = base)
            .build()
            .await;
        let app = app(library).await;
        let admin = app.admin_token().await;
        musiclib_core::testing::insert_synthetic_tracks(&app.library, 1).await;
        let (_, page) = app.get("/api/v1/tracks", Some(&admin)).await;
        let id = page["items"][0]["id"].as_str().unwrap().to_string();
        musiclib_core::testing::execute(
            &app.library,
            "UPDATE tracks SET title = 'Polar Drift', artist_name = 'Aurora Lane' WHERE id = $1",
            &[&id],
        )
        .await;

        let calls = "musiclib_outside_calls_total";
        let ok = [("service", "lrclib"), ("outcome", "ok")];
        let lookups = "musiclib_cache_lookups_total";
        let hit = [("cache", "lyrics"), ("result", "hit")];
        let miss = [("cache", "lyrics"), ("result", "miss")];
        let before = scrape(&app, &admin).await;
        let lyrics = format!("/api/v1/tracks/{id}/lyrics");
        let (status, body) = app.get(&lyrics, Some(&admin)).await;
        assert_eq!(
            (status, body["status"].as_str()),
            (StatusCode::OK, Some("found"))
        );
        // The second read is the cache's.
        let (status, _) = app.get(&lyrics, Some(&admin)).await;
        assert_eq!(status, StatusCode::OK);
        let after = scrape(&app, &admin).await;
        assert_eq!(
            sample(&after, calls, &ok),
            sample(&before, calls, &ok) + 1.0
        );
        let timed = [("service", "lrclib")];
        let seconds = "musiclib_outside_call_duration_seconds_count";
        assert_eq!(
            sample(&after, seconds, &timed),
            sample(&before, seconds, &timed) + 1.0
        );
        let (misses, hits) = (
            sample(&after, lookups, &miss) - sample(&before, lookups, &miss),
            sample(&after, lookups, &hit) - sample(&before, lookups, &hit),
        );
        eprintln!("lyrics: {hits} hits, {misses} misses");
        assert_eq!(
            (misses, hits),
            (1.0, 1.0),
            "lyrics cache lookups over two reads"
        );
    }
);
