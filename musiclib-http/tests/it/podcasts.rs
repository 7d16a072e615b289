//! Podcasts through `/api/v1`: a feed on loopback subscribed (the default refusing it first),
//! an episode downloaded and streamed with a byte range, the listener's place, unsubscribing.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::api::App;

async fn serve(server: &MockServer, at: &str, body: Vec<u8>, content_type: &str) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
        .mount(server)
        .await;
}

both_backends!(podcasts_through_the_api, |backend: Backend| async move {
    let server = MockServer::start().await;
    let base = server.uri();
    let wav = musiclib_core::testing::wav_tone(2);
    let feed = format!(
        r#"<rss version="2.0"><channel><title>API Show</title><link>https://example.com/</link>
<item><title>Hello</title><guid>hello</guid><pubDate>Tue, 03 Nov 2026 10:00:00 GMT</pubDate>
<enclosure url="{base}/hello.wav" type="audio/wav" length="{}"/></item></channel></rss>"#,
        wav.len()
    );
    serve(
        &server,
        "/feed.xml",
        feed.into_bytes(),
        "application/rss+xml",
    )
    .await;
    serve(&server, "/hello.wav", wav.clone(), "audio/wav").await;
    let url = format!("{base}/feed.xml");

    // The default settings refuse a feed on a private address, naming the field.
    let strict = App::new(TestLibrary::new(backend).await).await;
    let token = strict.register("ann").await;
    let (status, refused) = strict
        .json(
            "POST",
            "/api/v1/podcasts",
            Some(&token),
            json!({"url": url}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "url");
    assert!(server.received_requests().await.unwrap().is_empty());
    drop(strict);

    let library = TestLibrary::builder(backend)
        .config(|config| config.allow_private_urls = true)
        .build()
        .await;
    let app = App::new(library).await;
    let ann = app.register("ann").await;
    let bob = app.register("bob").await;
    let (status, podcast) = app
        .json(
            "POST",
            "/api/v1/podcasts",
            Some(&ann),
            json!({"url": url, "keep_newest": 5}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{podcast}");
    assert_eq!(podcast["title"], "API Show");
    assert_eq!(podcast["site_url"], "https://example.com/");
    assert_eq!(podcast["keep_newest"], 5);
    let id = podcast["id"].as_str().unwrap().to_string();
    let (status, again) = app
        .json("POST", "/api/v1/podcasts", Some(&bob), json!({"url": url}))
        .await;
    assert_eq!(
        (status, again["id"].as_str()),
        (StatusCode::OK, Some(id.as_str()))
    );

    // keep_newest queued the download: run it, then stream the episode.
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (status, episodes) = app
        .get(
            &format!("/api/v1/podcasts/{id}/episodes?status=downloaded"),
            Some(&bob),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{episodes}");
    assert_eq!(episodes["total"], 1, "{episodes}");
    let episode = &episodes["items"][0];
    let episode_id = episode["id"].as_str().unwrap().to_string();
    let stream_url = episode["stream_url"].as_str().unwrap().to_string();
    let request = Request::get(&stream_url)
        .header(header::AUTHORIZATION, format!("Bearer {bob}"))
        .header(header::RANGE, "bytes=4-11")
        .body(Body::empty())
        .unwrap();
    let (status, headers, body) = app.raw(request).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(body, wav[4..12]);
    assert_eq!(
        headers[header::CONTENT_RANGE],
        format!("bytes 4-11/{}", wav.len()).as_str()
    );

    let (status, _) = app
        .json(
            "PUT",
            &format!("/api/v1/podcast-episodes/{episode_id}/position"),
            Some(&bob),
            json!({"position_ms": 1234}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, read) = app
        .get(
            &format!("/api/v1/podcast-episodes/{episode_id}"),
            Some(&bob),
        )
        .await;
    assert_eq!(read["position_ms"], 1234);
    let (_, theirs) = app
        .get(
            &format!("/api/v1/podcast-episodes/{episode_id}"),
            Some(&ann),
        )
        .await;
    assert_eq!(theirs["position_ms"], json!(null));
    let (status, newest) = app
        .get("/api/v1/podcast-episodes?limit=5", Some(&bob))
        .await;
    assert_eq!(
        (status, newest[0]["id"].as_str()),
        (StatusCode::OK, Some(episode_id.as_str()))
    );

    // Only who subscribed changes or removes it.
    let (status, _) = app
        .json(
            "PATCH",
            &format!("/api/v1/podcasts/{id}"),
            Some(&bob),
            json!({"keep_newest": null}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, changed) = app
        .json(
            "PATCH",
            &format!("/api/v1/podcasts/{id}"),
            Some(&ann),
            json!({"keep_newest": null}),
        )
        .await;
    assert_eq!(
        (status, changed["keep_newest"].clone()),
        (StatusCode::OK, json!(null))
    );
    let (status, _) = app
        .json(
            "DELETE",
            &format!("/api/v1/podcast-episodes/{episode_id}"),
            Some(&ann),
            json!(null),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let request = Request::get(&stream_url)
        .header(header::AUTHORIZATION, format!("Bearer {ann}"))
        .body(Body::empty())
        .unwrap();
    let (status, _, _) = app.raw(request).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "a deleted download does not stream"
    );
    let (status, _) = app
        .json(
            "DELETE",
            &format!("/api/v1/podcasts/{id}"),
            Some(&ann),
            json!(null),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app.get(&format!("/api/v1/podcasts/{id}"), Some(&ann)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
});
