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
        let (app, token, ids) = set_up_with(
            backend,
            Some(format!("{}/suggest", server.uri())),
            Duration::from_secs(1),
        )
        .await;
        let seed = &ids[0];
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

        // Slow (5 s against its 1 s timeout): the heuristics answer alone, without waiting for
        // it (well within its timeout).
        Mock::given(method("POST"))
            .and(path("/suggest"))
            .and(body_partial_json(
                json!({"seeds": [{"track_id": seed}], "count": 10}),
            ))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_delay(Duration::from_secs(5))
                    .set_body_json(json!({"suggestions": [{"track_id": suggested}]})),
            )
            .expect(1)
            .mount(&server)
            .await;
        let started = Instant::now();
        let (status, batch) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"seed_track_id": seed, "count": 10}),
            )
            .await;
        let elapsed = started.elapsed();
        assert!(
            elapsed < Duration::from_secs(1),
            "waited {elapsed:?} for a slow recommender"
        );
        assert_eq!(status, StatusCode::OK);
        assert_eq!(item_ids(&batch).len(), 10);
        assert!(
            batch["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|item| !item["reasons"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("external"))),
            "{batch}"
        );
        // Paused once its call times out: the next batch does not ask it (`expect(1)` above).
        wait_until_paused(&app).await;
        let (status, _) = app
            .json(
                "POST",
                "/api/v1/radio",
                Some(&token),
                json!({"seed_track_id": seed, "count": 10}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        server.verify().await;
    }
);

/// Waits (up to 10 s) until the external recommender is paused.
async fn wait_until_paused(app: &App) {
    let paused = async {
        while !matches!(
            app.library.recommend().external_status(),
            ExternalStatus::Paused { .. }
        ) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), paused)
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
            let (app, token, ids) = set_up(backend, Some(url)).await;
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
