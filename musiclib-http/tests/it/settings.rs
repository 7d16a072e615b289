//! `/settings`: one row per user, made on first access; partial changes; unknown fields and
//! wrong types are a 422 naming the field.

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::json;

use crate::api::App;

both_backends!(settings_are_per_user, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;

    let (status, body) = app.get("/api/v1/settings", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, _) = app
        .json(
            "PATCH",
            "/api/v1/settings",
            None,
            json!({"scrobbling": false}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Defaults on first access.
    let (status, settings) = app.get("/api/v1/settings", Some(&alice)).await;
    assert_eq!(status, StatusCode::OK, "{settings}");
    assert_eq!(settings["streaming_quality"], "original");
    assert_eq!(settings["scrobbling"], true);
    assert!(settings["updated_at"].is_string());

    // A partial change keeps the rest, and is Alice's only.
    let (status, changed) = app
        .json(
            "PATCH",
            "/api/v1/settings",
            Some(&alice),
            json!({"streaming_quality": "medium"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["streaming_quality"], "medium");
    assert_eq!(changed["scrobbling"], true);
    let (_, changed) = app
        .json(
            "PATCH",
            "/api/v1/settings",
            Some(&alice),
            json!({"scrobbling": false}),
        )
        .await;
    assert_eq!(changed["streaming_quality"], "medium");
    assert_eq!(changed["scrobbling"], false);
    let (_, again) = app.get("/api/v1/settings", Some(&alice)).await;
    assert_eq!(again["streaming_quality"], "medium");
    assert_eq!(again["scrobbling"], false);
    let (_, theirs) = app.get("/api/v1/settings", Some(&bob)).await;
    assert_eq!(theirs["streaming_quality"], "original");
    // An empty change is allowed and changes nothing.
    let (status, same) = app
        .json("PATCH", "/api/v1/settings", Some(&bob), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(same["scrobbling"], true);

    // Bad input: 422 naming the field, nothing changed.
    for (body, field) in [
        (json!({"theme": "dark"}), "theme"),
        (json!({"scrobbling": "yes"}), "scrobbling"),
        (
            json!({"streaming_quality": "lossless"}),
            "streaming_quality",
        ),
        (json!({"streaming_quality": 3}), "streaming_quality"),
    ] {
        let (status, error) = app
            .json("PATCH", "/api/v1/settings", Some(&alice), body.clone())
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {error}");
        assert_eq!(error["error"]["field"], field, "{body}: {error}");
    }
    let (status, error) = app
        .json("PATCH", "/api/v1/settings", Some(&alice), json!([1, 2]))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (_, unchanged) = app.get("/api/v1/settings", Some(&alice)).await;
    assert_eq!(unchanged["streaming_quality"], "medium");
    assert_eq!(unchanged["scrobbling"], false);
});
