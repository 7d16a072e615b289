//! End to end: the real `musiclib` binary on a loopback port, driven by an HTTP client.
//! Embedded: one `serve` process. Scale-out: two `serve --no-worker` replicas and a separate
//! `worker` process on PostgreSQL + S3.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

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

fn spawn(args: &[&str], env: &[(&str, String)]) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_musiclib"));
    command
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    Process(command.spawn().expect("start musiclib"))
}

async fn wait_healthy(client: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
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

/// Registers a user and uploads a corpus track through `upload_to`; returns the token and the
/// track's id.
async fn register_and_upload(client: &reqwest::Client, upload_to: &str) -> (String, String) {
    let token: Value = client
        .post(format!("{upload_to}/api/v1/auth/register"))
        .json(&json!({"username": "listener", "password": "long enough"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = token["access_token"].as_str().expect("token").to_string();
    let corpus = musiclib_core::testing::corpus();
    let bytes = std::fs::read(
        corpus.join("library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac"),
    )
    .unwrap();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name("02 - Polar Drift.flac"),
    );
    let response = client
        .post(format!("{upload_to}/api/v1/tracks/upload"))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let track: Value = response.json().await.unwrap();
    (token, track["id"].as_str().unwrap().to_string())
}

/// The track's metadata status as `read_from` answers it.
async fn status(client: &reqwest::Client, read_from: &str, token: &str, id: &str) -> Value {
    let track: Value = client
        .get(format!("{read_from}/api/v1/tracks/{id}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    track["metadata_status"].clone()
}

/// Waits until the track's enrichment job has run (the deadline only guards against a hang).
async fn wait_enriched(client: &reqwest::Client, read_from: &str, token: &str, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let status = status(client, read_from, token, id).await;
        if status == "enriched" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "enrichment did not run: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
async fn embedded_server_serves_and_runs_jobs() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = spawn(
        &["serve"],
        &[
            ("DATA_DIR", data.path().display().to_string()),
            ("BIND_ADDRESS", format!("127.0.0.1:{port}")),
        ],
    );
    let client = reqwest::Client::new();
    wait_healthy(&client, &base).await;
    let (token, id) = register_and_upload(&client, &base).await;
    wait_enriched(&client, &base, &token, &id).await;
}

#[tokio::test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
)]
async fn scale_out_replicas_and_a_separate_worker() {
    let database_url = musiclib_core::testing::create_postgres_database().await;
    let s3 = musiclib_core::testing::test_s3_config();
    let shared_env = |data: &std::path::Path, port: u16| {
        vec![
            ("DATA_DIR", data.display().to_string()),
            ("BIND_ADDRESS", format!("127.0.0.1:{port}")),
            ("DATABASE_URL", database_url.clone()),
            ("STORAGE_BACKEND", "s3".to_string()),
            ("S3_BUCKET", s3.bucket.clone()),
            ("S3_ENDPOINT", s3.endpoint.clone().unwrap()),
            ("S3_ACCESS_KEY_ID", "test".to_string()),
            ("S3_SECRET_ACCESS_KEY", "test".to_string()),
            ("S3_ALLOW_HTTP", "true".to_string()),
            ("S3_PREFIX", s3.prefix.clone().unwrap()),
            (
                "JWT_SECRET",
                "a shared secret for every replica".to_string(),
            ),
            (
                "LEGACY_SECRET_KEY",
                "a shared legacy key for every replica".to_string(),
            ),
        ]
    };
    let (data_a, data_b, data_w) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let (port_a, port_b) = (free_port(), free_port());
    let schema = musiclib_core::schema_version();
    let musiclib = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_musiclib"))
            .args(args)
            .envs(shared_env(data_a.path(), port_a))
            .output()
            .unwrap()
    };
    // `--check` on the empty database lists every migration, changes nothing, exits 1.
    let checked = musiclib(&["migrate", "--check"]);
    let listed = String::from_utf8_lossy(&checked.stdout);
    assert_eq!(checked.status.code(), Some(1), "{listed}");
    assert!(listed.contains("  0001 init\n"), "{listed}");
    assert!(
        listed.contains(&format!("reach schema {schema}")),
        "{listed}"
    );
    assert_eq!(musiclib(&["migrate", "--check"]).status.code(), Some(1));
    let migrated = musiclib(&["migrate"]);
    assert!(
        migrated.status.success(),
        "musiclib migrate failed: {}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let up_to_date = format!("database is up to date (schema {schema})");
    assert_eq!(String::from_utf8_lossy(&migrated.stdout).trim(), up_to_date);
    let checked = musiclib(&["migrate", "--check"]);
    assert!(checked.status.success());
    assert_eq!(String::from_utf8_lossy(&checked.stdout).trim(), up_to_date);
    let version = musiclib(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("musiclib {} (schema {schema})", env!("CARGO_PKG_VERSION"))
    );
    let _replica_a = spawn(
        &["serve", "--no-worker"],
        &shared_env(data_a.path(), port_a),
    );
    let _replica_b = spawn(
        &["serve", "--no-worker"],
        &shared_env(data_b.path(), port_b),
    );
    let client = reqwest::Client::new();
    let (base_a, base_b) = (
        format!("http://127.0.0.1:{port_a}"),
        format!("http://127.0.0.1:{port_b}"),
    );
    wait_healthy(&client, &base_a).await;
    wait_healthy(&client, &base_b).await;
    let health: Value = client
        .get(format!("{base_b}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["schema"], schema, "{health}");
    assert_eq!(
        (
            health["database_backend"].as_str(),
            health["storage_backend"].as_str()
        ),
        (Some("postgres"), Some("s3"))
    );
    // Replicas started with --no-worker run no job: the upload's enrichment waits.
    let (token, id) = register_and_upload(&client, &base_a).await;
    // Time for a replica to claim it, if one did (each polls the queue every second).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        status(&client, &base_b, &token, &id).await,
        "pending",
        "a replica ran a job"
    );
    // Not even started: no attempt, no worker ever held a job.
    let jobs = musiclib_core::testing::jobs_at(&database_url).await;
    assert!(!jobs.is_empty(), "the upload queued its enrichment");
    for job in &jobs {
        assert_eq!(
            (job.state.as_str(), job.attempts, job.worker_id.as_deref()),
            ("queued", 0, None),
            "a replica claimed a job: {job:?}"
        );
    }
    // The separate worker process runs it, and the other replica sees the outcome.
    let _worker = spawn(&["worker"], &shared_env(data_w.path(), free_port()));
    wait_enriched(&client, &base_b, &token, &id).await;
}
