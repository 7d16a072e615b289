//! `/tracks/{id}/lyrics` from LRCLIB (wiremock answering with `shared/fixtures/lrclib`) and
//! the cache's state table: get-or-fetch, the 7-day `not_found` (to the minute, and turning
//! `found` once LRCLIB has lyrics), the provider error kept an hour, refetch from either
//! state, and one provider request for fifty concurrent ones; a refused signature (400) and a
//! track without artist found by search; a placeholder saved from a remote source answered by
//! its metadata. (Embedded and sidecar lyrics, and their order before LRCLIB:
//! `musiclib-core/tests/it/lyrics.rs`.) Rows are backdated with SQL: the test's clock.

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
    set_up_on(library, tracks).await
}

/// [`set_up`] on a library already pointed at its LRCLIB.
async fn set_up_on(
    library: TestLibrary,
    tracks: &[(&str, &str, &str, i64)],
) -> (App, String, Vec<String>) {
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

/// A field of a fixture, as text.
fn fixture_field(name: &str, field: &str) -> String {
    let value: Value = serde_json::from_str(&fixture(name)).unwrap();
    value[field].as_str().unwrap().to_string()
}

async fn refetch(app: &App, token: &str, id: &str) -> Value {
    let (status, body) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{id}/lyrics/refetch"),
            Some(token),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn requests(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .expect("the mock records requests")
        .len()
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
    // The plain text is LRCLIB's, verse breaks included.
    assert_eq!(
        synced["plain_text"],
        fixture_field("get_synced.json", "plainLyrics")
    );
    assert_eq!(synced["alternates"], json!([]));
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
    assert_eq!(
        plain["plain_text"],
        fixture_field("get_plain_only.json", "plainLyrics")
    );
    assert!(plain["plain_text"]
        .as_str()
        .unwrap()
        .contains("au fond du verre\n\nLa ville dort"));

    let instrumental = lyrics(&app, &token, &ids[2]).await;
    assert_eq!(instrumental["status"], "found");
    assert_eq!(instrumental["instrumental"], true);
    assert!(instrumental["plain_text"].is_null());

    let unicode = lyrics(&app, &token, &ids[3]).await;
    assert_eq!(unicode["status"], "found", "{unicode}");
    assert_eq!(unicode["lines"][0]["text"], "桜の雨が降る午後に");

    // Cached: asking again reaches no provider (these synthetic tracks have no file, so
    // LRCLIB answered by their metadata).
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
            ],
        )
        .await;
        let missing = &ids[0];

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
        assert_eq!(
            chrono_micros(&miss["refetch_after"]) - chrono_micros(&miss["fetched_at"]),
            7 * 24 * 3_600_000_000
        );
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
        // LRCLIB holds its answer until all fifty requests are out and it has been asked.
        let lrclib = HeldLrclib::start(fixture("get_synced.json")).await;
        let library = TestLibrary::builder(backend)
            .config({
                let url = lrclib.url.clone();
                move |config| config.enrichment.lrclib_base_url = url
            })
            .build()
            .await;
        let (app, token, ids) = set_up_on(
            library,
            &[("Polar Drift", "Aurora Lane", "Northern Lights", 142)],
        )
        .await;
        let app = std::sync::Arc::new(app);
        let started = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let (app, token, id) = (app.clone(), token.clone(), ids[0].clone());
            let started = started.clone();
            tasks.push(tokio::spawn(async move {
                started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                lyrics(&app, &token, &id).await
            }));
        }
        // (Hang guard only.)
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while started.load(std::sync::atomic::Ordering::SeqCst) < 50 || lrclib.asked() == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the requests never went out"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Every request has started and none can have its answer: one fetch is held.
        assert!(
            tasks.iter().all(|task| !task.is_finished()),
            "a request was answered without LRCLIB"
        );
        assert_eq!(lrclib.asked(), 1, "a second fetch while the first was held");
        lrclib.release();
        for task in tasks {
            assert_eq!(task.await.unwrap()["status"], "found");
        }
        assert_eq!(lrclib.asked(), 1);
    }
);

/// An LRCLIB (`GET /api/get`) that holds every request, unanswered, until released; then
/// answers each with `body`.
struct HeldLrclib {
    url: String,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    release: tokio::sync::watch::Sender<bool>,
}

