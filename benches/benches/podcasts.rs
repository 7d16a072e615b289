//! Podcasts: a 1,000-episode feed read, and an episode downloaded next to `curl`, on SQLite +
//! local disk and (when the PostgreSQL and S3 test settings are set) PostgreSQL + S3.
//!
//! - Reading the feed alone (`feed::parse`): median of 50.
//! - Subscribing (the feed fetched from a loopback server, read, 1,000 episodes stored), a
//!   refresh where every entry changed (1,000 updates), a refresh where none did (the feed
//!   fetched and read again, nothing written): median of 5 each.
//! - A one-hour episode (57.6 MB) downloaded by the `download_podcast_episode` job (fetched,
//!   hashed, probed, stored) against `curl -o` of the same URL, each 3 times: the ratio of
//!   medians.
//!
//! `cargo bench -p musiclib-benches --bench podcasts`

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use musiclib_core::auth::Caller;
use musiclib_core::domain::Page;
use musiclib_core::podcasts::{EpisodeStatus, NewChannel};
use musiclib_core::testing::{drain_jobs, scale_out_configured, Backend, TestLibrary};

const EPISODES: usize = 1000;

/// A feed of `EPISODES` episodes with descriptions of a realistic length; `edition` changes
/// every title.
fn feed(base: &str, edition: usize) -> String {
    let notes =
        "In this episode we talk about records, rooms and the people who make them. ".repeat(8);
    let mut items = String::new();
    for n in (0..EPISODES).rev() {
        let day = 1 + n % 28;
        let month = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ][n / 28 % 12];
        let year = 2000 + n / (28 * 12);
        items.push_str(&format!(
            r#"<item><title>Episode {n} (edition {edition})</title><guid isPermaLink="false">ep-{n}</guid>
<pubDate>{day:02} {month} {year} 10:00:00 +0000</pubDate><itunes:duration>{}:{:02}:00</itunes:duration>
<itunes:episode>{n}</itunes:episode><description><![CDATA[<p>{notes}</p>]]></description>
<enclosure url="{base}/audio/{n}.mp3" type="audio/mpeg" length="57600000"/></item>
"#,
            n % 2,
            n % 60
        ));
    }
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
<title>A long-running show</title><description>Twenty years of episodes</description>
{items}</channel></rss>"#
    )
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

async fn serve(server: &MockServer, at: &str, body: Vec<u8>, content_type: &str) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
        .mount(server)
        .await;
}

async fn feeds(backend: Backend, name: &str) {
    let server = MockServer::start().await;
    let base = server.uri();
    let library = TestLibrary::builder(backend)
        .config(|config| config.allow_private_urls = true)
        .build()
        .await;
    let caller = Caller {
        user: library
            .accounts()
            .create_user("bench", "bench-password", false)
            .await
            .unwrap(),
    };
    let podcasts = library.podcasts();
    let bytes = feed(&base, 0).len();
    let mut subscribe = Vec::new();
    let mut channels = Vec::new();
    for copy in 0..5 {
        serve(
            &server,
            &format!("/feed-{copy}.xml"),
            feed(&base, 0).into_bytes(),
            "application/rss+xml",
        )
        .await;
        let started = Instant::now();
        let (channel, _) = podcasts
            .subscribe(
                &caller,
                NewChannel {
                    url: format!("{base}/feed-{copy}.xml"),
                    keep_newest: None,
                },
            )
            .await
            .unwrap();
        subscribe.push(started.elapsed());
        assert_eq!(channel.episode_count, EPISODES as i64);
        channels.push(channel.id);
    }
    let mut unchanged = Vec::new();
    for channel in &channels {
        let started = Instant::now();
        let refreshed = podcasts.refresh(&caller, channel).await.unwrap();
        unchanged.push(started.elapsed());
        assert_eq!(refreshed.refresh_error, None);
    }
    let mut changed = Vec::new();
    for (copy, channel) in channels.iter().enumerate() {
        server.reset().await;
        serve(
            &server,
            &format!("/feed-{copy}.xml"),
            feed(&base, copy + 1).into_bytes(),
            "application/rss+xml",
        )
        .await;
        let started = Instant::now();
        podcasts.refresh(&caller, channel).await.unwrap();
        changed.push(started.elapsed());
    }
    let first = podcasts
        .episodes(&caller, &channels[0], None, Page::clamped(1, 0, 1))
        .await
        .unwrap();
    assert!(
        first.items[0].title.contains("edition 1"),
        "{:?}",
        first.items[0].title
    );
    println!(
        "podcasts/{name}: a {EPISODES}-episode feed ({:.1} MB): subscribe (fetch, read, store {EPISODES}) median {:.0} ms; refresh, every entry changed, median {:.0} ms; refresh, nothing changed, median {:.0} ms",
        bytes as f64 / 1e6,
        median(subscribe),
        median(changed),
        median(unchanged)
    );
}

