//! Podcasts through the protocol: a feed on loopback subscribed, listed (XML valid against
//! the schema), an episode downloaded, streamed by its `streamId` with a byte range, its
//! channel's image, deleted; the default settings refuse a loopback feed.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::Backend;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::both_backends;
use crate::harness::{header_text, Fixture};

async fn serve(server: &MockServer, at: &str, body: Vec<u8>, content_type: &str) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
        .mount(server)
        .await;
}

fn feed(base: &str) -> String {
    format!(
        r#"<?xml version="1.0"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
<channel><title>Loopback Radio</title><description>Talk &amp; tunes</description>
<itunes:author>Ann</itunes:author><itunes:image href="{base}/cover.png"/>
<item><title>Pilot</title><guid>pilot</guid><pubDate>Tue, 03 Nov 2026 10:00:00 GMT</pubDate>
<enclosure url="{base}/pilot.wav" type="audio/wav" length="100"/><description>The first one</description></item>
</channel></rss>"#
    )
}

both_backends!(
    podcasts_through_the_protocol,
    |backend: Backend| async move {
        let server = MockServer::start().await;
        let base = server.uri();
        let wav = musiclib_core::testing::wav_tone(2);
        serve(
            &server,
            "/feed.xml",
            feed(&base).into_bytes(),
            "application/rss+xml",
        )
        .await;
        serve(&server, "/pilot.wav", wav.clone(), "audio/wav").await;
        serve(
            &server,
            "/cover.png",
            musiclib_core::testing::png_claiming(4, 4),
            "image/png",
        )
        .await;

        // The default refuses a feed on a private address, saying why.
        let strict = Fixture::new(backend).await;
        let refused = strict
            .json_as(
                &strict.auth(),
                "createPodcastChannel",
                &format!("url={base}/feed.xml"),
            )
            .await;
        assert_eq!(refused["status"], "failed");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("non-public"),
            "{refused}"
        );
        assert!(server.received_requests().await.unwrap().is_empty());
        drop(strict);

        let app = Fixture::with_config(backend, |config| config.allow_private_urls = true).await;
        let url = format!("{base}/feed.xml");
        let encoded = url.replace(':', "%3A").replace('/', "%2F");
        app.json("createPodcastChannel", &format!("url={encoded}"))
            .await;
        let xml = app.xml("getPodcasts", "").await;
        assert!(xml.contains(r#"title="Loopback Radio""#), "{xml}");
        assert!(xml.contains(r#"status="new""#), "{xml}");
        let listed = app.json("getPodcasts", "").await;
        let channel = &listed["podcasts"]["channel"][0];
        let channel_id = channel["id"].as_str().unwrap().to_string();
        assert!(channel_id.starts_with("pc-"));
        assert_eq!(channel["status"], "completed");
        assert_eq!(channel["coverArt"], channel_id.as_str());
        let episode = &channel["episode"][0];
        let episode_id = episode["id"].as_str().unwrap().to_string();
        assert!(episode_id.starts_with("pe-"));
        assert_eq!(episode["title"], "Pilot");
        assert_eq!(episode["channelId"], channel_id.as_str());
        assert_eq!(episode["description"], "The first one");
        assert_eq!(episode["type"], "podcast");
        assert!(
            episode.get("streamId").is_none(),
            "not downloaded yet: {episode}"
        );
        let bare = app
            .json(
                "getPodcasts",
                &format!("id={channel_id}&includeEpisodes=false"),
            )
            .await;
        let none = &bare["podcasts"]["channel"][0]["episode"];
        assert!(
            none.is_null() || none.as_array().is_some_and(Vec::is_empty),
            "{bare}"
        );

        // Downloaded in the background, then streamed like a song.
        app.json("downloadPodcastEpisode", &format!("id={episode_id}"))
            .await;
        musiclib_core::testing::drain_jobs(&app.library).await;
        let one = app
            .json("getPodcastEpisode", &format!("id={episode_id}"))
            .await;
        let one = &one["podcastEpisode"];
        assert_eq!(one["status"], "completed", "{one}");
        assert_eq!(one["streamId"], episode_id.as_str());
        assert_eq!(one["size"], wav.len());
        app.xml("getNewestPodcasts", "count=5").await;
        let newest = app.json("getNewestPodcasts", "count=5").await;
        assert_eq!(
            newest["newestPodcasts"]["episode"][0]["id"],
            episode_id.as_str()
        );

        let request = Request::get(format!("/rest/stream?{}&id={episode_id}", app.auth()))
            .header(header::RANGE, "bytes=10-19")
            .body(Body::empty())
            .unwrap();
        let (status, headers, body) = app.send_parts(request).await;
        assert_eq!(status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(body, wav[10..20]);
        assert_eq!(header_text(&headers, header::CONTENT_TYPE), "audio/wav");
        let (status, _, body) = app
            .get("download", &format!("{}&id={episode_id}", app.auth()))
            .await;
        assert_eq!((status, body.len()), (StatusCode::OK, wav.len()));
        let (status, content_type, _) = app
            .get("getCoverArt", &format!("{}&id={channel_id}", app.auth()))
            .await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "image/png")
        );

        // A playback report of an episode keeps the listener's place.
        app.json(
            "reportPlayback",
            &format!("mediaId={episode_id}&mediaType=podcast&positionMs=1500&state=paused"),
        )
        .await;
        let place = app
            .library
            .podcasts()
            .episode(
                &app.caller,
                &musiclib_core::EpisodeId::parse(&episode_id[3..]).unwrap(),
            )
            .await
            .unwrap()
            .position_ms;
        assert_eq!(place, Some(1500));

        app.json("refreshPodcasts", "").await;
        app.json("deletePodcastEpisode", &format!("id={episode_id}"))
            .await;
        let deleted = app
            .json("getPodcastEpisode", &format!("id={episode_id}"))
            .await;
        assert_eq!(deleted["podcastEpisode"]["status"], "deleted");
        app.json("deletePodcastChannel", &format!("id={channel_id}"))
            .await;
        let empty = app.json("getPodcasts", "").await;
        assert!(
            empty["podcasts"]
                .get("channel")
                .is_none_or(|c| c.as_array().unwrap().is_empty()),
            "{empty}"
        );
        let missing = app
            .json_as(
                &app.auth(),
                "getPodcastEpisode",
                &format!("id={episode_id}"),
            )
            .await;
        assert_eq!(missing["error"]["code"], 70);
    }
);
