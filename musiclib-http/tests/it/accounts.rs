//! Account management: admins add, list, disable and delete accounts; users change their own
//! password; tokens issued before a password change or a disable stop working.

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::json;

use crate::api::App;

async fn login(app: &App, username: &str, password: &str) -> (StatusCode, String) {
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/auth/login",
            None,
            json!({"username": username, "password": password}),
        )
        .await;
    (
        status,
        body["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

both_backends!(admins_manage_accounts, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let admin = app.admin_token().await;
    let user = app.register("listener").await;

    // Create: 201 with the user; a superuser when asked; 409 taken; 422 weak or malformed.
    let (status, created) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            Some(&admin),
            json!({"username": "Grandma", "password": "knitting-needles", "is_superuser": false}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["username"], "Grandma");
    assert_eq!(created["is_superuser"], false);
    assert_eq!(created["disabled"], false);
    let grandma_id = created["id"].as_str().unwrap().to_string();
    let (status, deputy) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            Some(&admin),
            json!({"username": "deputy", "password": "second admin", "is_superuser": true}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(deputy["is_superuser"], true);
    assert_eq!(deputy["is_admin"], true);
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            Some(&admin),
            json!({"username": "GRANDMA", "password": "another one"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            Some(&admin),
            json!({"username": "shorty", "password": "short"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["field"], "password", "{body}");
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            Some(&admin),
            json!({"username": "x", "password": "long enough", "is_superuser": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            Some(&user),
            json!({"username": "sneaky", "password": "long enough", "is_superuser": true}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/admin/users",
            None,
            json!({"username": "sneaky", "password": "long enough"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The new account signs in.
    let (status, grandma) = login(&app, "grandma", "knitting-needles").await;
    assert_eq!(status, StatusCode::OK);

    // List: every account, by name, paged.
    let (status, list) = app.get("/api/v1/admin/users?limit=2", Some(&admin)).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["total"], 4);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|user| user["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["deputy", "Grandma"]);
    let (status, _) = app.get("/api/v1/admin/users", Some(&user)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app.get("/api/v1/admin/users?limit=500", Some(&admin)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Disable: the token stops working, login is refused, on both interfaces.
    let path = format!("/api/v1/admin/users/{grandma_id}");
    let (status, body) = app
        .json("PATCH", &path, Some(&admin), json!({"disabled": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["disabled"], true);
    assert!(body["disabled_at"].is_string());
    let (status, body) = app.get("/api/v1/users/me", Some(&grandma)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, _) = login(&app, "grandma", "knitting-needles").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Enabled again: she signs in; the token from before the disable stays revoked.
    let (status, _) = app
        .json("PATCH", &path, Some(&admin), json!({"disabled": false}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.get("/api/v1/users/me", Some(&grandma)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, grandma) = login(&app, "grandma", "knitting-needles").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.get("/api/v1/users/me", Some(&grandma)).await;
    assert_eq!(status, StatusCode::OK);

    // Errors of PATCH: unknown field, wrong type, unknown user, malformed id, own account.
    let (status, body) = app
        .json(
            "PATCH",
            &path,
            Some(&admin),
            json!({"disabled": true, "role": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = app
        .json("PATCH", &path, Some(&admin), json!({"disabled": "yes"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let unknown = format!("/api/v1/admin/users/{}", musiclib_core::UserId::new());
    let (status, _) = app
        .json("PATCH", &unknown, Some(&admin), json!({"disabled": true}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .json(
            "PATCH",
            "/api/v1/admin/users/nope",
            Some(&admin),
            json!({"disabled": true}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, me) = app.get("/api/v1/users/me", Some(&admin)).await;
    let own = format!("/api/v1/admin/users/{}", me["id"].as_str().unwrap());
    let (status, _) = app
        .json("PATCH", &own, Some(&admin), json!({"disabled": true}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = app.json("DELETE", &own, Some(&admin), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = app
        .json("PATCH", &path, Some(&user), json!({"disabled": true}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Delete: her personal data goes, her uploads stay; the token stops working.
    let (status, playlist) = app
        .json(
            "POST",
            "/api/v1/playlists",
            Some(&grandma),
            json!({"name": "Hymns"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = app.json("DELETE", &path, Some(&user), json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app.json("DELETE", &path, Some(&admin), json!({})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app.json("DELETE", &path, Some(&admin), json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.get("/api/v1/users/me", Some(&grandma)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let playlist_path = format!("/api/v1/playlists/{}", playlist["id"].as_str().unwrap());
    let (status, _) = app.get(&playlist_path, Some(&admin)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = app.get("/api/v1/admin/users", Some(&admin)).await;
    assert_eq!(list["total"], 3);
});

both_backends!(users_change_their_password, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let phone = app.register("walker").await;
    let (status, laptop) = login(&app, "walker", "long enough").await;
    assert_eq!(status, StatusCode::OK);

    // Wrong current password: 403, nothing changes.
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/users/me/password",
            Some(&laptop),
            json!({"current_password": "not it at all", "new_password": "a new secret"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = app.get("/api/v1/users/me", Some(&phone)).await;
    assert_eq!(status, StatusCode::OK);
    // A weak new password: 422 naming it.
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/users/me/password",
            Some(&laptop),
            json!({"current_password": "long enough", "new_password": "short"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["error"]["field"], "new_password", "{body}");
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/users/me/password",
            Some(&laptop),
            json!({"current_password": "long enough"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/users/me/password",
            None,
            json!({"current_password": "long enough", "new_password": "a new secret"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Changed: every earlier token stops working, the answer's token works.
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/users/me/password",
            Some(&laptop),
            json!({"current_password": "long enough", "new_password": "a new secret"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fresh = body["access_token"].as_str().unwrap().to_string();
    for old in [&phone, &laptop] {
        let (status, body) = app.get("/api/v1/users/me", Some(old)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    let (status, _) = app.get("/api/v1/users/me", Some(&fresh)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = login(&app, "walker", "long enough").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, again) = login(&app, "walker", "a new secret").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.get("/api/v1/users/me", Some(&again)).await;
    assert_eq!(status, StatusCode::OK);
});
