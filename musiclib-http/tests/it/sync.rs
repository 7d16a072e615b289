//! Playlists, likes, history and sync over `/api/v1`: the wire names clients code against.

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::json;

use crate::api::App;

both_backends!(over_http, playlists_likes_history_and_sync_over_http);

async fn playlists_likes_history_and_sync_over_http(backend: Backend) {
    let app = App::new(TestLibrary::new(backend).await).await;
    musiclib_core::testing::insert_synthetic_tracks(&app.library, 3).await;
    let alice = app.register("alice").await;
    let bob = app.register("bob").await;
    let (_, tracks) = app.get("/api/v1/tracks?limit=3", Some(&alice)).await;
    let ids: Vec<String> = tracks["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|track| track["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3);

    // Playlists: create, add (with a version), stale version 409, remove by position.
    let (status, playlist) = app
        .json(
            "POST",
            "/api/v1/playlists",
            Some(&alice),
            json!({"name": "Mix", "track_ids": [ids[0]]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{playlist}");
    assert_eq!(
        (
            playlist["version"].as_i64(),
            playlist["track_count"].as_i64()
        ),
        (Some(1), Some(1))
    );
    let uri = format!("/api/v1/playlists/{}", playlist["id"].as_str().unwrap());
    let (status, added) = app
        .json(
            "POST",
            &format!("{uri}/tracks"),
            Some(&alice),
            json!({"track_ids": [ids[1], ids[2]], "version": 1}),
        )
        .await;
    assert_eq!(
        (status, added["version"].as_i64()),
        (StatusCode::OK, Some(2)),
        "{added}"
    );
    let (status, stale) = app
        .json(
            "POST",
            &format!("{uri}/tracks"),
            Some(&alice),
            json!({"track_ids": [ids[1]], "version": 1}),
        )
        .await;
    assert_eq!(
        (status, stale["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict"))
    );
    let (status, removed) = app
        .json(
            "DELETE",
            &format!("{uri}/tracks"),
            Some(&alice),
            json!({"positions": [0]}),
        )
        .await;
    assert_eq!(
        (status, removed["version"].as_i64()),
        (StatusCode::OK, Some(3))
    );
    assert_eq!(removed["track_ids"], json!([ids[1], ids[2]]));
    let (status, _) = app
        .json(
            "PATCH",
            &uri,
            Some(&alice),
            json!({"description": "for the road"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.get(&uri, Some(&bob)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = app.get(&format!("{uri}/cover"), Some(&alice)).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/playlists",
            Some(&alice),
            json!({"name": ""}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("name"))
    );

    // Likes and history.
    let like = json!({"client_event_id": "l1", "track_id": ids[0], "liked": true, "event_time": "2026-11-21T10:00:00Z"});
    let (status, body) = app
        .json("POST", "/api/v1/likes", Some(&alice), like.clone())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = app.json("POST", "/api/v1/likes", Some(&alice), like).await;
    assert_eq!(status, StatusCode::OK, "a repeat answers the stored event");
    let (_, state) = app
        .get(
            &format!("/api/v1/likes/state?track_ids={},{}", ids[0], ids[1]),
            Some(&alice),
        )
        .await;
    assert_eq!(
        state,
        json!([
        {"track_id": ids[0], "liked": true, "event_time": "2026-11-21T10:00:00Z"},
        {"track_id": ids[1], "liked": false, "event_time": null}])
    );
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/history",
            Some(&alice),
            json!({"client_event_id": "h1", "track_id": ids[1], "played_at": "yesterday"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("played_at"))
    );

    // Push: accepted, duplicates, skipped with their ids.
    let (status, pushed) = app.json("POST", "/api/v1/sync/push", Some(&alice), json!({
        "likes": [{"client_event_id": "l1", "track_id": ids[0], "liked": false, "event_time": "2026-11-21T11:00:00Z"}],
        "plays": [{"client_event_id": "p1", "track_id": ids[1], "played_at": "2026-11-21T09:00:00Z", "seconds_played": 31.5},
                  {"client_event_id": "p2", "track_id": "7f1c0000-0000-7000-8000-000000000000", "played_at": "2026-11-21T09:00:00Z"}]})).await;
    assert_eq!(status, StatusCode::OK, "{pushed}");
    assert_eq!(
        pushed,
        json!({"accepted": 1, "duplicates": 1, "skipped": 1, "skipped_ids": ["p2"]})
    );

    // Pull: everything, then nothing past the cursor.
    let (status, changes) = app.get("/api/v1/sync/changes", Some(&alice)).await;
    assert_eq!(status, StatusCode::OK, "{changes}");
    assert_eq!(changes["likes"].as_array().unwrap().len(), 1);
    assert_eq!(changes["plays"][0]["client_event_id"], "p1");
    assert_eq!(changes["playlists"][0]["version"], 3);
    assert_eq!(changes["tracks"].as_array().unwrap().len(), 3);
    assert_eq!(changes["deleted"], json!({"tracks": [], "playlists": []}));
    assert_eq!(changes["has_more"], false);
    let cursor = changes["cursor"].as_str().unwrap();
    let (_, later) = app
        .get(
            &format!("/api/v1/sync/changes?since={cursor}"),
            Some(&alice),
        )
        .await;
    assert!(
        later["likes"].as_array().unwrap().is_empty()
            && later["plays"].as_array().unwrap().is_empty()
    );
    let (status, body) = app
        .get("/api/v1/sync/changes?since=abc", Some(&alice))
        .await;
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("since"))
    );
    let (status, _) = app.get("/api/v1/sync/changes", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // The cursor now: at or past where the full pull ended.
    let (status, now) = app.get("/api/v1/sync/cursor", Some(&alice)).await;
    assert_eq!(status, StatusCode::OK, "{now}");
    let number = |cursor: &str| cursor.parse::<i64>().unwrap();
    assert!(
        number(now["cursor"].as_str().unwrap()) >= number(cursor),
        "{now} {cursor}"
    );
    let (status, _) = app.get("/api/v1/sync/cursor", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, _) = app
        .json("DELETE", &uri, Some(&alice), serde_json::Value::Null)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, last) = app
        .get(
            &format!("/api/v1/sync/changes?since={cursor}"),
            Some(&alice),
        )
        .await;
    assert_eq!(last["deleted"]["playlists"], json!([playlist["id"]]));
    // A cursor taken after the deletion sees it no more.
    let (_, now) = app.get("/api/v1/sync/cursor", Some(&alice)).await;
    let (_, after) = app
        .get(
            &format!(
                "/api/v1/sync/changes?since={}",
                now["cursor"].as_str().unwrap()
            ),
            Some(&alice),
        )
        .await;
    assert_eq!(
        after["deleted"],
        json!({"tracks": [], "playlists": []}),
        "{after}"
    );
}