async fn download(backend: Backend, name: &str) {
    let server = MockServer::start().await;
    let base = server.uri();
    // One hour of 16-bit mono at 8 kHz: the size of an hour of MP3 at 128 kbit/s.
    let audio = musiclib_core::testing::wav_tone(3600);
    let size = audio.len();
    serve(&server, "/episode.wav", audio, "audio/wav").await;
    let item = format!(
        r#"<rss version="2.0"><channel><title>Download</title><item><title>Long</title><guid>long</guid>
<enclosure url="{base}/episode.wav" type="audio/wav" length="{size}"/></item></channel></rss>"#
    );
    serve(
        &server,
        "/feed.xml",
        item.into_bytes(),
        "application/rss+xml",
    )
    .await;
    let library = TestLibrary::builder(backend)
        .config(|config| config.allow_private_urls = true)
        .build()
        .await;
    let caller = Caller {
        user: library
            .accounts()
            .create_user("bench", "bench-password", false)
            .await
            .unwrap(),
    };
    let podcasts = library.podcasts();
    let (channel, _) = podcasts
        .subscribe(
            &caller,
            NewChannel {
                url: format!("{base}/feed.xml"),
                keep_newest: None,
            },
        )
        .await
        .unwrap();
    let episode = podcasts
        .episodes(&caller, &channel.id, None, Page::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let scratch = tempfile::tempdir().unwrap();
    let mut ours = Vec::new();
    let mut curl = Vec::new();
    for _ in 0..3 {
        let target = scratch.path().join("episode.wav");
        let started = Instant::now();
        let status = tokio::process::Command::new("curl")
            .args(["-sS", "-o"])
            .arg(&target)
            .arg(format!("{base}/episode.wav"))
            .status()
            .await
            .unwrap();
        curl.push(started.elapsed());
        assert!(status.success());
        assert_eq!(std::fs::metadata(&target).unwrap().len(), size as u64);

        let started = Instant::now();
        podcasts.download(&caller, &episode.id).await.unwrap();
        drain_jobs(&library).await;
        ours.push(started.elapsed());
        let done = podcasts.episode(&caller, &episode.id).await.unwrap();
        assert_eq!(done.status, EpisodeStatus::Downloaded, "{:?}", done.error);
        podcasts.delete_episode(&caller, &episode.id).await.unwrap();
    }
    let (ours, curl) = (median(ours), median(curl));
    println!(
        "podcasts/{name}: a {:.1} MB episode: the download job (fetch, hash, probe, store) median {ours:.0} ms, curl -o median {curl:.0} ms: ratio {:.2}",
        size as f64 / 1e6,
        ours / curl
    );
}

fn podcast_benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let document = feed("http://127.0.0.1:1", 0);
    let mut reads = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let feed = musiclib_core::podcasts::feed::parse(&document).unwrap();
        reads.push(started.elapsed());
        assert_eq!(feed.items.len(), EPISODES);
    }
    println!(
        "podcasts: reading a {EPISODES}-episode feed ({:.1} MB) alone: median {:.1} ms",
        document.len() as f64 / 1e6,
        median(reads)
    );
    let _ = c;
    let mut backends = vec![(Backend::Embedded, "sqlite")];
    if scale_out_configured() {
        backends.push((Backend::ScaleOut, "postgres"));
    }
    for (backend, name) in backends {
        runtime.block_on(feeds(backend, name));
        runtime.block_on(download(backend, name));
    }
}

criterion_group!(benches, podcast_benches);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
