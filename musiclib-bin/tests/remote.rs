//! Remote sources with the real binary:
//!
//! - the `subsonic` source, real binary to real binary: a friend's musiclib on one loopback
//!   port, ours searching, saving, materializing and downloading from it on another (the
//!   exact bytes arrive), the friend going away (search degrades, downloads retry and finish
//!   when it is back);
//! - the `remote` source with the real yt-dlp: the server killed with SIGKILL in the middle of
//!   a download leaves no half-written file, and the job finishes after a restart.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `musiclib serve` on the embedded default in `data`, on `port`, with `env`.
fn serve(data: &Path, port: u16, env: &[(&str, String)]) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_musiclib"));
    command
        .arg("serve")
        .env("DATA_DIR", data)
        .env("BIND_ADDRESS", format!("127.0.0.1:{port}"))
        .env("COVERART_ENABLED", "false")
        .env("LRCLIB_BASE_URL", "http://127.0.0.1:9")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    Process(command.spawn().expect("start musiclib"))
}

async fn wait_healthy(client: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(response) = client.get(format!("{base}/health")).send().await {
            if response.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{base} did not become healthy");
}

async fn register(client: &reqwest::Client, base: &str, name: &str) -> String {
    let answer: Value = client
        .post(format!("{base}/api/v1/auth/register"))
        .json(&json!({"username": name, "password": "long enough"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"].as_str().expect("token").to_string()
}

async fn get(client: &reqwest::Client, url: &str, token: &str) -> (u16, Value) {
    let response = client.get(url).bearer_auth(token).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn post(client: &reqwest::Client, url: &str, token: &str, body: Value) -> (u16, Value) {
    let response = client
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn upload(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    relative: &str,
) -> (String, Vec<u8>) {
    let bytes = std::fs::read(musiclib_core::testing::corpus().join(relative)).unwrap();
    let name = Path::new(relative)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes.clone()).file_name(name),
    );
    let uploaded: Value = client
        .post(format!("{base}/api/v1/tracks/upload"))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        uploaded["id"].as_str().expect("uploaded").to_string(),
        bytes,
    )
}

async fn stream_sha256(client: &reqwest::Client, api: &str, token: &str, id: &str) -> String {
    let response = client
        .get(format!("{api}/stream/{id}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    hex::encode(Sha256::digest(response.bytes().await.unwrap()))
}

/// Polls `url` until `done` says so (or fails after `limit`).
async fn wait_for(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let (_, body) = get(client, url, token).await;
        if done(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{url} never got there: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
async fn another_musiclib_is_a_subsonic_source() {
    let client = reqwest::Client::new();

    // The friend's server, with three tracks and a user's app password.
    let friend_data = tempfile::tempdir().unwrap();
    let friend_port = free_port();
    let friend_base = format!("http://127.0.0.1:{friend_port}");
    let friend = serve(friend_data.path(), friend_port, &[]);
    wait_healthy(&client, &friend_base).await;
    let friend_token = register(&client, &friend_base, "friend").await;
    let (polar, polar_bytes) = upload(
        &client,
        &friend_base,
        &friend_token,
        "library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac",
    )
    .await;
    let (first_light, first_light_bytes) = upload(
        &client,
        &friend_base,
        &friend_token,
        "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
    )
    .await;
    let (late, late_bytes) = upload(
        &client,
        &friend_base,
        &friend_token,
        "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    )
    .await;
    let (_, legacy) = get(
        &client,
        &format!("{friend_base}/api/v1/users/me/legacy-password"),
        &friend_token,
    )
    .await;
    let app_password = legacy["password"].as_str().unwrap().to_string();

    // Ours, searching it; and one more pointed at a wrong password.
    let source = |password: &str| {
        vec![
            ("SUBSONIC_SOURCE_URL", friend_base.clone()),
            ("SUBSONIC_SOURCE_USERNAME", "friend".to_string()),
            ("SUBSONIC_SOURCE_PASSWORD", password.to_string()),
            ("DOWNLOAD_RETRY_BASE_SECONDS", "1".to_string()),
            ("DOWNLOAD_RETRY_MAX_SECONDS", "2".to_string()),
            ("DOWNLOAD_MAX_ATTEMPTS", "20".to_string()),
        ]
    };
    let ours_data = tempfile::tempdir().unwrap();
    let ours_port = free_port();
    let ours = format!("http://127.0.0.1:{ours_port}/api/v1");
    let _ours = serve(ours_data.path(), ours_port, &source(&app_password));
    let wrong_data = tempfile::tempdir().unwrap();
    let wrong_port = free_port();
    let wrong = format!("http://127.0.0.1:{wrong_port}/api/v1");
    let _wrong = serve(wrong_data.path(), wrong_port, &source("not-the-password"));
    // And one with the OpenSubsonic API key alone (musiclib's is the app password).
    let keyed_data = tempfile::tempdir().unwrap();
    let keyed_port = free_port();
    let keyed = format!("http://127.0.0.1:{keyed_port}/api/v1");
    let _keyed = serve(
        keyed_data.path(),
        keyed_port,
        &[
            ("SUBSONIC_SOURCE_URL", friend_base.clone()),
            ("SUBSONIC_SOURCE_API_KEY", app_password.clone()),
        ],
    );
    wait_healthy(&client, &format!("http://127.0.0.1:{ours_port}")).await;
    wait_healthy(&client, &format!("http://127.0.0.1:{wrong_port}")).await;
    wait_healthy(&client, &format!("http://127.0.0.1:{keyed_port}")).await;
    let token = register(&client, &format!("http://127.0.0.1:{ours_port}"), "me").await;
    let wrong_token = register(&client, &format!("http://127.0.0.1:{wrong_port}"), "me").await;
    let keyed_token = register(&client, &format!("http://127.0.0.1:{keyed_port}"), "me").await;

    // The registry: subsonic enabled and answering; yt-dlp's `remote` off.
    let (status, sources) = get(&client, &format!("{ours}/sources"), &token).await;
    assert_eq!(status, 200, "{sources}");
    let named = |sources: &Value, name: &str| {
        sources
            .as_array()
            .unwrap()
            .iter()
            .find(|source| source["name"] == name)
            .cloned()
            .unwrap()
    };
    let subsonic = named(&sources, "subsonic");
    assert_eq!(
        (subsonic["enabled"].clone(), subsonic["available"].clone()),
        (json!(true), json!(true)),
        "{subsonic}"
    );
    assert_eq!(named(&sources, "remote")["enabled"], false);

    // Every source at once, and the one by name: the friend's track, not in our library.
    let (status, all) = get(&client, &format!("{ours}/search?q=polar%20drift"), &token).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["sources"][0]["ok"], true, "{all}");
    let hit = &all["hits"][0];
    assert_eq!(hit["source"], "subsonic");
    assert_eq!(hit["source_id"], polar.as_str());
    assert_eq!(
        (
            hit["title"].clone(),
            hit["artist"].clone(),
            hit["album"].clone()
        ),
        (
            json!("Polar Drift"),
            json!("Aurora Lane"),
            json!("Northern Lights")
        )
    );
    assert_eq!(hit["in_library"], false);
    let (status, one) = get(
        &client,
        &format!("{ours}/sources/subsonic/search?q=polar&limit=5"),
        &token,
    )
    .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["hits"][0]["source_id"], polar.as_str());

    // Save, then materialize: the exact bytes arrive in the same track.
    let (status, saved) = post(
        &client,
        &format!("{ours}/tracks/remote"),
        &token,
        json!({"source": "subsonic", "source_id": polar}),
    )
    .await;
    assert_eq!(status, 201, "{saved}");
    assert_eq!(saved["availability"], "placeholder");
    let id = saved["id"].as_str().unwrap().to_string();
    let (status, again) = post(
        &client,
        &format!("{ours}/tracks/remote"),
        &token,
        json!({"source": "subsonic", "source_id": polar}),
    )
    .await;
    assert_eq!((status, again["id"].clone()), (200, json!(id)));
    let (status, queued) = post(
        &client,
        &format!("{ours}/tracks/{id}/materialize"),
        &token,
        json!(null),
    )
    .await;
    assert_eq!(status, 202, "{queued}");
    wait_for(
        &client,
        &format!("{ours}/tracks/{id}"),
        &token,
        Duration::from_secs(60),
        |track| track["availability"] == "available",
    )
    .await;
    assert_eq!(
        stream_sha256(&client, &ours, &token, &id).await,
        hex::encode(Sha256::digest(&polar_bytes))
    );
    let (_, all) = get(&client, &format!("{ours}/search?q=polar%20drift"), &token).await;
    assert_eq!(
        (
            all["hits"][0]["in_library"].clone(),
            all["hits"][0]["availability"].clone()
        ),
        (json!(true), json!("available"))
    );

    // A download: a full track with the exact bytes; asked again, the library has it.
    let (status, created) = post(
        &client,
        &format!("{ours}/downloads"),
        &token,
        json!({"source": "subsonic", "source_id": first_light}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let download = created["download"]["id"].as_str().unwrap().to_string();
    let done = wait_for(
        &client,
        &format!("{ours}/downloads/{download}"),
        &token,
        Duration::from_secs(60),
        |download| download["state"] == "completed",
    )
    .await;
    assert_eq!(done["percent"], 100.0);
    let track = done["track_id"].as_str().unwrap();
    assert_eq!(
        stream_sha256(&client, &ours, &token, track).await,
        hex::encode(Sha256::digest(&first_light_bytes))
    );
    let (status, had) = post(
        &client,
        &format!("{ours}/downloads"),
        &token,
        json!({"source": "subsonic", "source_id": first_light}),
    )
    .await;
    assert_eq!(status, 200, "{had}");
    assert_eq!(had["download"]["already_in_library"], true);

    // The API key works as the password does.
    let (status, found) = get(
        &client,
        &format!("{keyed}/search?q=polar%20drift"),
        &keyed_token,
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["sources"][0]["ok"], true, "{found}");
    assert_eq!(found["hits"][0]["source_id"], polar.as_str(), "{found}");

    // Refused credentials: the search still answers, saying why.
    let (status, refused) = get(&client, &format!("{wrong}/search?q=polar"), &wrong_token).await;
    assert_eq!(status, 200, "{refused}");
    assert_eq!(refused["sources"][0]["ok"], false);
    assert!(
        refused["sources"][0]["error"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{refused}"
    );
    let (status, _) = get(
        &client,
        &format!("{wrong}/sources/subsonic/search?q=polar"),
        &wrong_token,
    )
    .await;
    assert_eq!(status, 503);

    // The friend's server goes away: search degrades, a saved placeholder's download
    // retries, and finishes once the friend is back.
    let (status, _) = post(
        &client,
        &format!("{ours}/tracks/remote"),
        &token,
        json!({"source": "subsonic", "source_id": late}),
    )
    .await;
    assert_eq!(status, 201);
    drop(friend);
    let (status, down) = get(&client, &format!("{ours}/search?q=polar"), &token).await;
    assert_eq!(status, 200, "{down}");
    assert_eq!(down["sources"][0]["ok"], false);
    assert!(
        down["sources"][0]["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{down}"
    );
    let (_, sources) = get(&client, &format!("{ours}/sources"), &token).await;
    assert_eq!(named(&sources, "subsonic")["available"], false);
    let (status, unsaved) = post(
        &client,
        &format!("{ours}/tracks/remote"),
        &token,
        json!({"source": "subsonic", "source_id": "not-saved-before"}),
    )
    .await;
    assert_eq!(status, 503, "{unsaved}");
    let (status, created) = post(
        &client,
        &format!("{ours}/downloads"),
        &token,
        json!({"source": "subsonic", "source_id": late}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let download = created["download"]["id"].as_str().unwrap().to_string();
    let retrying = wait_for(
        &client,
        &format!("{ours}/downloads/{download}"),
        &token,
        Duration::from_secs(30),
        |download| download["state"] == "retrying",
    )
    .await;
    assert!(
        retrying["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{retrying}"
    );
    assert!(retrying["next_retry_at"].is_string());
    let _friend = serve(friend_data.path(), friend_port, &[]);
    let done = wait_for(
        &client,
        &format!("{ours}/downloads/{download}"),
        &token,
        Duration::from_secs(90),
        |download| download["state"] == "completed" || download["state"] == "failed",
    )
    .await;
    assert_eq!(done["state"], "completed", "{done}");
    assert!(done["attempts"].as_i64().unwrap() >= 2, "{done}");
    let track = done["track_id"].as_str().unwrap();
    assert_eq!(
        stream_sha256(&client, &ours, &token, track).await,
        hex::encode(Sha256::digest(&late_bytes))
    );
}

#[tokio::test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus and yt-dlp: run the README test command"
)]
async fn a_server_killed_mid_download_leaves_no_half_file_and_finishes_after_restart() {
    let client = reqwest::Client::new();
    let bytes = std::fs::read(
        musiclib_core::testing::corpus()
            .join("library/Los Señores del Ritmo/Canción de Mañana (2021)/04 - Adiós, Verano.mp3"),
    )
    .unwrap();
    let site = musiclib_core::testing::MediaServer::start().await;
    site.add("slow.mp3", bytes.clone(), "audio/mpeg");
    site.slow("slow.mp3", 256 * 1024);

    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let api = format!("{base}/api/v1");
    let env = vec![
        ("REMOTE_ENABLED", "true".to_string()),
        (
            "YTDLP_PATH",
            musiclib_core::testing::service_env("MUSICLIB_TEST_YTDLP"),
        ),
        ("REMOTE_WATCH_URL", format!("{}/media/{{id}}", site.base)),
        ("REMOTE_MIN_INTERVAL_MS", "0".to_string()),
        ("JOB_LEASE_SECONDS", "5".to_string()),
        ("DOWNLOAD_RETRY_BASE_SECONDS", "1".to_string()),
    ];
    let server = serve(data.path(), port, &env);
    wait_healthy(&client, &base).await;
    let token = register(&client, &base, "me").await;
    let (status, created) = post(
        &client,
        &format!("{api}/downloads"),
        &token,
        json!({"source": "remote", "source_id": "slow.mp3"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let download = created["download"]["id"].as_str().unwrap().to_string();
    let track = created["download"]["track_id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for(
        &client,
        &format!("{api}/downloads/{download}"),
        &token,
        Duration::from_secs(60),
        |download| {
            download["state"] == "downloading"
                && download["bytes_downloaded"].as_i64().unwrap_or(0) > 0
        },
    )
    .await;

    // SIGKILL: nothing runs on the way out.
    let mut server = server;
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    let staging = data.path().join("tmp").join(format!("fetch-{track}"));
    let audio_dir = data.path().join("media").join("audio");
    let stored = |dir: &Path| {
        std::fs::read_dir(dir)
            .map(|entries| entries.count())
            .unwrap_or(0)
    };
    assert_eq!(stored(&audio_dir), 0, "no blob while the download was cut");

    // After a restart the job's lease runs out, it is claimed again and finishes.
    let _server = serve(data.path(), port, &env);
    wait_healthy(&client, &base).await;
    let done = wait_for(
        &client,
        &format!("{api}/downloads/{download}"),
        &token,
        Duration::from_secs(120),
        |download| download["state"] == "completed" || download["state"] == "failed",
    )
    .await;
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["attempts"], 2, "{done}");
    assert_eq!(
        stream_sha256(&client, &api, &token, &track).await,
        hex::encode(Sha256::digest(&bytes))
    );
    assert_eq!(stored(&audio_dir), 1, "exactly the track's blob");
    assert!(!staging.exists(), "the cut attempt's staging is gone");
    let leftovers: Vec<_> = walk(data.path())
        .into_iter()
        .filter(|path| {
            let name = path.to_string_lossy();
            name.ends_with(".part") || name.ends_with(".ytdl") || name.contains("/fetch-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(walk(&path));
            }
            found.push(path);
        }
    }
    found
}
