//! Authentication: token, plain, `enc:`, apiKey, wrong and missing credentials, form POSTs,
//! rotation, and the app password at rest.

use axum::body::Body;
use axum::http::{header, Request};
use musiclib_core::testing::Backend;
use serde_json::Value;

use crate::both_backends;
use crate::harness::Fixture;

fn error_code(response: &Value) -> i64 {
    assert_eq!(response["status"], "failed", "{response}");
    response["error"]["code"].as_i64().unwrap()
}

both_backends!(credentials, |backend: Backend| async move {
    let app = Fixture::new(backend).await;
    let password = app.password.clone();
    let hex_lower = password
        .bytes()
        .map(|byte| format!("{byte:02x}"))
        .collect::<String>();

    // Token, plain and enc: (either case) work, on `/rest/ping` and `/rest/ping.view`.
    for auth in [
        app.auth(),
        format!("u=ann&p={password}"),
        format!("u=ann&p=enc:{hex_lower}"),
        format!("u=ANN&p=enc:{}", hex_lower.to_uppercase()),
    ] {
        let response = app.json_as(&auth, "ping", "").await;
        assert_eq!(response["status"], "ok", "{auth}: {response}");
        let response = app.json_as(&auth, "ping.view", "").await;
        assert_eq!(response["status"], "ok", "{auth}: {response}");
    }

    // Wrong credentials: 40, with HTTP 200, in either format.
    let wrong = Fixture::token_auth("ann", "not-the-password");
    assert_eq!(error_code(&app.json_as(&wrong, "ping", "").await), 40);
    assert_eq!(
        error_code(&app.json_as("u=ann&p=ann-password", "ping", "").await),
        40,
        "the login password is not the app password"
    );
    assert_eq!(
        error_code(&app.json_as("u=nobody&p=x", "ping", "").await),
        40
    );
    assert_eq!(
        error_code(&app.json_as("u=ann&p=enc:zz", "ping", "").await),
        40
    );
    let (status, content_type, body) = app.get("ping", &wrong).await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/xml"));
    let xml = String::from_utf8(body).unwrap();
    assert!(
        xml.contains(r#"status="failed""#) && xml.contains(r#"code="40""#),
        "{xml}"
    );
    crate::harness::validate(&xml);

    // Missing parameters: 10.
    assert_eq!(error_code(&app.json_as("p=x", "ping", "").await), 10);
    assert_eq!(error_code(&app.json_as("u=ann", "ping", "").await), 10);
    assert_eq!(
        error_code(&app.json_as("u=ann&t=abc", "ping", "").await),
        10
    );

    // apiKey (the app password): alone works; with u is 43; wrong is 44.
    let response = app
        .json_as(&format!("apiKey={password}"), "tokenInfo", "")
        .await;
    assert_eq!(response["tokenInfo"]["username"], "ann", "{response}");
    assert_eq!(
        error_code(
            &app.json_as(&format!("apiKey={password}&u=ann"), "ping", "")
                .await
        ),
        43
    );
    assert_eq!(
        error_code(&app.json_as("apiKey=nope", "ping", "").await),
        44
    );

    // getOpenSubsonicExtensions needs no credentials and lists what is honoured.
    let response = app.json_as("", "getOpenSubsonicExtensions", "").await;
    let names: Vec<&str> = response["openSubsonicExtensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|extension| extension["name"].as_str().unwrap())
        .collect();
    for name in [
        "formPost",
        "songLyrics",
        "transcodeOffset",
        "apiKeyAuthentication",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    assert_eq!(
        response["openSubsonicExtensions"][0]["versions"],
        serde_json::json!([1])
    );

    // Anything else: error 0, "not supported", never a crash.
    let response = app.json_as(&app.auth(), "jukeboxControl", "").await;
    assert_eq!(error_code(&response), 0);
    assert!(response["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not supported"));

    // formPost: parameters in a form body, split with the query.
    let request = Request::post("/rest/getSong.view?f=json")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!(
            "{}&id={}",
            app.auth(),
            app.track_ids[0]
        )))
        .unwrap();
    let (_, _, body) = app.send(request).await;
    let value: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        value["subsonic-response"]["song"]["id"],
        app.track_ids[0].as_str(),
        "{value}"
    );

    // jsonp.
    let (_, content_type, body) = app
        .get("ping", &format!("{}&f=jsonp&callback=handle", app.auth()))
        .await;
    assert!(content_type.starts_with("application/javascript"));
    assert!(String::from_utf8(body)
        .unwrap()
        .starts_with("handle({\"subsonic-response\""));
});

both_backends!(rotation_and_storage, |backend: Backend| async move {
    let app = Fixture::new(backend).await;
    let old = app.password.clone();
    assert_eq!(old.len(), musiclib_core::auth::legacy::APP_PASSWORD_LEN);
    // Revealing again answers the same password.
    assert_eq!(
        app.library
            .accounts()
            .legacy_password(&app.caller)
            .await
            .unwrap(),
        old
    );

    // The database holds no app password in clear: not in the users table, not anywhere
    // in the SQLite file.
    let rows = musiclib_core::testing::legacy_password_columns(&app.library).await;
    assert_eq!(rows.len(), 2);
    for (encrypted, digest) in &rows {
        let encrypted = encrypted.as_deref().unwrap_or_default();
        assert!(encrypted.starts_with("v1:"), "{encrypted}");
        assert!(!encrypted.contains(&old) && !digest.as_deref().unwrap_or_default().contains(&old));
    }
    if backend == Backend::Embedded {
        let db_file = app.library.config().data_dir.join("musiclib.db");
        let mut bytes = std::fs::read(&db_file).unwrap_or_default();
        if let Ok(wal) = std::fs::read(db_file.with_extension("db-wal")) {
            bytes.extend(wal);
        }
        assert!(
            !bytes.is_empty(),
            "the SQLite file {} exists",
            db_file.display()
        );
        assert!(
            !bytes
                .windows(old.len())
                .any(|window| window == old.as_bytes()),
            "clear app password in the database file"
        );
    }

    // The owner rotates: the old password stops working, the new one works.
    let new = app
        .library
        .accounts()
        .rotate_legacy_password(&app.caller, &app.caller.user.id)
        .await
        .unwrap();
    assert_ne!(new, old);
    let response = app
        .json_as(&Fixture::token_auth("ann", &old), "ping", "")
        .await;
    assert_eq!(error_code(&response), 40);
    assert_eq!(
        app.json_as(&Fixture::token_auth("ann", &new), "ping", "")
            .await["status"],
        "ok"
    );

    // Another user may not rotate ann's; an admin may.
    let admin = app
        .library
        .accounts()
        .find_user_by_name("root")
        .await
        .unwrap()
        .unwrap();
    let admin = musiclib_core::auth::Caller { user: admin };
    let error = app
        .library
        .accounts()
        .rotate_legacy_password(&app.caller, &admin.user.id)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), musiclib_core::ErrorKind::Forbidden);
    let by_admin = app
        .library
        .accounts()
        .rotate_legacy_password(&admin, &app.caller.user.id)
        .await
        .unwrap();
    assert_eq!(
        app.json_as(&Fixture::token_auth("ann", &by_admin), "ping", "")
            .await["status"],
        "ok"
    );
    assert_eq!(
        error_code(
            &app.json_as(&Fixture::token_auth("ann", &new), "ping", "")
                .await
        ),
        40
    );
});
