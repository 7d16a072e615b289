//! `/tracks/{id}/lyrics` from LRCLIB (wiremock answering with `shared/fixtures/lrclib`) and
//! the cache's state table: get-or-fetch, the 7-day `not_found`, the provider error kept an
//! hour, refetch, and one provider request for fifty concurrent ones. (Embedded and sidecar
//! lyrics: `musiclib-core/tests/it/lyrics.rs`.)

use std::time::Duration;

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::{json, Value};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::api::App;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/lrclib")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn answer(status: u16, name: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("Content-Type", "application/json")
        .set_body_string(fixture(name))
}

/// A library pointed at `server`, a signed-in user, and one synthetic track (no audio) per
/// `(title, artist, album, seconds)`.
async fn set_up(
    backend: Backend,
    server: &MockServer,
    tracks: &[(&str, &str, &str, i64)],
) -> (App, String, Vec<String>) {
    let base = server.uri();
    let library = TestLibrary::builder(backend)
        .config(move |config| config.enrichment.lrclib_base_url = base)
        .build()
        .await;
    let app = App::new(library).await;
    musiclib_core::testing::insert_synthetic_tracks(&app.library, tracks.len()).await;
    let token = app.register("reader").await;
    let (_, page) = app.get("/api/v1/tracks?limit=50", Some(&token)).await;
    let ids: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|track| track["id"].as_str().unwrap().to_string())
        .collect();
    for (id, (title, artist, album, seconds)) in ids.iter().zip(tracks) {
        musiclib_core::testing::execute(
            &app.library,
            "UPDATE tracks SET title = $2, artist_name = $3, album_title = $4, duration_ms = CAST($5 AS BIGINT) WHERE id = $1",
            &[id, title, artist, album, &(seconds * 1000).to_string()],
        )
        .await;
    }
    (app, token, ids)
}

