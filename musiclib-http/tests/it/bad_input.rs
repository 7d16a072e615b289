//! Bad input on purpose: malformed and oversized bodies, path traversal in every name a
//! request carries, huge lists and limits. Each is a clear 4xx with the JSON error body naming
//! the problem, and nothing changes. And the OpenAPI document lists what the server answers.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::TestLibrary;
use serde_json::{json, Value};

use crate::api::App;

async fn send(app: &App, method: &str, uri: &str, token: &str, body: Body) -> (StatusCode, Value) {
    app.call(
        Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .unwrap(),
    )
    .await
}

fn field(body: &Value) -> Option<&str> {
    body["error"]["field"].as_str()
}

async fn playlist_count(app: &App, token: &str) -> u64 {
    let (status, body) = app.get("/api/v1/playlists", Some(token)).await;
    assert_eq!(status, StatusCode::OK);
    body["total"].as_u64().unwrap()
}

both_backends!(malformed_and_oversized_bodies, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("mallory").await;

    // Malformed JSON, a body of the wrong shape, a field of the wrong type.
    for (body, expected_field) in [
        ("{\"name\": ", "body"),
        ("[\"Mix\", null, false]", "body"),
        ("{\"name\": 5}", "name"),
        ("{\"name\": \"Mix\", \"owner_id\": \"x\"}", "owner_id"),
    ] {
        let (status, answer) =
            send(&app, "POST", "/api/v1/playlists", &token, Body::from(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "validation_error");
        assert_eq!(field(&answer), Some(expected_field), "{body}: {answer}");
    }
    // Nesting past serde_json's depth limit is refused, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (status, answer) = send(&app, "POST", "/api/v1/playlists", &token, Body::from(deep)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");

    // A JSON body over the limit is a 413 before it is parsed, even a streamed one.
    let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(9 * 1024 * 1024));
    let (status, answer) = send(&app, "POST", "/api/v1/playlists", &token, Body::from(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    assert_eq!(answer["error"]["code"], "payload_too_large");
    assert_eq!(playlist_count(&app, &token).await, 0, "nothing was made");

    // A whole number written with a fraction is the integer it is (JSON Schema's `integer`).
    let (status, answer) = app
        .json("POST", "/api/v1/radio", Some(&token), json!({"count": 5.0}))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = app
        .json("POST", "/api/v1/radio", Some(&token), json!({"count": 5.5}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(field(&answer), Some("count"));

    // An upload that is not a multipart form.
    let (status, answer) = send(
        &app,
        "POST",
        "/api/v1/tracks/upload",
        &token,
        Body::from("{}"),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(field(&answer), Some("body"));
});

both_backends!(traversal_in_names_and_ids, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("mallory").await;
    let track = "01a21145-4596-74b4-8df4-a01be70b0815";
    // Names a path or key could be built from: never a file outside, always a refusal.
    for uri in [
        "/api/v1/tracks/..%2F..%2Fetc%2Fpasswd".to_string(),
        format!("/api/v1/stream/{track}/hls/..%2F..%2Fsecret.ts"),
        format!("/api/v1/stream/{track}/hls/seg-00000.ts%00.m3u8"),
        format!("/api/v1/stream/{track}/hls/seg-1.ts"),
        format!("/api/v1/tracks/{track}/cover?size=..%2F1"),
        "/api/v1/albums/..%2F..%2F/cover".to_string(),
        "/api/v1/sources/..%2Flocal_folder/search?q=x".to_string(),
        "/api/v1/storage/missing-metadata?fields=..%2Ftitle".to_string(),
        "/api/v1/sync/changes?since=..%2F1".to_string(),
        "/api/v1/likes/state?track_ids=..%2F..%2Fetc".to_string(),
    ] {
        let (status, answer) = app.get(&uri, Some(&token)).await;
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::UNPROCESSABLE_ENTITY,
            "{uri}: {status} {answer}"
        );
        assert!(answer["error"]["code"].is_string(), "{uri}: {answer}");
    }
    // A remote item id that could carry structure into a URL or a program's argument.
    for id in ["../../etc/passwd", "--exec=sh", "a/b", "a b", ""] {
        let (status, answer) = app
            .json(
                "POST",
                "/api/v1/tracks/remote",
                Some(&token),
                json!({"source": "remote", "source_id": id}),
            )
            .await;
        assert!(status.is_client_error(), "{id}: {status} {answer}");
    }
    // A sync push naming a track by something that is not an id.
    let (status, answer) = app
        .json(
            "POST",
            "/api/v1/sync/push",
            Some(&token),
            json!({"plays": [{"client_event_id": "a", "track_id": "../x", "played_at": "2026-11-21T10:00:00Z"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(field(&answer), Some("plays[0].track_id"));
    let (_, history) = app.get("/api/v1/history", Some(&token)).await;
    assert_eq!(history["total"], 0, "nothing stored");
});

both_backends!(huge_lists_and_limits, |backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("mallory").await;
    let ids: Vec<String> = (0..5001)
        .map(|index| format!("01a21145-4596-74b4-8df4-{index:012}"))
        .collect();
    let (status, answer) = app
        .json(
            "POST",
            "/api/v1/radio",
            Some(&token),
            json!({"exclude_ids": ids}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(field(&answer), Some("exclude_ids"));
    for uri in [
        "/api/v1/tracks?limit=1000000",
        "/api/v1/tracks?limit=0",
        "/api/v1/tracks?offset=-1",
        "/api/v1/tracks?limit=99999999999999999999999",
        "/api/v1/sync/changes?limit=5001",
        "/api/v1/search/library?q=a&limit=201",
    ] {
        let (status, answer) = app.get(uri, Some(&token)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {answer}");
        assert!(field(&answer).is_some(), "{uri}: {answer}");
    }
    let many = vec!["01a21145-4596-74b4-8df4-a01be70b0815"; 501].join(",");
    let (status, answer) = app
        .get(
            &format!("/api/v1/likes/state?track_ids={many}"),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let plays: Vec<Value> = (0..5001)
        .map(|index| json!({"client_event_id": format!("e{index}"), "track_id": "01a21145-4596-74b4-8df4-a01be70b0815", "played_at": "2026-11-21T10:00:00Z"}))
        .collect();
    let (status, answer) = app
        .json(
            "POST",
            "/api/v1/sync/push",
            Some(&token),
            json!({"plays": plays}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    // Punctuation only: nothing to look for, an empty answer rather than a refusal.
    let (status, answer) = app
        .get("/api/v1/search/library?q=%21%3F", Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["tracks"], json!([]));
});

#[test]
fn the_document_lists_the_shared_answers_of_every_operation() {
    let document = serde_json::to_value(musiclib_http::openapi()).unwrap();
    let schemes = &document["components"]["securitySchemes"];
    assert!(schemes["bearer"].is_object() && schemes["token"].is_object());
    let mut operations = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations += 1;
            let responses = operation["responses"].as_object().unwrap();
            let label = format!("{method} {path}");
            assert!(responses.contains_key("503"), "{label}: no 503");
            let secured = operation["security"].as_array().is_some_and(|all| {
                all.iter()
                    .any(|one| one.as_object().is_some_and(|r| !r.is_empty()))
            });
            if secured {
                assert!(responses.contains_key("401"), "{label}: no 401");
            }
            if path.contains('{') {
                assert!(responses.contains_key("404"), "{label}: no 404");
                assert!(responses.contains_key("422"), "{label}: no 422");
            }
            for (status, response) in responses {
                // `/health` answers its own report with 503 when the database is down.
                if path == "/health" {
                    continue;
                }
                if status.starts_with('4') && status != "414" || status.starts_with('5') {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/ErrorBody",
                        "{label} {status}: not the error body"
                    );
                }
            }
        }
    }
    assert!(operations > 80, "{operations} operations");
    // Bounds the server enforces are in the document.
    let limit = document["paths"]["/tracks"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|parameter| parameter["name"] == "limit")
        .unwrap();
    assert_eq!(
        (
            limit["schema"]["minimum"].as_i64(),
            limit["schema"]["maximum"].as_i64()
        ),
        (Some(1), Some(200))
    );
    let id = &document["paths"]["/tracks/{id}"]["get"]["parameters"][0];
    assert_eq!(id["schema"]["format"], "uuid");
}

#[tokio::test]
async fn a_panic_is_a_json_500_naming_its_request_id() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let library = TestLibrary::new(musiclib_core::testing::Backend::Embedded).await;
    let router = musiclib_http::router_with(
        library.library.clone(),
        axum::Router::new().route(
            "/boom",
            axum::routing::get(|| async {
                if true {
                    panic!("a handler's bug");
                }
                "unreachable"
            }),
        ),
    );
    let response = router
        .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).expect("a JSON body");
    assert_eq!(body["error"]["code"], "internal_error");
    assert_eq!(body["error"]["request_id"], request_id.as_str());
    assert!(
        !body.to_string().contains("a handler's bug"),
        "the panic's message is logged, not sent: {body}"
    );
}
