//! `/radio`, `/radio/next`, `/tracks/{id}/similar`, `/artists/{id}/similar` over HTTP, and
//! the HTTP external recommender against wiremock. (The rules of the feed on a library
//! built so the right answers are known: `musiclib-core/tests/it/recommend.rs` and the
//! property tests of `musiclib-core/src/recommend/batch.rs`.)

use std::collections::HashSet;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use musiclib_core::recommend::ExternalStatus;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::api::App;

/// 300 synthetic tracks (three artists, twelve genres); a signed-in user; the track ids.
async fn set_up(backend: Backend, recommender: Option<String>) -> (App, String, Vec<String>) {
    set_up_with(backend, recommender, Duration::from_millis(150)).await
}

/// [`set_up`] with the recommender's own timeout.
async fn set_up_with(
    backend: Backend,
    recommender: Option<String>,
    timeout: Duration,
) -> (App, String, Vec<String>) {
    let library = TestLibrary::builder(backend)
        .config(move |config| {
            config.recommend.external_url = recommender;
            config.recommend.external_timeout = timeout;
            // An answer that comes at once is waited for, however loaded the machine (the
            // default grace is 20 ms); a held one still leaves the batch to the heuristics.
            config.recommend.external_grace = timeout.min(Duration::from_secs(10));
        })
        .build()
        .await;
    let app = App::new(library).await;
    musiclib_core::testing::insert_synthetic_tracks(&app.library, 300).await;
    let token = app.register("listener").await;
    let mut ids = Vec::new();
    for offset in [0, 100, 200] {
        let (_, page) = app
            .get(
                &format!("/api/v1/tracks?limit=100&offset={offset}"),
                Some(&token),
            )
            .await;
        ids.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|track| track["id"].as_str().unwrap().to_string()),
        );
    }
    assert_eq!(ids.len(), 300);
    (app, token, ids)
}

fn item_ids(answer: &Value) -> Vec<String> {
    answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["track"]["id"].as_str().unwrap().to_string())
        .collect()
}