impl HeldLrclib {
    async fn start(body: String) -> HeldLrclib {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let task_asked = asked.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (asked, mut released, body) =
                    (task_asked.clone(), released.clone(), body.clone());
                tokio::spawn(async move {
                    // A GET: its head is the whole request.
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 4096];
                    while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                        match stream.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(read) => request.extend_from_slice(&buffer[..read]),
                        }
                    }
                    let lookup = request.starts_with(b"GET /api/get");
                    asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if released.wait_for(|released| *released).await.is_err() {
                        return;
                    }
                    let (status, body) = if lookup {
                        ("200 OK", body.as_str())
                    } else {
                        (
                            "404 Not Found",
                            r#"{"code":404,"name":"TrackNotFound","message":"Failed to find specified track"}"#,
                        )
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        HeldLrclib {
            url,
            asked,
            release,
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn release(&self) {
        self.release.send_replace(true);
    }
}

both_backends!(
    not_found_turns_found_after_seven_days_or_on_refetch,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        let (app, token, ids) = set_up(
            backend,
            &server,
            &[
                ("Polar Drift", "Aurora Lane", "Northern Lights", 142),
                ("Polar Drift", "Aurora Lane", "Northern Lights", 142),
            ],
        )
        .await;
        let (aged, refetched) = (&ids[0], &ids[1]);

        // LRCLIB has nothing yet: both not_found.
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
        for id in [aged, refetched] {
            assert_eq!(lyrics(&app, &token, id).await["status"], "not_found");
        }
        assert_eq!(requests(&server).await, 6);

        // Now it has them.
        server.reset().await;
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(answer(200, "get_synced.json"))
            .mount(&server)
            .await;

        // A minute short of seven days: still the cached not_found.
        age(&app, aged, Duration::from_secs(7 * 24 * 3600 - 60)).await;
        let cached = lyrics(&app, &token, aged).await;
        assert_eq!(cached["status"], "not_found");
        assert_eq!(requests(&server).await, 0);
        // A minute past: asked again, found.
        age(&app, aged, Duration::from_secs(120)).await;
        let found = lyrics(&app, &token, aged).await;
        assert_eq!(found["status"], "found", "{found}");
        assert_eq!(found["source"], "lrclib");
        assert_eq!(found["lines"].as_array().unwrap().len(), 20);
        assert!(found["refetch_after"].is_null());
        assert!(chrono_micros(&found["fetched_at"]) > chrono_micros(&cached["fetched_at"]));
        assert_eq!(requests(&server).await, 1);
        // And it stays found.
        assert_eq!(lyrics(&app, &token, aged).await["status"], "found");
        assert_eq!(requests(&server).await, 1);

        // not_found → refetch → found, without waiting for the seven days.
        assert_eq!(lyrics(&app, &token, refetched).await["status"], "not_found");
        assert_eq!(requests(&server).await, 1);
        let now_found = refetch(&app, &token, refetched).await;
        assert_eq!(now_found["status"], "found", "{now_found}");
        assert_eq!(requests(&server).await, 2);
        assert_eq!(lyrics(&app, &token, refetched).await["status"], "found");
        assert_eq!(requests(&server).await, 2);
    }
);

both_backends!(
    a_refused_signature_and_a_missing_artist_are_searched,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        let (app, token, ids) = set_up(
            backend,
            &server,
            &[
                ("Polar Drift", "Aurora Lane", "Northern Lights", 142),
                ("Polar Drift", "", "", 142),
            ],
        )
        .await;
        musiclib_core::testing::execute(
            &app.library,
            "UPDATE tracks SET artist_name = NULL, album_artist_name = NULL, album_title = NULL WHERE id = $1",
            &[&ids[1]],
        )
        .await;
        // LRCLIB refuses the signature (400 ValidationError); the search by fields has it.
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(answer(400, "get_validation_error.json"))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/search"))
            .and(query_param("track_name", "Polar Drift"))
            .and(query_param("artist_name", "Aurora Lane"))
            .respond_with(answer(200, "search_results.json"))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/search"))
            .and(query_param("q", "Polar Drift"))
            .respond_with(answer(200, "search_results.json"))
            .mount(&server)
            .await;

        let found = lyrics(&app, &token, &ids[0]).await;
        assert_eq!(found["status"], "found", "{found}");
        assert_eq!(
            found["lines"].as_array().unwrap().len(),
            20,
            "the album version"
        );
        let asked = server.received_requests().await.unwrap();
        let paths: Vec<&str> = asked.iter().map(|request| request.url.path()).collect();
        assert_eq!(paths, ["/api/get", "/api/search"]);

        // No artist: no /api/get (it needs one), a search by the title alone.
        let found = lyrics(&app, &token, &ids[1]).await;
        assert_eq!(found["status"], "found", "{found}");
        assert_eq!(found["lines"].as_array().unwrap().len(), 20);
        let asked = server.received_requests().await.unwrap();
        assert_eq!(asked.len(), 3);
        let last = &asked[2];
        assert_eq!(last.url.path(), "/api/search");
        let params: Vec<(String, String)> = last.url.query_pairs().into_owned().collect();
        assert_eq!(params, [("q".to_string(), "Polar Drift".to_string())]);
    }
);

both_backends!(
    a_placeholder_is_answered_by_its_metadata,
    |backend: Backend| async move {
        let lrclib = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .and(query_param("track_name", "Polar Drift"))
            .and(query_param("artist_name", "Aurora Lane"))
            .and(query_param("album_name", "Northern Lights"))
            .and(query_param("duration", "142"))
            .respond_with(answer(200, "get_synced.json"))
            .expect(1)
            .mount(&lrclib)
            .await;
        let audio = musiclib_core::testing::wav_tone(1);
        let subsonic =
            musiclib_core::testing::subsonic_server(&[("s1", "Polar Drift", None)], &audio).await;
        let (lrclib_url, subsonic_url) = (lrclib.uri(), subsonic.uri());
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.enrichment.lrclib_base_url = lrclib_url;
                config.enrichment.coverart_enabled = false;
                config.remote.subsonic = Some(musiclib_core::config::SubsonicSourceConfig {
                    url: subsonic_url,
                    username: "friend".into(),
                    password: "app-password".into(),
                });
            })
            .build()
            .await;
        let app = App::new(library).await;
        let token = app.register("reader").await;
        let (status, saved) = app
            .json(
                "POST",
                "/api/v1/tracks/remote",
                Some(&token),
                json!({"source": "subsonic", "source_id": "s1"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{saved}");
        assert_eq!(saved["availability"], "placeholder");
        let id = saved["id"].as_str().unwrap();

        let found = lyrics(&app, &token, id).await;
        assert_eq!(found["status"], "found", "{found}");
        assert_eq!(found["source"], "lrclib");
        assert_eq!(found["synced"], true);
        assert_eq!(found["lines"].as_array().unwrap().len(), 20);
        assert_eq!(lyrics(&app, &token, id).await, found);
        lrclib.verify().await;
    }
);

/// An RFC 3339 time as µs since the epoch.
fn chrono_micros(value: &Value) -> i64 {
    musiclib_core::Timestamp::parse_rfc3339(value.as_str().unwrap())
        .unwrap()
        .as_micros()
}
