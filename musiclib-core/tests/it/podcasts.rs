//! Podcasts: a feed served on loopback subscribed, refreshed, an episode downloaded and
//! streamed; private addresses refused by default; feeds that attack the parser refused;
//! who may change what.

use musiclib_core::auth::Caller;
use musiclib_core::domain::Page;
use musiclib_core::media::Want;
use musiclib_core::podcasts::{EpisodeStatus, NewChannel};
use musiclib_core::testing::drain_jobs;
use musiclib_core::{ErrorKind, Library};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::backend_test;
use crate::support::*;

/// An RSS feed of `episodes` (guid, title, day of November, enclosure path), newest first.
fn feed(server: &str, title: &str, episodes: &[(&str, &str, u32, &str)]) -> String {
    let items: String = episodes
        .iter()
        .map(|(guid, title, day, enclosure)| {
            format!(
                r#"<item><title>{title}</title><guid>{guid}</guid>
                <pubDate>{day:02} Nov 2026 10:00:00 +0000</pubDate>
                <itunes:duration>3</itunes:duration>
                <enclosure url="{server}{enclosure}" type="audio/wav" length="1000"/>
                <podcast:transcript url="{server}/{guid}.vtt" type="text/vtt"/></item>"#
            )
        })
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:podcast="https://podcastindex.org/namespace/1.0">
<channel><title>{title}</title><description>About &lt;b&gt;things&lt;/b&gt; &amp;amp; more</description>
<itunes:image href="{server}/cover.png"/>{items}</channel></rss>"#
    )
}

async fn serve(server: &MockServer, at: &str, body: impl Into<Vec<u8>>, content_type: &str) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body.into(), content_type))
        .mount(server)
        .await;
}

async fn private_library(backend: Backend) -> TestLibrary {
    TestLibrary::builder(backend)
        .config(|config| config.allow_private_urls = true)
        .build()
        .await
}

fn png() -> Vec<u8> {
    musiclib_core::testing::png_claiming(4, 4)
}

async fn admin(library: &Library) -> Caller {
    Caller {
        user: library
            .accounts()
            .create_user("root", "root-password", true)
            .await
            .unwrap(),
    }
}