both_backends!(
    the_radio_answers_batches_and_the_similar_lists,
    |backend: Backend| async move {
        let (app, token, ids) = set_up(backend, None).await;
        let seed = &ids[0];

        let (status, first) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"seed_track_id": seed, "count": 20}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{first}");
        let first_ids = item_ids(&first);
        assert_eq!(first_ids.len(), 20);
        assert!(!first_ids.contains(seed));
        assert_eq!(first_ids.iter().collect::<HashSet<_>>().len(), 20);
        for item in first["items"].as_array().unwrap() {
            assert!(item["score"].is_number(), "{item}");
            let reasons = item["reasons"].as_array().unwrap();
            assert!(!reasons.is_empty());
            assert!(item["track"]["title"].is_string());
        }
        // A fifth is exploration.
        let explored = first["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["reasons"] == json!(["exploration"]))
            .count();
        assert_eq!(explored, 4, "{first}");

        // The next batch never repeats what was seen.
        let (status, next) = app
            .json(
                "POST",
                "/api/v1/radio/next",
                Some(&token),
                json!({"seed_track_id": seed, "exclude_ids": first_ids}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let next_ids = item_ids(&next);
        assert_eq!(next_ids.len(), 20, "default count");
        assert!(next_ids.iter().all(|id| !first_ids.contains(id)));

        // Without a seed or likes: exploration and filler.
        let (status, seedless) = app
            .json("POST", "/api/v1/radio", Some(&token), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(item_ids(&seedless).len(), 20);

        // Similar tracks: ranked, never the track itself; similar artists (none computed yet).
        let (status, similar) = app
            .get(
                &format!("/api/v1/tracks/{seed}/similar?limit=5"),
                Some(&token),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{similar}");
        let similar_ids = item_ids(&similar);
        assert_eq!(similar_ids.len(), 5);
        assert!(!similar_ids.contains(seed));
        let scores: Vec<f64> = similar["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["score"].as_f64().unwrap())
            .collect();
        assert!(
            scores.windows(2).all(|pair| pair[0] >= pair[1]),
            "{scores:?}"
        );
        let (_, track) = app
            .get(&format!("/api/v1/tracks/{seed}"), Some(&token))
            .await;
        let artist = track["artist_id"].as_str().unwrap();
        app.library.recommend().compute_similarity().await.unwrap();
        let (status, artists) = app
            .get(&format!("/api/v1/artists/{artist}/similar"), Some(&token))
            .await;
        assert_eq!(status, StatusCode::OK, "{artists}");
        // The three synthetic artists share every genre.
        let items = artists["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{artists}");
        assert_eq!(items[0]["reasons"], json!(["shared_genre"]));
        assert!(items[0]["artist"]["name"].is_string());

        // Errors: the right status and a body naming the problem.
        let (status, body) = app
            .json("POST", "/api/v1/radio", Some(&token), json!({"count": 0}))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["error"]["field"], "count", "{body}");
        let (status, body) = app
            .json("POST", "/api/v1/radio", Some(&token), json!({"count": 101}))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let many: Vec<String> = (0..5001).map(|n| format!("id-{n}")).collect();
        let (status, body) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"exclude_ids": many}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["error"]["field"], "exclude_ids", "{body}");
        let (status, _) = app
            .json("POST", "/api/v1/radio", Some(&token), json!({"seed": seed}))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "unknown field");
        let unknown = "0192a0c4-0000-7000-8000-000000000000";
        let (status, _) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"seed_track_id": unknown}),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = app
            .get(&format!("/api/v1/tracks/{unknown}/similar"), Some(&token))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = app
            .get(&format!("/api/v1/artists/{unknown}/similar"), Some(&token))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = app
            .get(
                &format!("/api/v1/tracks/{seed}/similar?limit=0"),
                Some(&token),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        let (status, _) = app.json("POST", "/api/v1/radio", None, json!({})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
);

both_backends!(
    the_http_recommender_is_mixed_in_and_left_out_when_slow,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        let (app, _, ids) = set_up_with(
            backend,
            Some(format!("{}/suggest", server.uri())),
            Duration::from_secs(30),
        )
        .await;
        // A listener without likes: the heuristics have nothing to say, so the batch holds
        // the suggestion wherever the random samples fall.
        let suggested = &ids[299];
        let fresh = app.register("fresh").await;
        Mock::given(method("POST"))
            .and(path("/suggest"))
            .and(body_partial_json(json!({"seeds": [], "count": 10})))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"suggestions": [{"track_id": suggested, "score": 1.0}]})),
            )
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
        let (status, batch) = app
            .json("POST", "/api/v1/radio", Some(&fresh), json!({"count": 10}))
            .await;
        assert_eq!(status, StatusCode::OK);
        let item = batch["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["track"]["id"] == json!(suggested))
            .unwrap_or_else(|| panic!("the suggestion is missing: {batch}"));
        assert!(
            item["reasons"]
                .as_array()
                .unwrap()
                .contains(&json!("external")),
            "{item}"
        );

        // Slow: a recommender that holds its answer (with all of a minute to give it). The
        // heuristics answer alone, without waiting for it: the radio answers while the
        // recommender still holds the request.
        let held = HeldRecommender::start(json!({"suggestions": [{"track_id": suggested}]})).await;
        let (slow, slow_token, slow_ids) =
            set_up_with(backend, Some(held.url.clone()), Duration::from_secs(60)).await;
        let (status, batch) = slow
            .json(
                "POST",
                "/api/v1/radio",
                Some(&slow_token),
                json!({"seed_track_id": slow_ids[0], "count": 10}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{batch}");
        assert_eq!(item_ids(&batch).len(), 10);
        assert!(without_external(&batch), "{batch}");
        held.wait_asked(1).await;
        assert_eq!(
            held.answered(),
            0,
            "the radio answered before the recommender"
        );
        held.release();

        // Paused once its call times out (1 s here; it never answers in time): the next batch
        // does not ask it.
        let held = HeldRecommender::start(json!({"suggestions": [{"track_id": suggested}]})).await;
        let (app, token, ids) =
            set_up_with(backend, Some(held.url.clone()), Duration::from_secs(1)).await;
        let seed = &ids[0];
        let (status, batch) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"seed_track_id": seed, "count": 10}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(item_ids(&batch).len(), 10);
        assert!(without_external(&batch), "{batch}");
        wait_until_paused(&app).await;
        let ExternalStatus::Paused { reason, .. } = app.library.recommend().external_status()
        else {
            panic!("not paused")
        };
        assert!(reason.contains("no answer within 1000 ms"), "{reason}");
        let (status, batch) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"seed_track_id": seed, "count": 10}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert!(without_external(&batch), "{batch}");
        assert_eq!(held.asked(), 1, "a paused recommender was asked");
        assert_eq!(held.answered(), 0);
        held.release();
        server.verify().await;
    }
);

