//! What an internet-facing server owes its users: failed logins throttled per account and per
//! address (429 with `Retry-After`, the password not checked), CORS only for the configured
//! origins, and the security headers on every response.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request, StatusCode};
use musiclib_core::config::CorsOrigins;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::{json, Value};

use crate::api::App;

/// A login of `username`, from `address` when given (as `into_make_service_with_connect_info`
/// gives it).
fn login_request(username: &str, password: &str, address: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/api/v1/auth/login")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            json!({"username": username, "password": password}).to_string(),
        ))
        .unwrap();
    if let Some(address) = address {
        let address: SocketAddr = address.parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(address));
    }
    request
}

async fn login(
    app: &App,
    username: &str,
    password: &str,
    address: Option<&str>,
) -> (StatusCode, HeaderMap, Value) {
    let (status, headers, body) = app.raw(login_request(username, password, address)).await;
    (
        status,
        headers,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

fn retry_after(headers: &HeaderMap) -> u64 {
    headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in whole seconds")
}

both_backends!(
    failed_logins_are_throttled_per_account,
    |backend: Backend| async move {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 3;
                config.sign_in_throttle.account_interval = Duration::from_secs(60);
            })
            .build()
            .await;
        let app = App::new(library).await;
        app.register("alice").await;
        app.register("bob").await;

        // Signing in with the right password any number of times spends nothing.
        for _ in 0..5 {
            let (status, _, body) = login(&app, "alice", "long enough", None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        for _ in 0..3 {
            let (status, headers, body) = login(&app, "alice", "wrong password", None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
            assert!(!headers.contains_key(header::RETRY_AFTER));
        }
        // Over the budget: 429, with when to retry, for a wrong and for the right password alike.
        for password in ["wrong password", "long enough"] {
            let (status, headers, body) = login(&app, "ALICE", password, None).await;
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
            assert_eq!(body["error"]["code"], "rate_limited", "{body}");
            // At most the interval (the budget gives one failure back per interval), however
            // long the failures above took.
            let seconds = retry_after(&headers);
            assert!((1..=60).contains(&seconds), "Retry-After: {seconds}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(&format!("{seconds} seconds")), "{message}");
        }
        // Another account is not affected.
        let (status, _, body) = login(&app, "bob", "long enough", None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // Nor is anything but the login: tokens already issued keep working.
        let token = app.register("carol").await;
        let (status, _) = app.get("/api/v1/users/me", Some(&token)).await;
        assert_eq!(status, StatusCode::OK);
    }
);

both_backends!(
    failed_logins_are_throttled_per_address,
    |backend: Backend| async move {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.address_burst = 4;
                // No failure comes back during the test, however slowly it runs.
                config.sign_in_throttle.address_interval = Duration::from_secs(3600);
            })
            .build()
            .await;
        let app = App::new(library).await;
        app.register("alice").await;
        let attacker = Some("203.0.113.5:40000");
        // Four names guessed from one address (one failure each: no account is over its budget).
        for name in ["root", "admin", "alice", "guest"] {
            let (status, _, body) = login(&app, name, "password123", attacker).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        }
        // The address is refused for any name, even with the right password, from any port.
        let (status, headers, body) =
            login(&app, "alice", "long enough", Some("203.0.113.5:40001")).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        let seconds = retry_after(&headers);
        assert!((1..=3600).contains(&seconds), "Retry-After: {seconds}");
        // Alice, from her own address, signs in.
        let (status, _, body) =
            login(&app, "alice", "long enough", Some("198.51.100.7:5000")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // IPv6 addresses of one /64 share a budget.
        for index in 1..=4 {
            let address = format!("[2001:db8:7:7::{index}]:443");
            let (status, _, _) = login(&app, "alice", "wrong password", Some(&address)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        let (status, _, _) =
            login(&app, "alice", "long enough", Some("[2001:db8:7:7::99]:443")).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        let (status, _, _) =
            login(&app, "alice", "long enough", Some("[2001:db8:7:8::1]:443")).await;
        assert_eq!(status, StatusCode::OK);
    }
);

both_backends!(
    a_throttled_account_gets_its_tries_back,
    |backend: Backend| async move {
        // Refused: with a failure given back per hour, the refusal cannot lapse meanwhile.
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 2;
                config.sign_in_throttle.account_interval = Duration::from_secs(3600);
            })
            .build()
            .await;
        let app = App::new(library).await;
        app.register("alice").await;
        for _ in 0..2 {
            let (status, _, _) = login(&app, "alice", "wrong password", None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        let (status, headers, _) = login(&app, "alice", "long enough", None).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        let seconds = retry_after(&headers);
        assert!((1..=3600).contains(&seconds), "Retry-After: {seconds}");

        // Gets its tries back: with a failure given back every 400 ms, a refused account signs
        // in again once one has come back. (The refusal is caught however slowly the failures
        // go: spent again until a sign-in is refused.)
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 2;
                config.sign_in_throttle.account_interval = Duration::from_millis(400);
            })
            .build()
            .await;
        let app = App::new(library).await;
        app.register("alice").await;
        // (Hang guards: each loop ends as soon as the state it waits for comes.)
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let headers = loop {
            for _ in 0..2 {
                let (status, _, body) = login(&app, "alice", "wrong password", None).await;
                assert!(
                    status == StatusCode::UNAUTHORIZED || status == StatusCode::TOO_MANY_REQUESTS,
                    "{status} {body}"
                );
            }
            let (status, headers, body) = login(&app, "alice", "long enough", None).await;
            if status == StatusCode::TOO_MANY_REQUESTS {
                break headers;
            }
            assert_eq!(status, StatusCode::OK, "{body}");
            assert!(std::time::Instant::now() < deadline, "never refused");
        };
        // Less than a second: told 1, the smallest useful wait.
        assert_eq!(retry_after(&headers), 1);
        loop {
            let (status, headers, body) = login(&app, "alice", "long enough", None).await;
            if status == StatusCode::OK {
                break;
            }
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
            assert_eq!(retry_after(&headers), 1);
            assert!(
                std::time::Instant::now() < deadline,
                "the account never got its tries back"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
);

/// A request of `method` to `uri` with a JSON `body`, from `address`, with `forwarded` as its
/// `X-Forwarded-For` when given.
fn request_from(
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Value,
    address: &str,
    forwarded: Option<&str>,
) -> Request<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(forwarded) = forwarded {
        request = request.header("x-forwarded-for", forwarded);
    }
    let mut request = request.body(Body::from(body.to_string())).unwrap();
    let address: SocketAddr = address.parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(address));
    request
}

both_backends!(
    concurrent_guesses_past_the_burst_never_reach_the_password_check,
    |backend: Backend| async move {
        // A minute's interval: no try comes back while the guesses run, however slow the
        // machine.
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 10;
                config.sign_in_throttle.account_interval = Duration::from_secs(60);
            })
            .build()
            .await;
        let app = std::sync::Arc::new(App::new(library).await);
        app.register("alice").await;
        // Sixty guesses at once: each is counted before its password is checked, so only the
        // burst's ten are checked (401), and the fifty others are refused unchecked (429).
        let guesses = (0..60).map(|index| {
            let app = app.clone();
            tokio::spawn(async move {
                login(
                    &app,
                    "alice",
                    &format!("guess number {index}"),
                    Some("203.0.113.9:1000"),
                )
                .await
                .0
            })
        });
        let statuses: Vec<StatusCode> = futures::future::join_all(guesses)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let count =
            |wanted: StatusCode| statuses.iter().filter(|status| **status == wanted).count();
        assert_eq!(count(StatusCode::UNAUTHORIZED), 10, "{statuses:?}");
        assert_eq!(count(StatusCode::TOO_MANY_REQUESTS), 50, "{statuses:?}");
    }
);

both_backends!(
    a_client_that_proved_itself_is_not_locked_out_by_others,
    |backend: Backend| async move {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 2;
                config.sign_in_throttle.account_interval = Duration::from_secs(3600);
                config.sign_in_throttle.address_burst = 1000;
            })
            .build()
            .await;
        let app = App::new(library).await;
        app.register("alice").await;
        let home = "198.51.100.7:5000";
        // Alice signs in from home: her client there has proved itself.
        let (status, _, body) = login(&app, "alice", "long enough", Some(home)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // Someone guesses at her account from ten places: each place is refused after its own
        // two tries, and the account's budget over all places (ten times two) is spent.
        for host in 1..=10 {
            for _ in 0..2 {
                let address = format!("203.0.113.{host}:4000");
                let (status, _, _) = login(&app, "alice", "wrong guess", Some(&address)).await;
                assert_eq!(status, StatusCode::UNAUTHORIZED, "from {address}");
            }
            let address = format!("203.0.113.{host}:4000");
            let (status, _, _) = login(&app, "alice", "long enough", Some(&address)).await;
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "from {address}");
        }
        // A new place is refused even with the right password: the account is under attack.
        let (status, _, _) = login(&app, "alice", "long enough", Some("192.0.2.200:1")).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        // Alice at home is not locked out by any of it.
        let (status, _, body) = login(&app, "alice", "long enough", Some(home)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // Nor is a device that showed a valid token from its address.
        let token = body["access_token"].as_str().unwrap().to_string();
        let phone = "192.0.2.77:9000";
        let seen = request_from(
            "GET",
            "/api/v1/users/me",
            Some(&token),
            Value::Null,
            phone,
            None,
        );
        assert_eq!(app.raw(seen).await.0, StatusCode::OK);
        let (status, _, body) = login(&app, "alice", "long enough", Some(phone)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
);

both_backends!(
    registrations_and_password_changes_spend_sign_in_budgets,
    |backend: Backend| async move {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.account_burst = 3;
                config.sign_in_throttle.account_interval = Duration::from_secs(3600);
                config.sign_in_throttle.address_burst = 4;
                config.sign_in_throttle.address_interval = Duration::from_secs(3600);
            })
            .build()
            .await;
        let app = App::new(library).await;
        // Each registration costs a password hash: four from one address, then 429.
        let crowd = "203.0.113.40:1";
        for index in 0..4 {
            let request = request_from(
                "POST",
                "/api/v1/auth/register",
                None,
                json!({"username": format!("bot{index}"), "password": "long enough"}),
                crowd,
                None,
            );
            assert_eq!(app.raw(request).await.0, StatusCode::CREATED);
        }
        let request = request_from(
            "POST",
            "/api/v1/auth/register",
            None,
            json!({"username": "bot9", "password": "long enough"}),
            crowd,
            None,
        );
        let (status, headers, _) = app.raw(request).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert!(headers.contains_key(header::RETRY_AFTER));
        // A password change checks the current password as a sign-in does: three wrong
        // ones, then refused unchecked, the right one too.
        let token = app.register("alice").await;
        let home = "198.51.100.7:5000";
        let change = |current: &str| {
            request_from(
                "POST",
                "/api/v1/users/me/password",
                Some(&token),
                json!({"current_password": current, "new_password": "a new password"}),
                home,
                None,
            )
        };
        for _ in 0..3 {
            assert_eq!(
                app.raw(change("not my password")).await.0,
                StatusCode::FORBIDDEN
            );
        }
        let (status, headers, body) = app.raw(change("long enough")).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body:?}");
        assert!(headers.contains_key(header::RETRY_AFTER));
    }
);

both_backends!(
    behind_a_trusted_proxy_clients_are_told_apart,
    |backend: Backend| async move {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.sign_in_throttle.address_burst = 2;
                config.sign_in_throttle.address_interval = Duration::from_secs(3600);
                config.trusted_proxies =
                    musiclib_core::config::TrustedProxies::parse("127.0.0.1").unwrap();
            })
            .build()
            .await;
        let app = App::new(library).await;
        app.register("alice").await;
        let proxy = "127.0.0.1:40000";
        let through_proxy = |name: &str, password: &str, client: &str| {
            request_from(
                "POST",
                "/api/v1/auth/login",
                None,
                json!({"username": name, "password": password}),
                proxy,
                Some(client),
            )
        };
        // A guesser behind the proxy spends its own address's budget…
        for name in ["root", "admin"] {
            let request = through_proxy(name, "password123", "203.0.113.66");
            assert_eq!(app.raw(request).await.0, StatusCode::UNAUTHORIZED);
        }
        let request = through_proxy("guest", "password123", "203.0.113.66");
        assert_eq!(app.raw(request).await.0, StatusCode::TOO_MANY_REQUESTS);
        // …not the budget of everyone else behind the same proxy.
        let request = through_proxy("alice", "long enough", "198.51.100.7");
        let (status, _, body) = app.raw(request).await;
        assert_eq!(status, StatusCode::OK, "{body:?}");
        // A client that is not a trusted proxy cannot name itself another address.
        for _ in 0..2 {
            let request = request_from(
                "POST",
                "/api/v1/auth/login",
                None,
                json!({"username": "root", "password": "password123"}),
                "203.0.113.77:1",
                Some("198.51.100.1"),
            );
            assert_eq!(app.raw(request).await.0, StatusCode::UNAUTHORIZED);
        }
        let request = request_from(
            "POST",
            "/api/v1/auth/login",
            None,
            json!({"username": "root", "password": "password123"}),
            "203.0.113.77:1",
            Some("198.51.100.2"),
        );
        assert_eq!(app.raw(request).await.0, StatusCode::TOO_MANY_REQUESTS);
    }
);

