//! What a request may cost and what it may leave half done: bodies read within bounds (and
//! only a small part before the caller is known), playlist edits that change all or nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::Value;

use crate::both_backends;
use crate::harness::Fixture;

fn parse(body: &[u8]) -> Value {
    serde_json::from_slice::<Value>(body).expect("a JSON answer")["subsonic-response"].clone()
}

/// A form POST to `method` whose body is `head` followed by `padding` bytes of filler sent in
/// 16 KiB chunks, counting the bytes the server pulled from it.
fn counted_post(method: &str, head: String, padding: usize) -> (Request<Body>, Arc<AtomicUsize>) {
    let pulled = Arc::new(AtomicUsize::new(0));
    let mut chunks: Vec<Vec<u8>> = vec![head.into_bytes()];
    let filler = b"&x="
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b'y', 16 * 1024 - 3));
    let filler: Vec<u8> = filler.collect();
    for _ in 0..padding / filler.len() {
        chunks.push(filler.clone());
    }
    let counter = pulled.clone();
    let stream = futures::stream::iter(chunks).map(move |chunk| {
        counter.fetch_add(chunk.len(), Ordering::SeqCst);
        Ok::<_, std::io::Error>(chunk)
    });
    let request = Request::post(format!("/rest/{method}"))
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from_stream(stream))
        .unwrap();
    (request, pulled)
}

use futures::StreamExt;

both_backends!(form_bodies_are_read_within_bounds, |backend| async move {
    let app = Fixture::new(backend).await;
    // Credentials in the body, as OpenSubsonic formPost clients send them: the first part is
    // enough to know the caller, and the rest is read once they are.
    let form = format!("{}&f=json&id={}", app.auth(), app.track_ids[0]);
    let (request, _) = counted_post("getSong", form, 256 * 1024);
    let (status, _, body) = app.send_parts(request).await;
    assert_eq!(status, StatusCode::OK);
    let answer = parse(&body);
    assert_eq!(answer["status"], "ok", "{answer}");
    assert_eq!(answer["song"]["id"], app.track_ids[0].as_str());

    // Without credentials in the first part, a body is read no further than that part.
    let (request, pulled) = counted_post("ping", "f=json".into(), 4 * 1024 * 1024);
    let (status, _, body) = app.send_parts(request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        parse(&body)["error"]["code"],
        10,
        "the credentials are missing"
    );
    let read = pulled.load(Ordering::SeqCst);
    assert!(
        read < 128 * 1024,
        "{read} bytes pulled before the caller was known"
    );

    // Wrong credentials first: refused after that first part, the rest never read.
    let wrong = format!("{}&f=json", Fixture::token_auth("ann", "not her password"));
    let (request, pulled) = counted_post("ping", wrong, 4 * 1024 * 1024);
    let (status, _, body) = app.send_parts(request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(parse(&body)["error"]["code"], 40);
    assert!(pulled.load(Ordering::SeqCst) < 128 * 1024);

    // A caller's body past a mebibyte is refused (413), declared or not.
    let (request, _) = counted_post("ping", format!("{}&f=json", app.auth()), 2 * 1024 * 1024);
    let (status, _, body) = app.send_parts(request).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(parse(&body)["status"], "failed");
    let declared = Request::post("/rest/ping")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::CONTENT_LENGTH, 5 * 1024 * 1024)
        .body(Body::from(format!("{}&f=json", app.auth())))
        .unwrap();
    assert_eq!(
        app.send_parts(declared).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
});

both_backends!(playlist_edits_change_all_or_nothing, |backend| async move {
    let app = Fixture::new(backend).await;
    let (first, second) = (&app.track_ids[0], &app.track_ids[1]);
    let created = app
        .json(
            "createPlaylist",
            &format!("name=Keep&songId={first}&songId={second}"),
        )
        .await;
    let id = created["playlist"]["id"].as_str().unwrap().to_string();
    let playlist_id = musiclib_core::PlaylistId::parse(&id).unwrap();
    let before = app
        .library
        .playlists()
        .get(&app.caller, &playlist_id)
        .await
        .unwrap();
    let unknown = musiclib_core::TrackId::new();

    // Replacing the songs with a list that names an unknown one: refused, nothing changed.
    let replaced = app
        .json_as(
            &app.auth(),
            "createPlaylist",
            &format!("playlistId={id}&name=Renamed&songId={first}&songId={unknown}"),
        )
        .await;
    assert_eq!(replaced["status"], "failed", "{replaced}");
    let after = app
        .library
        .playlists()
        .get(&app.caller, &playlist_id)
        .await
        .unwrap();
    assert_eq!(after.track_ids, before.track_ids);
    assert_eq!(
        (after.name.as_str(), after.version),
        ("Keep", before.version)
    );

    // An update that removes, renames and adds an unknown song: likewise.
    let updated = app
        .json_as(
            &app.auth(),
            "updatePlaylist",
            &format!("playlistId={id}&name=Other&songIndexToRemove=0&songIdToAdd={unknown}"),
        )
        .await;
    assert_eq!(updated["status"], "failed", "{updated}");
    // A position past the end too.
    let updated = app
        .json_as(
            &app.auth(),
            "updatePlaylist",
            &format!("playlistId={id}&name=Other&songIndexToRemove=7&songIdToAdd={first}"),
        )
        .await;
    assert_eq!(updated["status"], "failed", "{updated}");
    let after = app
        .library
        .playlists()
        .get(&app.caller, &playlist_id)
        .await
        .unwrap();
    assert_eq!(after.track_ids, before.track_ids);
    assert_eq!(
        (after.name.as_str(), after.version),
        ("Keep", before.version)
    );

    // Valid edits still work, each add and remove one version.
    app.json(
        "updatePlaylist",
        &format!("playlistId={id}&name=Trip&songIndexToRemove=0&songIdToAdd={first}"),
    )
    .await;
    let after = app
        .library
        .playlists()
        .get(&app.caller, &playlist_id)
        .await
        .unwrap();
    assert_eq!(after.name, "Trip");
    assert_eq!(after.version, before.version + 2);
    assert_eq!(
        after
            .track_ids
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec![second.clone(), first.clone()]
    );
});