/// A recommender (`POST /suggest`) that holds every request, unanswered, until
/// [`HeldRecommender::release`]; then answers `answer`.
struct HeldRecommender {
    url: String,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    answered: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    release: tokio::sync::watch::Sender<bool>,
}

impl HeldRecommender {
    async fn start(answer: Value) -> HeldRecommender {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/suggest", listener.local_addr().unwrap());
        let asked = std::sync::Arc::new(AtomicUsize::new(0));
        let answered = std::sync::Arc::new(AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let (task_asked, task_answered) = (asked.clone(), answered.clone());
        let body = answer.to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (asked, answered) = (task_asked.clone(), task_answered.clone());
                let (mut released, body) = (released.clone(), body.clone());
                tokio::spawn(async move {
                    // The whole request: its head, then the body it announces.
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 4096];
                    loop {
                        let Ok(read) = stream.read(&mut buffer).await else {
                            return;
                        };
                        if read == 0 {
                            return;
                        }
                        request.extend_from_slice(&buffer[..read]);
                        let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                    asked.fetch_add(1, Ordering::SeqCst);
                    if released.wait_for(|released| *released).await.is_err() {
                        return;
                    }
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(response.as_bytes()).await.is_ok() {
                        answered.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        HeldRecommender {
            url,
            asked,
            answered,
            release,
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn answered(&self) -> usize {
        self.answered.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until it has been asked `count` times (the deadline only guards against a hang).
    async fn wait_asked(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.asked() < count {
            assert!(Instant::now() < deadline, "the recommender was never asked");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn release(&self) {
        self.release.send_replace(true);
    }
}

/// Waits until the external recommender is paused (the deadline only guards against a hang).
async fn wait_until_paused(app: &App) {
    let paused = async {
        while !matches!(
            app.library.recommend().external_status(),
            ExternalStatus::Paused { .. }
        ) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), paused)
        .await
        .expect("the recommender is paused");
}

/// No radio answer carries the reason `external`.
fn without_external(batch: &Value) -> bool {
    batch["items"].as_array().unwrap().iter().all(|item| {
        !item["reasons"]
            .as_array()
            .unwrap()
            .contains(&json!("external"))
    })
}

both_backends!(
    a_failing_http_recommender_leaves_the_heuristics_alone_and_is_paused,
    |backend: Backend| async move {
        // An error status, a malformed answer, a refused connection.
        for failure in ["status", "malformed", "refused"] {
            let server = MockServer::start().await;
            let url = match failure {
                "refused" => {
                    // A port nobody listens on.
                    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                    let port = listener.local_addr().unwrap().port();
                    drop(listener);
                    format!("http://127.0.0.1:{port}/suggest")
                }
                _ => format!("{}/suggest", server.uri()),
            };
            let response = match failure {
                "status" => ResponseTemplate::new(500).set_body_string("boom"),
                _ => ResponseTemplate::new(200)
                    .set_body_raw("{\"suggestions\": [{\"track_id\": 7", "application/json"),
            };
            Mock::given(method("POST"))
                .and(path("/suggest"))
                .respond_with(response)
                .expect(if failure == "refused" { 0 } else { 1 })
                .mount(&server)
                .await;
            // All the time in the world: the failure, not the timeout, leaves it out.
            let (app, token, ids) = set_up_with(backend, Some(url), Duration::from_secs(30)).await;
            for round in 0..2 {
                let (status, batch) = app
                    .json(
                        "POST",
                        "/api/v1/radio",
                        Some(&token),
                        json!({"seed_track_id": ids[0], "count": 10}),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{failure}: {batch}");
                assert_eq!(item_ids(&batch).len(), 10, "{failure}: {batch}");
                assert!(without_external(&batch), "{failure}: {batch}");
                if round == 0 {
                    wait_until_paused(&app).await;
                }
            }
            // Asked once, then left out (`expect` above); the report says why.
            server.verify().await;
            let ExternalStatus::Paused { reason, .. } = app.library.recommend().external_status()
            else {
                panic!("{failure}: not paused")
            };
            let expected = match failure {
                "status" => "500",
                "malformed" => "malformed",
                _ => "cannot reach",
            };
            assert!(reason.contains(expected), "{failure}: {reason}");
        }
    }
);
