//! A mock Subsonic server (wiremock) for tests of the `subsonic` remote source: `ping`,
//! `search3`, `getSong` and `download` answer with the protocol's real JSON shapes.

use serde_json::{json, Value};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A successful Subsonic answer (JSON) carrying `body`'s fields.
pub fn subsonic_ok(body: Value) -> ResponseTemplate {
    let mut answer = json!({"status": "ok", "version": "1.16.1", "type": "navidrome",
        "serverVersion": "0.53.3", "openSubsonic": true});
    if let (Value::Object(answer), Value::Object(extra)) = (&mut answer, body) {
        answer.extend(extra);
    }
    ResponseTemplate::new(200)
        .insert_header("Content-Type", "application/json")
        .set_body_json(json!({ "subsonic-response": answer }))
}

/// A failed Subsonic answer (JSON) with `code` and `message`.
pub fn subsonic_failed(code: i64, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("Content-Type", "application/json")
        .set_body_json(
            json!({"subsonic-response": {"status": "failed", "version": "1.16.1",
            "error": {"code": code, "message": message}}}),
        )
}

/// A song `child` of the Subsonic protocol, by Aurora Lane on Northern Lights.
pub fn subsonic_song(id: &str, title: &str, size: Option<u64>) -> Value {
    let mut song = json!({"id": id, "parent": "al-1", "isDir": false, "title": title,
        "album": "Northern Lights", "artist": "Aurora Lane", "track": 2, "year": 2019,
        "genre": "Ambient", "coverArt": "al-1", "contentType": "audio/flac", "suffix": "flac",
        "duration": 142, "bitRate": 900, "path": "Aurora Lane/Northern Lights/02.flac",
        "albumId": "al-1", "artistId": "ar-1", "type": "music"});
    if let Some(size) = size {
        song["size"] = json!(size);
    }
    song
}

/// A mock Subsonic server (wiremock, the protocol's JSON answers) holding `songs` (id, title, size to advertise); `download`
/// answers `bytes` for each.
pub async fn subsonic_server(songs: &[(&str, &str, Option<u64>)], bytes: &[u8]) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/rest/ping"))
        .respond_with(subsonic_ok(json!({})))
        .mount(&server)
        .await;
    let all: Vec<Value> = songs
        .iter()
        .map(|(id, title, size)| subsonic_song(id, title, *size))
        .collect();
    Mock::given(method("GET"))
        .and(path("/rest/search3"))
        .respond_with(subsonic_ok(json!({"searchResult3": {"song": all}})))
        .mount(&server)
        .await;
    for (id, title, size) in songs {
        Mock::given(method("GET"))
            .and(path("/rest/getSong"))
            .and(query_param("id", *id))
            .respond_with(subsonic_ok(
                json!({"song": subsonic_song(id, title, *size)}),
            ))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/rest/download"))
            .and(query_param("id", *id))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Content-Type", "audio/flac")
                    .set_body_bytes(bytes.to_vec()),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/rest/getSong"))
        .respond_with(subsonic_failed(70, "Song not found"))
        .with_priority(10)
        .mount(&server)
        .await;
    server
}