backend_test! {
    async fn a_feed_is_subscribed_refreshed_and_its_episodes_downloaded_and_streamed(backend: Backend) {
        let server = MockServer::start().await;
        let base = server.uri();
        let wav = musiclib_core::testing::wav_tone(3);
        serve(&server, "/one.wav", wav.clone(), "audio/wav").await;
        serve(&server, "/two.wav", musiclib_core::testing::wav_tone(2), "audio/wav").await;
        serve(&server, "/cover.png", png(), "image/png").await;
        serve(&server, "/feed.xml", feed(&base, "Loopback FM", &[("ep-1", "First", 1, "/one.wav")]), "application/rss+xml").await;

        let library = private_library(backend).await;
        let alice = user(&library, "alice").await;
        let podcasts = library.podcasts();
        let url = format!("{base}/feed.xml");
        let (channel, created) = podcasts
            .subscribe(&alice, NewChannel { url: url.clone(), keep_newest: None })
            .await
            .unwrap();
        assert!(created);
        assert_eq!(channel.title, "Loopback FM");
        assert_eq!(channel.description.as_deref(), Some("About things & more"));
        assert_eq!((channel.episode_count, channel.downloaded_count), (1, 0));
        assert!(channel.has_cover, "the feed's image is stored");
        let cover = podcasts.cover(&channel.id).await.unwrap();
        assert_eq!(cover.mime_type, "image/png");
        // Subscribing again (anyone) finds the same channel.
        let bob = user(&library, "bob").await;
        let (again, created) = podcasts
            .subscribe(&bob, NewChannel { url: url.clone(), keep_newest: None })
            .await
            .unwrap();
        assert_eq!((again.id.clone(), created), (channel.id.clone(), false));

        let episodes = podcasts.episodes(&alice, &channel.id, None, Page::default()).await.unwrap();
        assert_eq!(episodes.total, 1);
        let first = &episodes.items[0];
        assert_eq!(first.title, "First");
        assert_eq!(first.status, EpisodeStatus::New);
        assert_eq!(first.duration_ms, Some(3000));
        assert_eq!(first.transcript_url.as_deref(), Some(format!("{base}/ep-1.vtt").as_str()));
        assert_eq!(podcasts.episode_audio(&alice, &first.id).await.unwrap_err().kind(), ErrorKind::Conflict);

        // Downloaded by a job, then streamed like a track: byte ranges of the stored file.
        let job = podcasts.download(&bob, &first.id).await.unwrap();
        assert!(job.is_some());
        assert_eq!(podcasts.episode(&alice, &first.id).await.unwrap().status, EpisodeStatus::Downloading);
        drain_jobs(&library).await;
        let downloaded = podcasts.episode(&alice, &first.id).await.unwrap();
        assert_eq!(downloaded.status, EpisodeStatus::Downloaded, "{:?}", downloaded.error);
        assert_eq!(downloaded.size_bytes, Some(wav.len() as i64));
        assert_eq!(downloaded.mime_type.as_deref(), Some("audio/wav"));
        let audio = podcasts.episode_audio(&alice, &first.id).await.unwrap();
        let head = read_all(library.media().read_audio(&audio, 0..64).await.unwrap()).await;
        assert_eq!(head, wav[..64]);
        let tail = read_all(library.media().read_audio(&audio, 100..wav.len() as u64).await.unwrap()).await;
        assert_eq!(tail, wav[100..]);
        match podcasts.open(&alice, &first.id, &Want::original()).await.unwrap() {
            musiclib_core::media::Delivery::Stored { audio, .. } => assert_eq!(audio.size, wav.len() as u64),
            other => panic!("{other:?}"),
        }
        // Downloading it again is nothing to do.
        assert!(podcasts.download(&bob, &first.id).await.unwrap().is_none());

        // Where each user stopped is their own.
        podcasts.set_position(&alice, &first.id, 1500).await.unwrap();
        assert_eq!(podcasts.episode(&alice, &first.id).await.unwrap().position_ms, Some(1500));
        assert_eq!(podcasts.episode(&bob, &first.id).await.unwrap().position_ms, None);
        assert_eq!(podcasts.set_position(&alice, &first.id, -1).await.unwrap_err().field(), Some("position_ms"));

        // A refresh adds the new episode and leaves the known one as it is.
        server.reset().await;
        serve(&server, "/two.wav", musiclib_core::testing::wav_tone(2), "audio/wav").await;
        serve(&server, "/feed.xml", feed(&base, "Loopback FM", &[("ep-2", "Second", 2, "/two.wav"), ("ep-1", "First (remastered)", 1, "/one.wav")]), "application/rss+xml").await;
        let refreshed = podcasts.refresh(&alice, &channel.id).await.unwrap();
        assert_eq!(refreshed.refresh_error, None);
        assert_eq!((refreshed.episode_count, refreshed.downloaded_count), (2, 1));
        let newest = podcasts.newest(&alice, 10).await.unwrap();
        assert_eq!(newest.iter().map(|e| e.title.as_str()).collect::<Vec<_>>(), ["Second", "First (remastered)"]);
        assert_eq!(newest[1].status, EpisodeStatus::Downloaded, "a changed entry keeps its download");

        // keep_newest 1: the newest is downloaded, the older download deleted.
        let kept = podcasts.set_keep_newest(&alice, &channel.id, Some(1)).await.unwrap();
        assert_eq!(kept.keep_newest, Some(1));
        drain_jobs(&library).await;
        let statuses: Vec<_> = podcasts.newest(&alice, 10).await.unwrap().iter().map(|e| e.status).collect();
        assert_eq!(statuses, [EpisodeStatus::Downloaded]);
        let all = podcasts.episodes(&alice, &channel.id, Some(EpisodeStatus::Deleted), Page::default()).await.unwrap();
        assert_eq!(all.total, 1, "the older one is listed as deleted");

        // A feed that fails later is recorded on the channel, not an error.
        server.reset().await;
        let failed = podcasts.refresh(&alice, &channel.id).await.unwrap();
        assert!(failed.refresh_error.as_deref().unwrap().contains("404"), "{:?}", failed.refresh_error);

        // Only who subscribed (or an admin) changes or removes the channel.
        assert_eq!(podcasts.set_keep_newest(&bob, &channel.id, None).await.unwrap_err().kind(), ErrorKind::Forbidden);
        assert_eq!(podcasts.unsubscribe(&bob, &channel.id).await.unwrap_err().kind(), ErrorKind::Forbidden);
        assert_eq!(podcasts.delete_episode(&bob, &first.id).await.unwrap_err().kind(), ErrorKind::Forbidden);
        let root = admin(&library).await;
        podcasts.unsubscribe(&root, &channel.id).await.unwrap();
        assert_eq!(podcasts.channel(&alice, &channel.id).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(podcasts.episode(&alice, &first.id).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert!(podcasts.channels(&alice).await.unwrap().is_empty());
    }
}

backend_test! {
    async fn by_default_a_feed_on_a_private_address_is_refused(backend: Backend) {
        let server = MockServer::start().await;
        let base = server.uri();
        serve(&server, "/feed.xml", feed(&base, "Home", &[]), "application/rss+xml").await;
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let podcasts = library.podcasts();
        let port = server.address().port();
        for url in [
            format!("{base}/feed.xml"),
            format!("http://localhost:{port}/feed.xml"),
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "http://[::1]/feed".to_string(),
            "file:///etc/passwd".to_string(),
            "gopher://example.com/".to_string(),
        ] {
            let refused = podcasts
                .subscribe(&alice, NewChannel { url: url.clone(), keep_newest: None })
                .await
                .unwrap_err();
            assert_eq!(refused.field(), Some("url"), "{url}: {refused}");
        }
        assert!(server.received_requests().await.unwrap().is_empty(), "nothing reached the private server");
        assert!(podcasts.channels(&alice).await.unwrap().is_empty());
    }
}

backend_test! {
    async fn feeds_that_attack_the_parser_or_are_not_feeds_are_refused(backend: Backend) {
        let server = MockServer::start().await;
        let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE rss [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title></channel></rss>"#;
        serve(&server, "/laughs.xml", laughs, "application/rss+xml").await;
        serve(&server, "/page.html", "<html><body>Not a feed</body></html>", "text/html").await;
        serve(&server, "/huge.xml", vec![b' '; musiclib_core::podcasts::MAX_FEED_BYTES + 1], "application/rss+xml").await;
        let library = private_library(backend).await;
        let alice = user(&library, "alice").await;
        for (at, says) in [
            ("/laughs.xml", "&lol9;"),
            ("/page.html", "not an RSS or Atom feed"),
            ("/huge.xml", "larger than"),
            ("/missing.xml", "404"),
        ] {
            let refused = library
                .podcasts()
                .subscribe(&alice, NewChannel { url: format!("{}{at}", server.uri()), keep_newest: None })
                .await
                .unwrap_err();
            assert_eq!(refused.field(), Some("url"), "{at}");
            assert!(refused.to_string().contains(says), "{at}: {refused}");
        }
        assert!(library.podcasts().channels(&alice).await.unwrap().is_empty(), "nothing stored");
    }
}

backend_test! {
    async fn a_download_that_is_not_audio_or_too_large_fails_with_its_reason(backend: Backend) {
        let server = MockServer::start().await;
        let base = server.uri();
        serve(&server, "/text.wav", "this is not audio at all, only words", "audio/wav").await;
        serve(&server, "/big.wav", musiclib_core::testing::wav_tone(3), "audio/wav").await;
        serve(&server, "/feed.xml", feed(&base, "Broken", &[("a", "Words", 2, "/text.wav"), ("b", "Big", 1, "/big.wav")]), "application/rss+xml").await;
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.allow_private_urls = true;
                config.podcasts.episode_max_bytes = 1000;
            })
            .build()
            .await;
        let alice = user(&library, "alice").await;
        let podcasts = library.podcasts();
        let (channel, _) = podcasts
            .subscribe(&alice, NewChannel { url: format!("{base}/feed.xml"), keep_newest: None })
            .await
            .unwrap();
        let episodes = podcasts.episodes(&alice, &channel.id, None, Page::default()).await.unwrap();
        for episode in &episodes.items {
            podcasts.download(&alice, &episode.id).await.unwrap();
        }
        drain_jobs(&library).await;
        for episode in &episodes.items {
            let failed = podcasts.episode(&alice, &episode.id).await.unwrap();
            assert_eq!(failed.status, EpisodeStatus::Failed, "{}", failed.title);
            let reason = failed.error.unwrap();
            let says = if failed.title == "Words" { "not audio" } else { "PODCAST_EPISODE_MAX_BYTES" };
            assert!(reason.contains(says), "{}: {reason}", failed.title);
        }
    }
}

async fn read_all(
    mut stream: futures::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>,
) -> Vec<u8> {
    use futures::StreamExt;
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    out
}