#[test]
fn the_document_lists_the_429_and_its_header() {
    let document = serde_json::to_value(musiclib_http::openapi()).unwrap();
    let refused = &document["paths"]["/auth/login"]["post"]["responses"]["429"];
    assert!(refused["description"].is_string(), "{refused}");
    assert!(refused["headers"]["Retry-After"].is_object(), "{refused}");
    assert!(
        refused["content"]["application/json"].is_object(),
        "{refused}"
    );
}

fn cors_request(
    method: &str,
    uri: &str,
    origin: Option<&str>,
    extra: &[(&str, &str)],
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(origin) = origin {
        builder = builder.header(header::ORIGIN, origin);
    }
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::empty()).unwrap()
}

fn cors_headers(headers: &HeaderMap) -> Vec<String> {
    headers
        .keys()
        .map(|name| name.as_str().to_string())
        .filter(|name| name.starts_with("access-control-"))
        .collect()
}

const PREFLIGHT: &[(&str, &str)] = &[
    ("access-control-request-method", "GET"),
    ("access-control-request-headers", "authorization, range"),
];

both_backends!(
    cors_answers_the_allowed_origins_only,
    |backend: Backend| async move {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.cors_allowed_origins = CorsOrigins::parse("https://player.example").unwrap();
            })
            .build()
            .await;
        let app = App::new(library).await;
        let token = app.register("alice").await;

        // A preflight from the allowed origin is answered with what it may send.
        let (status, headers, _) = app
            .raw(cors_request(
                "OPTIONS",
                "/api/v1/tracks",
                Some("https://player.example"),
                PREFLIGHT,
            ))
            .await;
        assert!(status.is_success(), "{status}");
        assert_eq!(
            headers["access-control-allow-origin"],
            "https://player.example"
        );
        let methods = headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .to_ascii_uppercase();
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            assert!(methods.contains(method), "{methods}");
        }
        let allowed = headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .to_ascii_lowercase();
        for name in ["authorization", "content-type", "range", "if-none-match"] {
            assert!(allowed.contains(name), "{allowed}");
        }
        assert!(headers.contains_key("access-control-max-age"));
        assert!(!headers.contains_key("access-control-allow-credentials"));

        // The request itself: allowed, and the headers a player reads are exposed.
        let mut request = cors_request(
            "GET",
            "/api/v1/users/me",
            Some("https://player.example"),
            &[],
        );
        request.headers_mut().insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        let (status, headers, _) = app.raw(request).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            headers["access-control-allow-origin"],
            "https://player.example"
        );
        let exposed = headers["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .to_ascii_lowercase();
        for name in [
            "content-range",
            "accept-ranges",
            "content-length",
            "etag",
            "retry-after",
            "x-request-id",
        ] {
            assert!(exposed.contains(name), "{exposed}");
        }
        // Errors too, so a page can read why it failed.
        let (status, headers, _) = app
            .raw(cors_request(
                "GET",
                "/api/v1/users/me",
                Some("https://player.example"),
                &[],
            ))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(
            headers["access-control-allow-origin"],
            "https://player.example"
        );
        // Media elements of the player's page may load streams and covers.
        assert_eq!(headers["cross-origin-resource-policy"], "cross-origin");

        // Another origin gets no CORS header at all, preflight or not; nor does a request
        // without an origin (an app, not a page).
        for (method, origin, extra) in [
            ("OPTIONS", Some("https://evil.example"), PREFLIGHT),
            ("GET", Some("https://evil.example"), &[][..]),
            ("GET", Some("https://player.example.evil.example"), &[][..]),
            ("GET", None, &[][..]),
        ] {
            let (_, headers, _) = app
                .raw(cors_request(method, "/api/v1/tracks", origin, extra))
                .await;
            assert_eq!(
                cors_headers(&headers),
                Vec::<String>::new(),
                "{method} {origin:?}"
            );
        }
    }
);

