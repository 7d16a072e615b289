//! End to end: the real `musiclib serve` on a loopback port, as a browser or an attacker meets
//! it. Failed sign-ins are throttled by the connection's address (which only the served
//! application knows), on the login and on the Subsonic interface; every answer, the
//! Subsonic interface's included, carries the security headers; CORS follows
//! `CORS_ALLOWED_ORIGINS`.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{free_port, Process};

async fn serve(data: &std::path::Path, port: u16) -> Process {
    let env: Vec<(String, String)> = [
        ("DATA_DIR", data.display().to_string()),
        ("BIND_ADDRESS", format!("127.0.0.1:{port}")),
        ("SOUND_ANALYSIS", "false".into()),
        ("LOUDNESS_ANALYSIS", "false".into()),
        ("LOGIN_ACCOUNT_FAILURE_BURST", "100".into()),
        ("LOGIN_ADDRESS_FAILURE_BURST", "3".into()),
        ("LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS", "60".into()),
        ("CORS_ALLOWED_ORIGINS", "https://player.example".into()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    let server = support::spawn(
        "serve",
        &["serve", "--no-worker"],
        &env,
        std::path::Path::new("/dev/null"),
    );
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(response) = client
            .get(format!("http://127.0.0.1:{port}/health"))
            .send()
            .await
        {
            if response.status().is_success() {
                return server;
            }
        }
        assert!(Instant::now() < deadline, "musiclib did not become healthy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn assert_security_headers(what: &str, response: &reqwest::Response) {
    let headers = response.headers();
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        (
            "content-security-policy",
            "default-src 'none'; frame-ancestors 'none'",
        ),
        // CORS is on: players of the allowed origin load media with <audio> and <img>.
        ("cross-origin-resource-policy", "cross-origin"),
    ] {
        assert_eq!(
            headers.get(name).and_then(|value| value.to_str().ok()),
            Some(value),
            "{what}: {name} in {headers:?}"
        );
    }
}

fn retry_after(response: &reqwest::Response) -> u64 {
    response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn the_served_app_throttles_by_address_and_protects_browsers() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = serve(data.path(), port).await;
    let client = reqwest::Client::new();

    let registered = client
        .post(format!("{base}/api/v1/auth/register"))
        .json(&json!({"username": "alice", "password": "long enough"}))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), 201);
    assert_security_headers("a JSON response", &registered);
    let token = registered.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string();

    // The registration (it costs a password hash) and two names guessed from this address
    // spend its budget of three (no account is over its own).
    for name in ["root", "admin"] {
        let failed = client
            .post(format!("{base}/api/v1/auth/login"))
            .json(&json!({"username": name, "password": "password123"}))
            .send()
            .await
            .unwrap();
        assert_eq!(failed.status(), 401);
        assert_security_headers("an error", &failed);
    }
    // Any name from this address is refused unchecked now…
    let refused = client
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": "guest", "password": "password123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert!((1..=60).contains(&retry_after(&refused)));
    assert_security_headers("a 429", &refused);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited", "{body}");
    // …but alice, who proved herself here (she registered), is not locked out by them.
    let signed_in = client
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": "alice", "password": "long enough"}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);

    // The Subsonic interface: its own budget, the same address.
    let app_password = client
        .get(format!("{base}/api/v1/users/me/legacy-password"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["password"]
        .as_str()
        .unwrap()
        .to_string();
    let ping = |query: String| {
        let client = client.clone();
        let base = base.clone();
        async move {
            client
                .get(format!("{base}/rest/ping?{query}&v=1.16.1&c=tests&f=json"))
                .header("origin", "https://player.example")
                .send()
                .await
                .unwrap()
        }
    };
    let ok = ping(format!("u=alice&p={app_password}")).await;
    assert_eq!(ok.status(), 200);
    assert_security_headers("a Subsonic response", &ok);
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        "https://player.example"
    );
    let envelope: Value = ok.json().await.unwrap();
    assert_eq!(envelope["subsonic-response"]["status"], "ok", "{envelope}");
    for guess in ["one", "two", "three"] {
        let failed: Value = ping(format!("apiKey={guess}")).await.json().await.unwrap();
        assert_eq!(failed["subsonic-response"]["error"]["code"], 44, "{failed}");
    }
    let refused = ping("apiKey=four".into()).await;
    assert_eq!(refused.status(), 200);
    assert!((1..=60).contains(&retry_after(&refused)));
    assert_security_headers("a refused Subsonic request", &refused);
    let envelope: Value = refused.json().await.unwrap();
    assert_eq!(envelope["subsonic-response"]["status"], "failed");
    assert_eq!(envelope["subsonic-response"]["error"]["code"], 0);
    // Alice's app proved itself from this address before the guesses: it is not locked out.
    let still: Value = ping(format!("u=alice&p={app_password}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(still["subsonic-response"]["status"], "ok", "{still}");

    // CORS: a preflight from the allowed origin is answered; another origin gets nothing.
    let preflight = |origin: &'static str| {
        client
            .request(reqwest::Method::OPTIONS, format!("{base}/api/v1/tracks"))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
    };
    let allowed = preflight("https://player.example").await.unwrap();
    assert!(allowed.status().is_success());
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://player.example"
    );
    assert_security_headers("a preflight", &allowed);
    let other = preflight("https://elsewhere.example").await.unwrap();
    assert!(
        !other
            .headers()
            .keys()
            .any(|name| name.as_str().starts_with("access-control-")),
        "{:?}",
        other.headers()
    );
}
