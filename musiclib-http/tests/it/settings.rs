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
    assert_eq!(settings["replay_gain"], "off");
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
    let (_, changed) = app
        .json(
            "PATCH",
            "/api/v1/settings",
            Some(&alice),
            json!({"replay_gain": "album"}),
        )
        .await;
    assert_eq!(changed["replay_gain"], "album");
    assert_eq!(changed["scrobbling"], false);
    let (_, again) = app.get("/api/v1/settings", Some(&alice)).await;
    assert_eq!(again["streaming_quality"], "medium");
    assert_eq!(again["scrobbling"], false);
    assert_eq!(again["replay_gain"], "album");
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
        (json!({"scrobbling": null}), "scrobbling"),
        (json!({"streaming_quality": null}), "streaming_quality"),
        (json!({"replay_gain": "loud"}), "replay_gain"),
        (json!({"replay_gain": null}), "replay_gain"),
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

both_backends!(
    scrobbling_credentials_are_write_only,
    |backend: Backend| async move {
        let app = App::new(TestLibrary::new(backend).await).await;
        let alice = app.register("alice").await;
        let bob = app.register("bob").await;
        let path = "/api/v1/settings/scrobbling";
        let session_key = "d580d57f32848f5dcf574d1ce18d78b2";
        let token = "0b4c1e5d-6a8c-4d9e-bb77-2f1e1c8f9a10";

        let (status, _) = app.get(path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = app.json("PUT", path, None, json!({"lastfm": null})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);

        let (status, fresh) = app.get(path, Some(&alice)).await;
        assert_eq!(status, StatusCode::OK, "{fresh}");
        assert_eq!(fresh["lastfm"]["configured"], false);
        assert_eq!(
            fresh["lastfm"]["available"], false,
            "no LASTFM_API_KEY in tests"
        );
        assert_eq!(fresh["listenbrainz"]["configured"], false);
        assert_eq!(fresh["listenbrainz"]["available"], true);
        assert!(fresh["lastfm"]["state"].is_null());

        // Set both: configured, state unknown, the keys nowhere in the answer.
        let (status, set) = app
            .json(
                "PUT",
                path,
                Some(&alice),
                json!({"lastfm": {"session_key": session_key}, "listenbrainz": {"token": token}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{set}");
        assert_eq!(set["lastfm"]["configured"], true);
        assert_eq!(set["lastfm"]["state"], "unknown");
        assert_eq!(set["listenbrainz"]["configured"], true);
        let (_, read) = app.get(path, Some(&alice)).await;
        for answer in [&set, &read] {
            let text = answer.to_string();
            assert!(
                !text.contains(session_key) && !text.contains(token),
                "{text}"
            );
        }
        // Nor in the database, in any column.
        let columns = musiclib_core::testing::user_settings_columns(&app.library).await;
        assert!(columns
            .iter()
            .flatten()
            .any(|value| value.starts_with("v1:")));
        for value in columns.iter().flatten() {
            assert!(
                !value.contains(session_key) && !value.contains(token),
                "{value}"
            );
        }
        // Someone else's set-up is their own.
        let (_, theirs) = app.get(path, Some(&bob)).await;
        assert_eq!(theirs["lastfm"]["configured"], false);

        // Either part alone; null removes it.
        let (status, removed) = app
            .json("PUT", path, Some(&alice), json!({"lastfm": null}))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(removed["lastfm"]["configured"], false);
        assert_eq!(removed["listenbrainz"]["configured"], true);
        let (_, same) = app.json("PUT", path, Some(&alice), json!({})).await;
        assert_eq!(same["listenbrainz"]["configured"], true);

        // Bad input: 422 naming the field; nothing changes.
        for (body, field) in [
            (json!({"spotify": {"token": "x"}}), "spotify"),
            (json!({"lastfm": {"token": "x"}}), "lastfm.token"),
            (json!({"lastfm": {"session_key": ""}}), "lastfm.session_key"),
            (
                json!({"lastfm": {"session_key": "has space"}}),
                "lastfm.session_key",
            ),
            (json!({"listenbrainz": {"token": 5}}), "listenbrainz.token"),
            (json!({"listenbrainz": "token"}), "listenbrainz"),
        ] {
            let (status, error) = app.json("PUT", path, Some(&alice), body.clone()).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {error}");
            assert_eq!(error["error"]["field"], field, "{body}: {error}");
        }
        let (_, after) = app.get(path, Some(&alice)).await;
        assert_eq!(after["lastfm"]["configured"], false);
        assert_eq!(after["listenbrainz"]["configured"], true);
    }
);
