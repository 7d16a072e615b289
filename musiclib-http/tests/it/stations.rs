//! `/radio-stations`: admins manage internet radio stations, everyone lists them, and the
//! relay passes a station's endless stream through as it comes (a loopback station, allowed
//! by `ALLOW_PRIVATE_URLS`; refused by default).

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

use crate::api::App;

/// A station on loopback that answers every request with `content_type` and an endless
/// chunked body (4 KiB chunks, until the listener hangs up). Its address.
async fn endless_station(content_type: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
                );
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = [0xFFu8; 4096];
                loop {
                    let frame = [
                        format!("{:x}\r\n", chunk.len()).as_bytes(),
                        &chunk[..],
                        b"\r\n",
                    ]
                    .concat();
                    if socket.write_all(&frame).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        }
    });
    format!("http://{address}")
}

async fn app(backend: Backend, allow_private: bool) -> App {
    let library = TestLibrary::builder(backend)
        .config(move |config| config.allow_private_urls = allow_private)
        .build()
        .await;
    App::new(library).await
}

both_backends!(
    admins_manage_stations_everyone_lists_them,
    |backend: Backend| async move {
        let app = app(backend, false).await;
        let admin = app.admin_token().await;
        let user = app.register("listener").await;

        let (status, created) = app
        .json(
            "POST",
            "/api/v1/radio-stations",
            Some(&admin),
            json!({"name": "  Radio One ", "stream_url": "https://radio.example/one.mp3", "homepage_url": "https://radio.example/"}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        assert_eq!(created["name"], "Radio One");
        let id = created["id"].as_str().unwrap().to_string();
        let (status, _) = app
            .json(
                "POST",
                "/api/v1/radio-stations",
                Some(&user),
                json!({"name": "Mine", "stream_url": "https://radio.example/mine.mp3"}),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Bounded and checked, the field named.
        for (body, field) in [
            (
                json!({"name": "x", "stream_url": "ftp://radio.example/"}),
                "stream_url",
            ),
            (
                json!({"name": "x", "stream_url": "https://radio.example/", "homepage_url": "javascript:alert(1)"}),
                "homepage_url",
            ),
            (
                json!({"name": "x".repeat(201), "stream_url": "https://radio.example/"}),
                "name",
            ),
            (
                json!({"name": "x", "stream_url": format!("https://radio.example/{}", "a".repeat(2048))}),
                "stream_url",
            ),
        ] {
            let (status, error) = app
                .json("POST", "/api/v1/radio-stations", Some(&admin), body)
                .await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
            assert_eq!(error["error"]["field"], field, "{error}");
        }

        let (status, listed) = app.get("/api/v1/radio-stations", Some(&user)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
        let (status, changed) = app
            .json(
                "PATCH",
                &format!("/api/v1/radio-stations/{id}"),
                Some(&admin),
                json!({"name": "Radio Uno", "homepage_url": null}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{changed}");
        assert_eq!(changed["name"], "Radio Uno");
        assert_eq!(changed["stream_url"], "https://radio.example/one.mp3");
        assert!(changed["homepage_url"].is_null(), "{changed}");
        let (status, _) = app
            .json(
                "DELETE",
                &format!("/api/v1/radio-stations/{id}"),
                Some(&admin),
                json!(null),
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, _) = app
            .get(&format!("/api/v1/radio-stations/{id}"), Some(&user))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
);

/// Adds a station streaming from `url` as an admin; its id.
async fn station(app: &App, admin: &str, url: &str) -> String {
    let (status, created) = app
        .json(
            "POST",
            "/api/v1/radio-stations",
            Some(admin),
            json!({"name": "Loopback", "stream_url": format!("{url}/live")}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["id"].as_str().unwrap().to_string()
}

both_backends!(
    the_relay_streams_audio_as_it_comes,
    |backend: Backend| async move {
        let app = app(backend, true).await;
        let admin = app.admin_token().await;
        let user = app.register("listener").await;
        let audio = station(&app, &admin, &endless_station("audio/mpeg").await).await;
        let html = station(&app, &admin, &endless_station("text/html").await).await;

        // An endless stream: the answer starts at once, and reading part of it ends it.
        let router = musiclib_http::router(app.library.library.clone());
        let request = Request::get(format!(
            "/api/v1/radio-stations/{audio}/stream?token={user}"
        ))
        .body(Body::empty())
        .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(10), router.oneshot(request))
            .await
            .expect("the relay answers before the stream ends")
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "audio/mpeg");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
        let mut body = response.into_body();
        let mut read = 0;
        while read < 64 * 1024 {
            let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
                .await
                .expect("chunks keep coming")
                .expect("the stream goes on")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                assert!(data.iter().all(|byte| *byte == 0xFF));
                read += data.len();
            }
        }
        drop(body);

        // Not audio: refused, a bad gateway.
        let (status, error) = app
            .get(
                &format!("/api/v1/radio-stations/{html}/stream"),
                Some(&user),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("text/html"),
            "{error}"
        );
    }
);

both_backends!(
    by_default_a_station_on_a_private_address_is_not_relayed,
    |backend: Backend| async move {
        let app = app(backend, false).await;
        let admin = app.admin_token().await;
        let audio = station(&app, &admin, &endless_station("audio/mpeg").await).await;
        let (status, error) = app
            .get(
                &format!("/api/v1/radio-stations/{audio}/stream"),
                Some(&admin),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
        assert_eq!(error["error"]["code"], "bad_gateway", "{error}");
    }
);
