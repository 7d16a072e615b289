//! `METRICS_BIND_ADDRESS` with the real binary: `serve` answers `/metrics` without a token on
//! that address (and nothing else there), while the main address still asks for an admin;
//! a `worker` process serves its metrics the same way.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{free_port, Process};

/// Starts the binary with `args` and `env`, its output discarded.
fn spawn(args: &[&str], env: &[(&str, String)]) -> Process {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(key, value)| (key.to_string(), value.clone()))
        .collect();
    support::spawn(args[0], args, &env, std::path::Path::new("/dev/null"))
}

/// Waits until `url` answers 200.
async fn wait_ok(client: &reqwest::Client, url: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(response) = client.get(url).send().await {
            if response.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} did not answer");
}

/// The metrics text at `url`, checking its status and type.
async fn metrics(client: &reqwest::Client, url: &str, token: Option<&str>) -> String {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    response.text().await.unwrap()
}

async fn sign_in(client: &reqwest::Client, base: &str, username: &str, password: &str) -> String {
    let answer: Value = client
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {answer}"))
        .to_string()
}

#[tokio::test]
async fn metrics_are_open_on_their_own_address_only() {
    let data = tempfile::tempdir().unwrap();
    let (port, metrics_port) = (free_port(), free_port());
    let base = format!("http://127.0.0.1:{port}");
    let private = format!("http://127.0.0.1:{metrics_port}");
    let _server = spawn(
        &["serve"],
        &[
            ("DATA_DIR", data.path().display().to_string()),
            ("BIND_ADDRESS", format!("127.0.0.1:{port}")),
            ("METRICS_BIND_ADDRESS", format!("127.0.0.1:{metrics_port}")),
            ("ADMIN_USERNAME", "root".into()),
            ("ADMIN_PASSWORD", "root password".into()),
        ],
    );
    let client = reqwest::Client::new();
    wait_ok(&client, &format!("{base}/health")).await;

    // The main address: admins only.
    let response = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let registered: Value = client
        .post(format!("{base}/api/v1/auth/register"))
        .json(&json!({"username": "listener", "password": "long enough"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let user = registered["access_token"].as_str().unwrap();
    let response = client
        .get(format!("{base}/metrics"))
        .bearer_auth(user)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let admin = sign_in(&client, &base, "root", "root password").await;
    metrics(&client, &format!("{base}/metrics"), Some(&admin)).await;

    // A Subsonic call is counted by its method, `.view` or not.
    let ping = client
        .get(format!(
            "{base}/rest/ping.view?u=listener&p=wrong&v=1.16.1&c=test&f=json"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status(), 200);

    // The private address: no token needed, and nothing but /metrics.
    let text = metrics(&client, &format!("{private}/metrics"), None).await;
    assert!(
        text.contains(r#"route="/rest/ping",status="200""#),
        "{text}"
    );
    assert!(text.contains(r#"route="/metrics",status="403""#), "{text}");
    assert!(text.contains(r#"musiclib_jobs{kind="enrich_task",state="queued"}"#));
    for path in ["/health", "/api/v1/tracks", "/api/v1/metrics"] {
        let response = client.get(format!("{private}{path}")).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }

    // A worker process serves its own.
    let worker_data = tempfile::tempdir().unwrap();
    let worker_port = free_port();
    let _worker = spawn(
        &["worker"],
        &[
            ("DATA_DIR", worker_data.path().display().to_string()),
            ("METRICS_BIND_ADDRESS", format!("127.0.0.1:{worker_port}")),
        ],
    );
    let worker = format!("http://127.0.0.1:{worker_port}/metrics");
    wait_ok(&client, &worker).await;
    let text = metrics(&client, &worker, None).await;
    assert!(
        text.contains(r#"musiclib_job_queue_depth{kind="enrich_task"} 0"#),
        "{text}"
    );
}

#[test]
fn a_bad_metrics_address_is_refused_by_name() {
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_musiclib"))
        .arg("config")
        .env("DATA_DIR", data.path())
        .env("METRICS_BIND_ADDRESS", "9090")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("METRICS_BIND_ADDRESS"), "{stderr}");
    let output = Command::new(env!("CARGO_BIN_EXE_musiclib"))
        .arg("config")
        .env("DATA_DIR", data.path())
        .env("METRICS_BIND_ADDRESS", "127.0.0.1:9090")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout
            .lines()
            .any(|line| line == "METRICS_BIND_ADDRESS=127.0.0.1:9090"),
        "{stdout}"
    );
}
