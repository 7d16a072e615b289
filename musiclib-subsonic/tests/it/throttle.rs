//! Failed authentications are throttled per account and per client address: over budget, a
//! request gets the protocol's failed envelope (HTTP 200, code 0, saying when to retry) and a
//! `Retry-After` header, whatever its credentials, until the budget returns.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use md5::{Digest, Md5};
use musiclib_core::auth::Caller;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::Value;
use tower::ServiceExt;

use crate::both_backends;

struct App {
    router: axum::Router,
    library: TestLibrary,
}

impl App {
    async fn new(
        backend: Backend,
        change: impl FnOnce(&mut musiclib_core::Config) + Send + 'static,
    ) -> App {
        let library = TestLibrary::builder(backend).config(change).build().await;
        App {
            router: musiclib_subsonic::router(library.library.clone()),
            library,
        }
    }

    /// Creates `name` and answers their app password.
    async fn user(&self, name: &str) -> String {
        let user = self
            .library
            .accounts()
            .create_user(name, "login password", false)
            .await
            .unwrap();
        self.library
            .accounts()
            .legacy_password(&Caller { user })
            .await
            .unwrap()
    }

    /// `/rest/ping` with `auth`, from `address` when given: HTTP status, headers, body.
    async fn ping(
        &self,
        auth: &str,
        format: &str,
        address: Option<&str>,
    ) -> (StatusCode, HeaderMap, String) {
        let mut request = Request::get(format!("/rest/ping?{auth}&v=1.16.1&c=tests&f={format}"))
            .body(Body::empty())
            .unwrap();
        if let Some(address) = address {
            let address: SocketAddr = address.parse().unwrap();
            request.extensions_mut().insert(ConnectInfo(address));
        }
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, headers, String::from_utf8(body.to_vec()).unwrap())
    }

    /// The JSON envelope of a ping, and its `Retry-After` if any.
    async fn ping_json(&self, auth: &str, address: Option<&str>) -> (Value, Option<u64>) {
        let (status, headers, body) = self.ping(auth, "json", address).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "errors travel with HTTP 200: {body}"
        );
        let value: Value = serde_json::from_str(&body).unwrap();
        let retry_after = headers
            .get(header::RETRY_AFTER)
            .map(|value| value.to_str().unwrap().parse().expect("whole seconds"));
        (value["subsonic-response"].clone(), retry_after)
    }
}

fn token_auth(user: &str, password: &str) -> String {
    let salt = "a1b2c3";
    let token = hex::encode(Md5::digest(format!("{password}{salt}").as_bytes()));
    format!("u={user}&t={token}&s={salt}")
}

fn error_code(response: &Value) -> i64 {
    assert_eq!(response["status"], "failed", "{response}");
    response["error"]["code"].as_i64().unwrap()
}

both_backends!(
    failed_authentications_are_throttled_per_account,
    |backend: Backend| async move {
        let app = App::new(backend, |config| {
            config.sign_in_throttle.account_burst = 3;
            // No failure comes back during the test, however slowly it runs.
            config.sign_in_throttle.account_interval = Duration::from_secs(3600);
        })
        .await;
        let ann = app.user("ann").await;
        let bob = app.user("bob").await;

        // A client signs every request: successes never count.
        for _ in 0..10 {
            let (response, retry_after) = app.ping_json(&token_auth("ann", &ann), None).await;
            assert_eq!(response["status"], "ok", "{response}");
            assert_eq!(retry_after, None);
        }
        for auth in [
            token_auth("ann", "a-guess"),
            "u=ann&p=another-guess".to_string(),
            "u=ANN&p=enc:7a7a".to_string(),
        ] {
            let (response, retry_after) = app.ping_json(&auth, None).await;
            assert_eq!(error_code(&response), 40, "{auth}");
            assert_eq!(retry_after, None);
        }
        // Over budget: refused without looking at the credentials, right ones included.
        for auth in [
            token_auth("ann", "a-guess"),
            token_auth("ann", &ann),
            format!("u=ann&p={ann}"),
        ] {
            let (response, retry_after) = app.ping_json(&auth, None).await;
            assert_eq!(error_code(&response), 0, "{response}");
            let seconds = retry_after.expect("Retry-After");
            // At most the interval, however long the failures above took.
            assert!((1..=3600).contains(&seconds), "{seconds}");
            let message = response["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("retry in {seconds} seconds")),
                "{message}"
            );
        }
        // The XML envelope too.
        let (status, headers, xml) = app.ping(&token_auth("ann", &ann), "xml", None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            xml.contains(r#"status="failed""#) && xml.contains(r#"code="0""#),
            "{xml}"
        );
        assert!(headers.contains_key(header::RETRY_AFTER));
        // Another account is not affected.
        let (response, _) = app.ping_json(&token_auth("bob", &bob), None).await;
        assert_eq!(response["status"], "ok", "{response}");
    }
);

both_backends!(
    failed_authentications_are_throttled_per_address,
    |backend: Backend| async move {
        let app = App::new(backend, |config| {
            config.sign_in_throttle.address_burst = 4;
            // No failure comes back during the test, however slowly it runs.
            config.sign_in_throttle.address_interval = Duration::from_secs(3600);
        })
        .await;
        let ann = app.user("ann").await;
        let attacker = Some("203.0.113.9:5555");
        // API keys name no account: the address alone counts their failures.
        for guess in ["key-1", "key-2", "key-3", "key-4"] {
            let (response, _) = app.ping_json(&format!("apiKey={guess}"), attacker).await;
            assert_eq!(error_code(&response), 44);
        }
        for auth in [format!("apiKey={ann}"), token_auth("ann", &ann)] {
            let (response, retry_after) = app.ping_json(&auth, attacker).await;
            assert_eq!(error_code(&response), 0, "{auth}: {response}");
            let seconds = retry_after.expect("Retry-After");
            assert!((1..=3600).contains(&seconds), "{seconds}");
        }
        // From her own address, Ann's key and token work.
        for auth in [format!("apiKey={ann}"), token_auth("ann", &ann)] {
            let (response, retry_after) = app.ping_json(&auth, Some("198.51.100.3:443")).await;
            assert_eq!(response["status"], "ok", "{response}");
            assert_eq!(retry_after, None);
        }
        // The Subsonic budgets are not the login's: the login password still signs in from there.
        let login = app
            .library
            .accounts()
            .login(
                "ann",
                "login password",
                Some("203.0.113.9".parse().unwrap()),
            )
            .await;
        assert!(login.is_ok(), "{:?}", login.err());
    }
);