async fn lyrics(app: &App, token: &str, id: &str) -> Value {
    let (status, body) = app
        .get(&format!("/api/v1/tracks/{id}/lyrics"), Some(token))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

/// Moves a track's record back in time.
async fn age(app: &App, id: &str, by: Duration) {
    musiclib_core::testing::execute(
        &app.library,
        &format!(
            "UPDATE lyrics SET fetched_at = fetched_at - {} WHERE track_id = $1",
            by.as_micros()
        ),
        &[id],
    )
    .await;
}

both_backends!(lyrics_come_from_lrclib, |backend: Backend| async move {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/get"))
        .and(query_param("track_name", "Polar Drift"))
        .and(query_param("artist_name", "Aurora Lane"))
        .and(query_param("album_name", "Northern Lights"))
        .and(query_param("duration", "142"))
        .respond_with(answer(200, "get_synced.json"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/get"))
        .and(query_param("track_name", "Nuit Blanche"))
        .respond_with(answer(200, "get_plain_only.json"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/get"))
        .and(query_param("track_name", "Magnetosphere"))
        .respond_with(answer(200, "get_instrumental.json"))
        .mount(&server)
        .await;
    // Not by /api/get; search by fields finds nothing, search by text finds it.
    Mock::given(method("GET"))
        .and(path("/api/get"))
        .and(query_param("track_name", "桜の雨"))
        .respond_with(answer(404, "get_not_found.json"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/search"))
        .and(query_param("track_name", "桜の雨"))
        .respond_with(answer(200, "search_empty.json"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/search"))
        .and(query_param("q", "桜の雨 月光オーケストラ"))
        .respond_with(answer(200, "search_results_unicode.json"))
        .mount(&server)
        .await;
    let (app, token, ids) = set_up(
        backend,
        &server,
        &[
            ("Polar Drift", "Aurora Lane", "Northern Lights", 142),
            ("Nuit Blanche", "Café Noir", "Rive Gauche", 61),
            ("Magnetosphere", "Aurora Lane", "Northern Lights", 240),
            ("桜の雨", "月光オーケストラ", "夜明けの歌", 190),
        ],
    )
    .await;

    let synced = lyrics(&app, &token, &ids[0]).await;
    assert_eq!(synced["status"], "found", "{synced}");
    assert_eq!(synced["source"], "lrclib");
    assert_eq!(synced["synced"], true);
    assert_eq!(synced["instrumental"], false);
    let lines = synced["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 20);
    assert_eq!(
        lines[0],
        json!({"start_ms": 12400, "text": "White horizon, nothing moving"})
    );
    assert_eq!(lines[4], json!({"start_ms": 38000, "text": ""}));
    assert!(synced["plain_text"]
        .as_str()
        .unwrap()
        .starts_with("White horizon, nothing moving\nOnly the hum"));
    assert!(synced["fetched_at"].is_string());
    assert!(synced["refetch_after"].is_null());
    let user_agent = server.received_requests().await.unwrap()[0]
        .headers
        .get("user-agent")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(user_agent.starts_with("musiclib/"), "{user_agent}");

    let plain = lyrics(&app, &token, &ids[1]).await;
    assert_eq!(
        (plain["status"].as_str(), plain["synced"].as_bool()),
        (Some("found"), Some(false))
    );
    assert!(plain["lines"].as_array().unwrap().is_empty());
    assert!(plain["plain_text"]
        .as_str()
        .unwrap()
        .starts_with("Les néons"));

    let instrumental = lyrics(&app, &token, &ids[2]).await;
    assert_eq!(instrumental["status"], "found");
    assert_eq!(instrumental["instrumental"], true);
    assert!(instrumental["plain_text"].is_null());

    let unicode = lyrics(&app, &token, &ids[3]).await;
    assert_eq!(unicode["status"], "found", "{unicode}");
    assert_eq!(unicode["lines"][0]["text"], "桜の雨が降る午後に");

    // Cached: asking again reaches no provider; a placeholder answers by its metadata too
    // (these tracks have no audio at all).
    let before = requests(&server).await;
    for id in &ids {
        lyrics(&app, &token, id).await;
    }
    assert_eq!(requests(&server).await, before);

    // Errors: no token, an unknown track, a malformed id.
    let (status, _) = app
        .get(&format!("/api/v1/tracks/{}/lyrics", ids[0]), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let unknown = musiclib_core::TrackId::new();
    let (status, body) = app
        .get(&format!("/api/v1/tracks/{unknown}/lyrics"), Some(&token))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{unknown}/lyrics/refetch"),
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = app.get("/api/v1/tracks/nope/lyrics", Some(&token)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
});

both_backends!(
    the_cache_follows_the_state_table,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        let (app, token, ids) = set_up(
            backend,
            &server,
            &[
                (
                    "Ñandú Bailarín",
                    "Los Señores del Ritmo",
                    "Canción de Mañana",
                    158,
                ),
                ("Polar Drift", "Aurora Lane", "Northern Lights", 142),
                ("Refused", "Aurora Lane", "Northern Lights", 142),
            ],
        )
        .await;
        let missing = &ids[0];

        // LRCLIB refusing the request (400 ValidationError) is a miss, not a provider error:
        // kept seven days, and no search is tried.
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .and(query_param("track_name", "Refused"))
            .respond_with(answer(400, "get_validation_error.json"))
            .mount(&server)
            .await;
        let refused = lyrics(&app, &token, &ids[2]).await;
        assert_eq!(refused["status"], "not_found", "{refused}");
        assert_eq!(
            chrono_micros(&refused["refetch_after"]) - chrono_micros(&refused["fetched_at"]),
            7 * 24 * 3_600_000_000
        );
        assert_eq!(requests(&server).await, 1);
        server.reset().await;

        // (none) → not_found: /api/get 404, then both searches empty.
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(answer(404, "get_not_found.json"))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/search"))
            .respond_with(answer(200, "search_empty.json"))
            .mount(&server)
            .await;
        let miss = lyrics(&app, &token, missing).await;
        assert_eq!(miss["status"], "not_found", "{miss}");
        assert!(miss["source"].is_null() && miss["plain_text"].is_null());
        assert!(miss["refetch_after"].is_string());
        assert_eq!(requests(&server).await, 3);

        // not_found younger than 7 days: cached.
        age(
            &app,
            missing,
            Duration::from_secs(6 * 24 * 3600 + 23 * 3600),
        )
        .await;
        lyrics(&app, &token, missing).await;
        assert_eq!(requests(&server).await, 3);
        // Older than 7 days: fetched again, now found through the search.
        age(&app, missing, Duration::from_secs(2 * 3600)).await;
        server.reset().await;
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(answer(404, "get_not_found.json"))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/search"))
            .respond_with(answer(200, "search_results.json"))
            .mount(&server)
            .await;
        // The search answers Polar Drift versions: none is this track, so still not found.
        let again = lyrics(&app, &token, missing).await;
        assert_eq!(again["status"], "not_found");
        assert_eq!(requests(&server).await, 3);

        // The search picks the album version for the track it is.
        let polar = lyrics(&app, &token, &ids[1]).await;
        assert_eq!(polar["status"], "found", "{polar}");
        assert_eq!(
            polar["lines"].as_array().unwrap().len(),
            20,
            "the album version, not the edit"
        );

        // A provider error degrades to not_found, kept an hour instead of seven days.
        server.reset().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;
        let (status, failed) = app
            .json(
                "POST",
                &format!("/api/v1/tracks/{}/lyrics/refetch", ids[1]),
                Some(&token),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{failed}");
        assert_eq!(failed["status"], "not_found", "{failed}");
        let fetched = chrono_micros(&failed["fetched_at"]);
        let retry = chrono_micros(&failed["refetch_after"]);
        assert_eq!(retry - fetched, 3_600_000_000, "{failed}");
        lyrics(&app, &token, &ids[1]).await;
        assert_eq!(requests(&server).await, 1, "within the hour: cached");
        age(&app, &ids[1], Duration::from_secs(3601)).await;
        server.reset().await;
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(answer(200, "get_synced.json"))
            .mount(&server)
            .await;
        let found = lyrics(&app, &token, &ids[1]).await;
        assert_eq!(found["status"], "found");
        // A found record stays, however old.
        age(&app, &ids[1], Duration::from_secs(30 * 24 * 3600)).await;
        let back = lyrics(&app, &token, &ids[1]).await;
        assert_eq!(back["status"], "found");
        assert_eq!(requests(&server).await, 1);

        // found → refetch: always asks again, answers the new record.
        let (status, refetched) = app
            .json(
                "POST",
                &format!("/api/v1/tracks/{}/lyrics/refetch", ids[1]),
                Some(&token),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(refetched["status"], "found");
        assert_eq!(requests(&server).await, 2);
        assert!(chrono_micros(&refetched["fetched_at"]) > chrono_micros(&back["fetched_at"]));
    }
);

both_backends!(
    fifty_requests_make_one_fetch,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(answer(200, "get_synced.json").set_delay(Duration::from_millis(300)))
            .mount(&server)
            .await;
        let (app, token, ids) = set_up(
            backend,
            &server,
            &[("Polar Drift", "Aurora Lane", "Northern Lights", 142)],
        )
        .await;
        let app = std::sync::Arc::new(app);
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (app, token, id) = (app.clone(), token.clone(), ids[0].clone());
            tasks.push(tokio::spawn(async move { lyrics(&app, &token, &id).await }));
        }
        for task in tasks {
            assert_eq!(task.await.unwrap()["status"], "found");
        }
        assert_eq!(requests(&server).await, 1);
    }
);

/// An RFC 3339 time as µs since the epoch.
fn chrono_micros(value: &Value) -> i64 {
    musiclib_core::Timestamp::parse_rfc3339(value.as_str().unwrap())
        .unwrap()
        .as_micros()
}