both_backends!(cors_is_off_by_default, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    for (method, extra) in [("OPTIONS", PREFLIGHT), ("GET", &[][..])] {
        let (_, headers, _) = app
            .raw(cors_request(
                method,
                "/api/v1/tracks",
                Some("https://player.example"),
                extra,
            ))
            .await;
        assert_eq!(cors_headers(&headers), Vec::<String>::new(), "{method}");
        assert!(!headers.contains_key(header::VARY), "{method}: {headers:?}");
        assert_eq!(headers["cross-origin-resource-policy"], "same-origin");
    }
});

fn assert_security_headers(what: &str, headers: &HeaderMap) {
    let expected = [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        (
            "content-security-policy",
            "default-src 'none'; frame-ancestors 'none'",
        ),
        ("cross-origin-resource-policy", "same-origin"),
    ];
    for (name, value) in expected {
        assert_eq!(
            headers.get(name).and_then(|value| value.to_str().ok()),
            Some(value),
            "{what}: {name} in {headers:?}"
        );
    }
}

both_backends!(
    every_response_carries_the_security_headers,
    |backend: Backend| async move {
        let app = App::new(TestLibrary::new(backend).await).await;
        let token = app.register("alice").await;
        let get = |uri: &str, token: Option<&str>| {
            let mut request = Request::get(uri);
            if let Some(token) = token {
                request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
            }
            request.body(Body::empty()).unwrap()
        };

        let (status, headers, _) = app.raw(get("/api/v1/users/me", Some(&token))).await;
        assert_eq!(status, StatusCode::OK);
        assert_security_headers("a JSON response", &headers);
        let (status, headers, _) = app.raw(get("/api/v1/users/me", None)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_security_headers("an error", &headers);
        let (status, headers, _) = app.raw(get("/no/such/route", None)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_security_headers("an unknown route", &headers);
        let (status, headers, _) = app.raw(get("/health", None)).await;
        assert!(status.is_success() || status == StatusCode::SERVICE_UNAVAILABLE);
        assert_security_headers("the health check", &headers);
        let (status, headers, _) = app
            .raw(login_request("alice", "wrong password", None))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_security_headers("a failed login", &headers);

        let (status, track) = app
            .upload(&token, "tone.wav", &musiclib_core::testing::wav_tone(1))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{track}");
        let stream = format!("/api/v1/stream/{}", track["id"].as_str().unwrap());
        let (status, headers, body) = app.raw(get(&stream, Some(&token))).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!body.is_empty());
        assert_security_headers("a stream", &headers);
        let mut ranged = get(&stream, Some(&token));
        ranged
            .headers_mut()
            .insert(header::RANGE, "bytes=0-9".parse().unwrap());
        let (status, headers, _) = app.raw(ranged).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_security_headers("a ranged stream", &headers);
    }
);
