//! Remote sources: search, placeholders, materialization and downloads, through the
//! `subsonic` source against a mock Subsonic server (wiremock, the protocol's real JSON), and
//! through the `remote` source with the real yt-dlp program fetching from a loopback site
//! (its generic extractor, as from any site: YouTube cannot be reached from tests).

use std::time::{Duration, Instant};

use musiclib_core::domain::Availability;
use musiclib_core::remote::{DownloadState, Materialize};
use musiclib_core::testing::{subsonic_failed as failed, subsonic_server, MediaServer};
use musiclib_core::{Config, ErrorKind, Library, TrackId};
use sha2::{Digest, Sha256};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::backend_test;
use crate::support::*;

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac";

fn subsonic_config(server: &MockServer) -> impl FnOnce(&mut Config) + Send + 'static {
    let url = server.uri();
    move |config| {
        config.remote.subsonic = Some(musiclib_core::config::SubsonicSourceConfig {
            url,
            username: "friend".into(),
            password: "app-password".into(),
        });
        config.remote.download_retry.base = Duration::from_millis(10);
        config.remote.download_retry.max = Duration::from_millis(50);
        config.enrichment.coverart_enabled = false;
    }
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn track_count(library: &Library, source: &str) -> i64 {
    let filter = musiclib_core::catalog::TrackFilter {
        source: Some(musiclib_core::domain::Source::parse(source, "source").unwrap()),
        ..Default::default()
    };
    library
        .catalog()
        .list_tracks(&filter, None, Default::default())
        .await
        .expect("count")
        .total
}

/// Runs jobs until the download is over (completed, failed or cancelled), or fails the
/// test.
async fn settle(
    library: &Library,
    caller: &musiclib_core::auth::Caller,
    id: &musiclib_core::DownloadId,
) -> musiclib_core::remote::Download {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        musiclib_core::testing::drain_jobs(library).await;
        let download = library
            .remote()
            .download(caller, id)
            .await
            .expect("download");
        if !download.state.is_live() {
            return download;
        }
        assert!(
            Instant::now() < deadline,
            "the download did not settle: {download:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

backend_test! {
    #[services]
    async fn a_subsonic_source_is_searched_saved_materialized_and_downloaded(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(
            &[("s1", "Polar Drift", Some(bytes.len() as u64)), ("s2", "Drift II", None),
              ("s3", "Flaky", None), ("s4", "Gone", None), ("s5", "Huge", Some(20_000_000_000)),
              ("s6", "Later", None)],
            &bytes,
        )
        .await;
        let library = TestLibrary::builder(backend).config(subsonic_config(&server)).build().await;
        let ann = user(&library, "ann").await;
        let bob = user(&library, "bob").await;
        let remote = library.remote();

        // The registry and a search: hits not in the library yet.
        let sources = remote.sources().await.unwrap();
        let subsonic = sources.iter().find(|source| source.name == "subsonic").unwrap();
        assert_eq!((subsonic.enabled, subsonic.available), (true, Some(true)), "{subsonic:?}");
        let ytdlp = sources.iter().find(|source| source.name == "remote").unwrap();
        assert_eq!((ytdlp.enabled, ytdlp.available), (false, None));
        assert!(ytdlp.detail.as_deref().unwrap().contains("REMOTE_ENABLED"));
        let found = remote.search(&ann, "drift", None).await.unwrap();
        assert_eq!(found.sources.len(), 1);
        assert!(found.sources[0].ok, "{found:?}");
        let s1 = found.hits.iter().find(|hit| hit.hit.source_id == "s1").unwrap();
        assert!(!s1.in_library && s1.track_id.is_none());
        assert_eq!(s1.hit.album_source_id.as_deref(), Some("al-1"));

        // Saving a hit: a placeholder whose artist and album carry the remote identity;
        // saving it again answers the same track.
        let saved = remote.save(&ann, "subsonic", "s1").await.unwrap();
        assert!(saved.created);
        let track = saved.track;
        assert_eq!(track.availability, Availability::Placeholder);
        assert_eq!(track.storage_uri, "");
        assert_eq!(track.title, "Polar Drift");
        assert_eq!(track.source.as_str(), "subsonic");
        assert_eq!(track.duration_ms, Some(142_000));
        let artist = library.catalog().get_artist(track.artist_id.as_ref().unwrap()).await.unwrap();
        assert_eq!(
            (artist.remote_source.as_deref(), artist.remote_source_id.as_deref()),
            (Some("subsonic"), Some("ar-1"))
        );
        let album = library.catalog().get_album(track.album_id.as_ref().unwrap()).await.unwrap();
        assert_eq!(album.remote_source_id.as_deref(), Some("al-1"));
        let again = remote.save(&bob, "subsonic", "s1").await.unwrap();
        assert!(!again.created);
        assert_eq!(again.track.id, track.id);
        let found = remote.search(&ann, "drift", None).await.unwrap();
        let s1 = found.hits.iter().find(|hit| hit.hit.source_id == "s1").unwrap();
        assert!(s1.in_library);
        assert_eq!(s1.track_id.as_ref(), Some(&track.id));
        assert_eq!(s1.availability, Some(Availability::Placeholder));

        // Ten concurrent saves of one hit: one track.
        let saves = (0..10).map(|_| {
            let library = library.library.clone();
            let ann = ann.clone();
            tokio::spawn(async move { library.remote().save(&ann, "subsonic", "s2").await.unwrap() })
        });
        let saved: Vec<_> = futures::future::join_all(saves).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(saved.iter().filter(|saved| saved.created).count(), 1);
        let first = saved_id(&saved[0]);
        assert!(saved.iter().all(|each| each.track.id == first));
        assert_eq!(track_count(&library, "subsonic").await, 2);

        // Ten concurrent materializations: one job; it fills the same track in place.
        let materializes = (0..10).map(|_| {
            let library = library.library.clone();
            let ann = ann.clone();
            let id = track.id.clone();
            tokio::spawn(async move { library.remote().materialize(&ann, &id).await.unwrap() })
        });
        let mut jobs = std::collections::HashSet::new();
        for answer in futures::future::join_all(materializes).await {
            match answer.unwrap() {
                Materialize::Queued { job_id, .. } => jobs.insert(job_id),
                other => panic!("{other:?}"),
            };
        }
        assert_eq!(jobs.len(), 1);
        musiclib_core::testing::drain_jobs(&library).await;
        let filled = library.catalog().get_track(&track.id).await.unwrap();
        assert_eq!(filled.availability, Availability::Available);
        assert_eq!(filled.format.as_deref(), Some("flac"));
        assert_eq!(filled.content_sha256.as_deref(), Some(sha256(&bytes).as_str()));
        assert_eq!(filled.size_bytes, Some(bytes.len() as i64));
        assert_eq!(filled.title, "Polar Drift");
        let stored = musiclib_core::testing::blob_bytes(&library, &filled.storage_uri).await;
        assert_eq!(sha256(&stored), sha256(&bytes));
        assert!(matches!(remote.materialize(&ann, &track.id).await.unwrap(), Materialize::Ready(_)));
        // Enrichment ran after the fill (drained with it).
        assert_ne!(
            library.catalog().get_track(&track.id).await.unwrap().metadata_status.as_str(),
            "pending"
        );
        // Nothing left in staging.
        assert!(!musiclib_core::testing::staging_dir(&library).join(format!("fetch-{}", track.id)).exists());

        // Downloading a hit the library has with audio answers it, completed, with no job.
        let had = remote.create_download(&ann, "subsonic", "s1").await.unwrap();
        assert!(!had.created);
        assert_eq!(had.download.state, DownloadState::Completed);
        assert!(had.download.already_in_library && had.download.job_id.is_none());
        assert_eq!(had.download.track_id, track.id);

        // A download of a saved placeholder fills it; a second request while it is queued
        // answers the same download.
        let new = remote.create_download(&ann, "subsonic", "s2").await.unwrap();
        assert!(new.created);
        assert_eq!(new.download.state, DownloadState::Queued);
        let same = remote.create_download(&ann, "subsonic", "s2").await.unwrap();
        assert!(!same.created);
        assert_eq!(same.download.id, new.download.id);
        let done = settle(&library, &ann, &new.download.id).await;
        assert_eq!(done.state, DownloadState::Completed, "{done:?}");
        assert_eq!(done.percent(), Some(100.0));
        assert_eq!(done.attempts, 1);
        assert!(done.finished_at.is_some());
        let listed = remote.downloads(&ann, Default::default()).await.unwrap();
        assert_eq!(listed.total, 2);
        assert_eq!(listed.items[0].id, new.download.id, "newest first");

        // A failure the source may get over is retried with backoff.
        let flaky_mock = Mock::given(method("GET"))
            .and(path("/rest/download"))
            .and(query_param("id", "s3"))
            .respond_with(ResponseTemplate::new(503))
            .up_to_n_times(1)
            .with_priority(1)
            .mount_as_scoped(&server)
            .await;
        let flaky = remote.create_download(&ann, "subsonic", "s3").await.unwrap().download;
        musiclib_core::testing::drain_jobs(&library).await;
        let retrying = remote.download(&ann, &flaky.id).await.unwrap();
        assert_eq!(retrying.state, DownloadState::Retrying, "{retrying:?}");
        assert!(retrying.next_retry_at.is_some());
        assert!(retrying.error.as_deref().unwrap().contains("503"), "{retrying:?}");
        let done = settle(&library, &ann, &flaky.id).await;
        assert_eq!(done.state, DownloadState::Completed, "{done:?}");
        assert_eq!(done.attempts, 2);
        drop(flaky_mock);

        // A permanent failure (the item is gone) is not retried.
        let _gone_mock = Mock::given(method("GET"))
            .and(path("/rest/download"))
            .and(query_param("id", "s4"))
            .respond_with(failed(70, "Song not found"))
            .with_priority(1)
            .mount_as_scoped(&server)
            .await;
        let gone = remote.create_download(&ann, "subsonic", "s4").await.unwrap().download;
        let failed_download = settle(&library, &ann, &gone.id).await;
        assert_eq!(failed_download.state, DownloadState::Failed);
        assert_eq!(failed_download.attempts, 1);
        assert!(failed_download.error.as_deref().unwrap().contains("not found"), "{failed_download:?}");

        // Over MAX_UPLOAD_BYTES by the source's word: refused before anything is stored.
        let tracks_before = track_count(&library, "subsonic").await;
        let error = remote.create_download(&ann, "subsonic", "s5").await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::TooLarge);
        assert_eq!(track_count(&library, "subsonic").await, tracks_before);

        // A queued download cancelled never runs; the placeholder stays.
        let later = remote.create_download(&ann, "subsonic", "s6").await.unwrap().download;
        assert_eq!(
            remote.cancel_download(&bob, &later.id).await.unwrap_err().kind(),
            ErrorKind::NotFound,
            "another user's download does not exist for them"
        );
        let cancelled = remote.cancel_download(&ann, &later.id).await.unwrap();
        assert_eq!(cancelled.state, DownloadState::Cancelled);
        musiclib_core::testing::drain_jobs(&library).await;
        let cancelled = remote.download(&ann, &later.id).await.unwrap();
        assert_eq!(cancelled.state, DownloadState::Cancelled);
        let placeholder = library.catalog().get_track(&cancelled.track_id).await.unwrap();
        assert_eq!(placeholder.availability, Availability::Placeholder);
        assert_eq!(
            remote.cancel_download(&ann, &later.id).await.unwrap_err().kind(),
            ErrorKind::Conflict
        );
        assert_eq!(remote.download(&bob, &later.id).await.unwrap_err().kind(), ErrorKind::NotFound);

        // Bad input is refused, naming the field, and changes nothing.
        let before = (track_count(&library, "subsonic").await, remote.downloads(&ann, Default::default()).await.unwrap().total);
        for (source, source_id, kind) in [
            ("nope", "s1", ErrorKind::InvalidInput),
            ("upload", "s1", ErrorKind::InvalidInput),
            ("remote", "abc", ErrorKind::Conflict),
            ("subsonic", "../etc/passwd", ErrorKind::InvalidInput),
            ("subsonic", "$(touch /tmp/pwned)", ErrorKind::InvalidInput),
            ("subsonic", "a;b", ErrorKind::InvalidInput),
            ("subsonic", "-x", ErrorKind::InvalidInput),
            ("subsonic", "", ErrorKind::InvalidInput),
            ("subsonic", "unknown-id", ErrorKind::NotFound),
        ] {
            let save = remote.save(&ann, source, source_id).await.unwrap_err();
            assert_eq!(save.kind(), kind, "{source} {source_id}: {save}");
            let download = remote.create_download(&ann, source, source_id).await.unwrap_err();
            assert_eq!(download.kind(), kind, "{source} {source_id}: {download}");
        }
        let after = (track_count(&library, "subsonic").await, remote.downloads(&ann, Default::default()).await.unwrap().total);
        assert_eq!(before, after);
        assert!(!std::path::Path::new("/tmp/pwned").exists());
    }
}

fn saved_id(saved: &musiclib_core::remote::SavedTrack) -> TrackId {
    saved.track.id.clone()
}

backend_test! {
    #[services]
    async fn a_subsonic_source_that_goes_down_degrades_and_downloads_retry(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None)], &bytes).await;
        let library = TestLibrary::builder(backend).config(subsonic_config(&server)).build().await;
        let ann = user(&library, "ann").await;
        let remote = library.remote();
        let saved = remote.save(&ann, "subsonic", "s1").await.unwrap();
        let download = remote.create_download(&ann, "subsonic", "s1").await.unwrap().download;
        // The server falls over: everything answers 503 from now on. (The real server going
        // away is tested binary to binary, musiclib-bin/tests/remote.rs.)
        server.reset().await;
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;

        // Search answers, saying the source failed; one-source search is unavailable.
        let found = remote.search(&ann, "drift", None).await.unwrap();
        assert!(!found.sources[0].ok);
        assert!(found.sources[0].error.as_deref().unwrap().contains("503"), "{found:?}");
        assert_eq!(
            remote.search_source(&ann, "subsonic", "drift", None).await.unwrap_err().kind(),
            ErrorKind::Unavailable
        );
        let info = remote.sources().await.unwrap();
        assert_eq!(info.iter().find(|source| source.name == "subsonic").unwrap().available, Some(false));

        // The download fails for now and is retried, the track still a placeholder.
        musiclib_core::testing::drain_jobs(&library).await;
        let retrying = remote.download(&ann, &download.id).await.unwrap();
        assert_eq!(retrying.state, DownloadState::Retrying, "{retrying:?}");
        assert!(retrying.error.as_deref().unwrap().contains("503"), "{retrying:?}");
        assert!(retrying.next_retry_at.is_some());
        assert_eq!(
            library.catalog().get_track(&saved.track.id).await.unwrap().availability,
            Availability::Placeholder
        );
    }
}

/// The yt-dlp program the README test command installs.
fn ytdlp() -> std::path::PathBuf {
    std::path::PathBuf::from(musiclib_core::testing::service_env("MUSICLIB_TEST_YTDLP"))
}

fn ytdlp_config(
    site: &MediaServer,
    max_bytes: Option<u64>,
) -> impl FnOnce(&mut Config) + Send + 'static {
    let watch_url = format!("{}/media/{{id}}", site.base);
    let program = ytdlp();
    move |config| {
        let mut ytdlp = musiclib_core::config::YtDlpConfig::new(program);
        ytdlp.watch_url = watch_url;
        ytdlp.min_interval = Duration::ZERO;
        config.remote.ytdlp = Some(ytdlp);
        config.remote.download_retry.base = Duration::from_millis(10);
        config.remote.download_retry.max = Duration::from_millis(50);
        config.enrichment.coverart_enabled = false;
        if let Some(max_bytes) = max_bytes {
            config.max_upload_bytes = max_bytes;
        }
    }
}

backend_test! {
    #[services]
    async fn the_ytdlp_source_downloads_retries_refuses_and_cancels(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let site = MediaServer::start().await;
        for name in ["song-ok.flac", "flaky.flac", "vanishing.flac", "slow.flac"] {
            site.add(name, bytes.clone(), "audio/flac");
        }
        let library = TestLibrary::builder(backend).config(ytdlp_config(&site, None)).build().await;
        let ann = user(&library, "ann").await;
        let remote = library.remote();
        let registry = remote.sources().await.unwrap();
        let source = registry.iter().find(|source| source.name == "remote").unwrap();
        assert_eq!(source.available, Some(true), "{source:?}");

        // Metadata through yt-dlp's generic extractor; a download fills the placeholder with
        // the exact bytes, reporting progress on the way.
        let saved = remote.save(&ann, "remote", "song-ok.flac").await.unwrap();
        assert!(saved.created);
        assert_eq!(saved.track.title, "song-ok");
        assert_eq!(saved.track.source.as_str(), "remote");
        let download = remote.create_download(&ann, "remote", "song-ok.flac").await.unwrap().download;
        let done = settle(&library, &ann, &download.id).await;
        assert_eq!(done.state, DownloadState::Completed, "{done:?}");
        assert_eq!(done.bytes_downloaded, Some(bytes.len() as i64), "{done:?}");
        assert_eq!(done.bytes_total, Some(bytes.len() as i64));
        let track = library.catalog().get_track(&saved.track.id).await.unwrap();
        assert_eq!(track.availability, Availability::Available);
        assert_eq!(track.content_sha256.as_deref(), Some(sha256(&bytes).as_str()));
        assert_eq!(track.format.as_deref(), Some("flac"));

        // A server error is retried, and the retry works.
        let flaky = remote.save(&ann, "remote", "flaky.flac").await.unwrap();
        site.fail("flaky.flac", 1);
        let download = remote.create_download(&ann, "remote", "flaky.flac").await.unwrap().download;
        musiclib_core::testing::drain_jobs(&library).await;
        let retrying = remote.download(&ann, &download.id).await.unwrap();
        assert_eq!(retrying.state, DownloadState::Retrying, "{retrying:?}");
        assert!(retrying.error.as_deref().unwrap().contains("500"), "{retrying:?}");
        let done = settle(&library, &ann, &download.id).await;
        assert_eq!(done.state, DownloadState::Completed, "{done:?}");
        assert_eq!(done.attempts, 2);
        assert_eq!(
            library.catalog().get_track(&flaky.track.id).await.unwrap().content_sha256.as_deref(),
            Some(sha256(&bytes).as_str())
        );

        // A 404 is permanent: one attempt, the reason kept.
        remote.save(&ann, "remote", "vanishing.flac").await.unwrap();
        site.remove("vanishing.flac");
        let download = remote.create_download(&ann, "remote", "vanishing.flac").await.unwrap().download;
        let failed = settle(&library, &ann, &download.id).await;
        assert_eq!(failed.state, DownloadState::Failed, "{failed:?}");
        assert_eq!(failed.attempts, 1);
        assert!(failed.error.as_deref().unwrap().contains("404"), "{failed:?}");
        // Saving what the site does not have is not found.
        assert_eq!(
            remote.save(&ann, "remote", "never-there.flac").await.unwrap_err().kind(),
            ErrorKind::NotFound
        );

        // Cancelling a running download kills yt-dlp and leaves nothing behind.
        site.slow("slow.flac", 64 * 1024);
        let slow = remote.save(&ann, "remote", "slow.flac").await.unwrap();
        let download = remote.create_download(&ann, "remote", "slow.flac").await.unwrap().download;
        let worker = {
            let library = library.library.clone();
            tokio::spawn(async move { musiclib_core::testing::drain_jobs(&library).await })
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = remote.download(&ann, &download.id).await.unwrap();
            if now.state == DownloadState::Downloading && now.bytes_downloaded.unwrap_or(0) > 0 {
                assert!(now.bytes_total.is_some() && now.percent().unwrap() < 100.0, "{now:?}");
                break;
            }
            assert!(Instant::now() < deadline, "no progress seen: {now:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        remote.cancel_download(&ann, &download.id).await.unwrap();
        // (A hang guard: the slow download would take far longer.)
        tokio::time::timeout(Duration::from_secs(60), worker).await.expect("the job stops").unwrap();
        let cancelled = remote.download(&ann, &download.id).await.unwrap();
        assert_eq!(cancelled.state, DownloadState::Cancelled);
        let job = musiclib_core::testing::queue(&library).get(cancelled.job_id.as_ref().unwrap()).await.unwrap();
        assert_eq!(job.error.as_deref(), Some("cancelled by the user"));
        assert_eq!(job.attempts, 1, "a cancellation is not retried");
        assert_eq!(
            library.catalog().get_track(&slow.track.id).await.unwrap().availability,
            Availability::Placeholder
        );
        let staging = musiclib_core::testing::staging_dir(&library);
        assert!(!staging.join(format!("fetch-{}", slow.track.id)).exists());
        assert!(
            musiclib_core::testing::blob_keys(&library, "audio/").await.iter().all(|key| !key.contains(slow.track.id.as_str())),
            "no blob for a cancelled download"
        );
    }
}

backend_test! {
    #[services]
    async fn a_ytdlp_download_over_the_limit_fails_and_stores_nothing(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let site = MediaServer::start().await;
        site.add("big.flac", bytes.clone(), "audio/flac");
        let limit = bytes.len() as u64 / 2;
        let library = TestLibrary::builder(backend).config(ytdlp_config(&site, Some(limit))).build().await;
        let ann = user(&library, "ann").await;
        let remote = library.remote();
        let saved = remote.save(&ann, "remote", "big.flac").await.unwrap();
        let download = remote.create_download(&ann, "remote", "big.flac").await.unwrap().download;
        let failed = settle(&library, &ann, &download.id).await;
        assert_eq!(failed.state, DownloadState::Failed, "{failed:?}");
        assert_eq!(failed.attempts, 1, "too large is permanent");
        assert!(failed.error.as_deref().unwrap().contains("MAX_UPLOAD_BYTES"), "{failed:?}");
        assert_eq!(
            library.catalog().get_track(&saved.track.id).await.unwrap().availability,
            Availability::Placeholder
        );
        assert!(musiclib_core::testing::blob_keys(&library, "audio/").await.is_empty());
    }
}

/// The jobs table row of a job: its kind and state.
async fn job_of(library: &Library, job: &musiclib_core::JobId) -> musiclib_core::jobs::Job {
    musiclib_core::testing::queue(library)
        .get(job)
        .await
        .unwrap()
}

backend_test! {
    #[services]
    async fn one_users_cancel_leaves_the_others_fetch_alone(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None), ("s2", "Drift II", None), ("s3", "Gone", None)], &bytes).await;
        let library = TestLibrary::builder(backend).config(subsonic_config(&server)).build().await;
        let ann = user(&library, "ann").await;
        let bob = user(&library, "bob").await;
        let remote = library.remote();

        // Two users download one hit: one job; ann cancels, bob's download goes on.
        let anns = remote.create_download(&ann, "subsonic", "s1").await.unwrap().download;
        let bobs = remote.create_download(&bob, "subsonic", "s1").await.unwrap().download;
        assert_ne!(anns.id, bobs.id);
        assert_eq!(anns.job_id, bobs.job_id, "one fetch per track");
        let cancelled = remote.cancel_download(&ann, &anns.id).await.unwrap();
        assert_eq!(cancelled.state, DownloadState::Cancelled);
        let bobs_now = remote.download(&bob, &bobs.id).await.unwrap();
        assert_eq!(bobs_now.state, DownloadState::Queued, "{bobs_now:?}");
        let done = settle(&library, &bob, &bobs.id).await;
        assert_eq!(done.state, DownloadState::Completed, "{done:?}");
        assert_eq!(remote.download(&ann, &anns.id).await.unwrap().state, DownloadState::Cancelled);
        assert_eq!(
            library.catalog().get_track(&done.track_id).await.unwrap().availability,
            Availability::Available
        );

        // A download joined by a materialization: cancelling the download leaves the
        // materialization's fetch running.
        let download = remote.create_download(&bob, "subsonic", "s2").await.unwrap().download;
        let job = download.job_id.clone().unwrap();
        match remote.materialize(&ann, &download.track_id).await.unwrap() {
            Materialize::Queued { job_id, .. } => assert_eq!(job_id, job),
            other => panic!("{other:?}"),
        }
        assert_eq!(job_of(&library, &job).await.kind, "materialize_track");
        remote.cancel_download(&bob, &download.id).await.unwrap();
        assert_eq!(job_of(&library, &job).await.state, musiclib_core::jobs::JobState::Queued);
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(job_of(&library, &job).await.state, musiclib_core::jobs::JobState::Succeeded);
        assert_eq!(
            library.catalog().get_track(&download.track_id).await.unwrap().availability,
            Availability::Available
        );
        assert_eq!(remote.download(&bob, &download.id).await.unwrap().state, DownloadState::Cancelled);

        // When every download of a job is cancelled, the job stops.
        let anns = remote.create_download(&ann, "subsonic", "s3").await.unwrap().download;
        let bobs = remote.create_download(&bob, "subsonic", "s3").await.unwrap().download;
        remote.cancel_download(&ann, &anns.id).await.unwrap();
        remote.cancel_download(&bob, &bobs.id).await.unwrap();
        let job = job_of(&library, anns.job_id.as_ref().unwrap()).await;
        assert_eq!(job.state, musiclib_core::jobs::JobState::Failed);
        assert_eq!(job.attempts, 0, "it never ran");
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(
            library.catalog().get_track(&anns.track_id).await.unwrap().availability,
            Availability::Placeholder
        );
        // A new download of it queues a fresh fetch.
        let again = remote.create_download(&ann, "subsonic", "s3").await.unwrap();
        assert!(again.created);
        assert_ne!(again.download.job_id, anns.job_id);
        assert_eq!(settle(&library, &ann, &again.download.id).await.state, DownloadState::Completed);
    }
}

backend_test! {
    #[services]
    async fn concurrent_downloads_of_one_hit_by_one_user_make_one(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None)], &bytes).await;
        let library = TestLibrary::builder(backend).config(subsonic_config(&server)).build().await;
        let ann = user(&library, "ann").await;
        let creates = (0..10).map(|_| {
            let library = library.library.clone();
            let ann = ann.clone();
            tokio::spawn(async move { library.remote().create_download(&ann, "subsonic", "s1").await.unwrap() })
        });
        let created: Vec<_> = futures::future::join_all(creates).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(created.iter().filter(|new| new.created).count(), 1);
        let first = &created[0].download;
        assert!(created.iter().all(|new| new.download.id == first.id && new.download.job_id == first.job_id));
        let listed = library.remote().downloads(&ann, Default::default()).await.unwrap();
        assert_eq!(listed.total, 1);
        let fetch_jobs = musiclib_core::testing::execute(
            &library,
            "UPDATE jobs SET updated_at = updated_at WHERE dedup_key = $1",
            &[&format!("fetch:{}", first.track_id)],
        )
        .await;
        assert_eq!(fetch_jobs, 1, "one job");
        musiclib_core::testing::drain_jobs(&library).await;
        let done = library.remote().download(&ann, &first.id).await.unwrap();
        assert_eq!(done.state, DownloadState::Completed, "{done:?}");
    }
}

backend_test! {
    #[services]
    async fn a_subsonic_source_authenticates_with_an_api_key(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None)], &bytes).await;
        // The key "revoked" is refused as OpenSubsonic does (44: invalid API key).
        Mock::given(query_param("apiKey", "revoked"))
            .respond_with(failed(44, "Invalid API key"))
            .with_priority(1)
            .mount(&server)
            .await;
        let with_key = |key: &'static str| {
            let base = subsonic_config(&server);
            move |config: &mut Config| {
                base(config);
                let source = config.remote.subsonic.as_mut().unwrap();
                (source.username, source.password) = (String::new(), String::new());
                config.remote.subsonic_api_key = Some(key.into());
            }
        };
        let library = TestLibrary::builder(backend).config(with_key("friend-key")).build().await;
        let ann = user(&library, "ann").await;
        let remote = library.remote();
        let info = remote.sources().await.unwrap();
        let subsonic = info.iter().find(|source| source.name == "subsonic").unwrap();
        assert_eq!(subsonic.available, Some(true), "{subsonic:?}");
        assert!(!subsonic.detail.as_deref().unwrap().contains("friend-key"), "{subsonic:?}");
        let found = remote.search(&ann, "drift", None).await.unwrap();
        assert!(found.sources[0].ok && found.hits.len() == 1, "{found:?}");
        let download = remote.create_download(&ann, "subsonic", "s1").await.unwrap().download;
        assert_eq!(settle(&library, &ann, &download.id).await.state, DownloadState::Completed);
        // Every request carried the key, alone: no user, token or salt.
        let requests = server.received_requests().await.unwrap();
        assert!(!requests.is_empty());
        for request in &requests {
            let query: std::collections::HashMap<_, _> = request.url.query_pairs().into_owned().collect();
            assert_eq!(query.get("apiKey").map(String::as_str), Some("friend-key"), "{}", request.url);
            assert!(!["u", "t", "s", "p"].iter().any(|name| query.contains_key(*name)), "{}", request.url);
        }

        // A refused key: the source is unavailable and says it was refused; a download fails
        // at once (a retry would not help).
        let refused = TestLibrary::builder(backend).config(with_key("revoked")).build().await;
        let bob = user(&refused, "bob").await;
        let found = refused.remote().search(&bob, "drift", None).await.unwrap();
        assert!(!found.sources[0].ok);
        assert!(found.sources[0].error.as_deref().unwrap().contains("refused (44)"), "{found:?}");
        let error = refused.remote().save(&bob, "subsonic", "s1").await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable);
        assert!(error.to_string().contains("refused"), "{error}");
    }
}

backend_test! {
    #[services]
    async fn streaming_a_placeholder_gives_up_when_its_source_is_down(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None)], &bytes).await;
        let base = subsonic_config(&server);
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                base(config);
                // The retry would come much later than the stream waits.
                config.remote.download_retry.base = Duration::from_secs(600);
                config.remote.download_retry.max = Duration::from_secs(600);
            })
            .build()
            .await;
        let ann = user(&library, "ann").await;
        let saved = library.remote().save(&ann, "subsonic", "s1").await.unwrap();
        Mock::given(method("GET"))
            .and(path("/rest/download"))
            .respond_with(ResponseTemplate::new(503))
            .with_priority(1)
            .mount(&server)
            .await;
        let started = Instant::now();
        let waiting = {
            let library = library.library.clone();
            let ann = ann.clone();
            let id = saved.track.id.clone();
            tokio::spawn(async move {
                // An hour: only the failed attempt can end the wait.
                library.remote().materialize_and_wait(&ann, &id, Duration::from_secs(3600)).await
            })
        };
        while !waiting.is_finished() {
            musiclib_core::testing::drain_jobs(&library).await;
            // (A hang guard: a stream that waited for the retry would wait ten minutes.)
            assert!(started.elapsed() < Duration::from_secs(120), "the stream still waits");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let error = waiting.await.unwrap().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable);
        let message = error.to_string();
        assert!(message.contains("503") && message.contains("another attempt follows"), "{message}");
    }
}

/// A stand-in for yt-dlp that answers every search with one video at once.
fn answering_ytdlp(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let program = dir.join("yt-dlp");
    std::fs::write(
        &program,
        "#!/bin/sh\nprintf '%s' '{\"entries\": [{\"id\": \"vid-1\", \"title\": \"Aurora Lane - Polar Drift\", \"channel\": \"Aurora Lane\", \"duration\": 142}]}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    program
}

backend_test! {
    #[services]
    async fn a_slow_source_is_reported_beside_the_others_hits(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None)], &bytes).await;
        // The Subsonic server takes ten minutes to answer a search: past the 1 s allowed.
        Mock::given(method("GET"))
            .and(path("/rest/search3"))
            .respond_with(musiclib_core::testing::subsonic_ok(serde_json::json!({"searchResult3": {}})).set_delay(Duration::from_secs(600)))
            .with_priority(1)
            .mount(&server)
            .await;
        let dir = tempfile::tempdir().unwrap();
        let program = answering_ytdlp(dir.path());
        let base = subsonic_config(&server);
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                base(config);
                let mut ytdlp = musiclib_core::config::YtDlpConfig::new(program);
                ytdlp.min_interval = Duration::ZERO;
                config.remote.ytdlp = Some(ytdlp);
                config.remote.search_timeout = Duration::from_secs(1);
            })
            .build()
            .await;
        let ann = user(&library, "ann").await;
        let started = Instant::now();
        let found = library.remote().search(&ann, "polar drift", None).await.unwrap();
        // (A hang guard: waiting for the slow source would take ten minutes.)
        assert!(started.elapsed() < Duration::from_secs(60), "the slow source was waited for");
        let outcome = |name: &str| found.sources.iter().find(|source| source.source == name).unwrap().clone();
        let (ytdlp, subsonic) = (outcome("remote"), outcome("subsonic"));
        assert!(ytdlp.ok && ytdlp.count == 1 && ytdlp.error.is_none(), "{ytdlp:?}");
        assert!(!subsonic.ok && subsonic.count == 0, "{subsonic:?}");
        assert_eq!(subsonic.error.as_deref(), Some("no answer within 1 s"));
        assert!(subsonic.took_ms >= 900 && subsonic.took_ms < 60_000, "{subsonic:?}");
        assert_eq!(found.hits.len(), 1);
        assert_eq!(found.hits[0].hit.source_id, "vid-1");
        assert_eq!(found.hits[0].hit.artist.as_deref(), Some("Aurora Lane"));
        assert!(!found.hits[0].in_library);
    }
}

/// Makes a file or directory look `age` old.
fn age(path: &std::path::Path, age: Duration) {
    std::fs::File::open(path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - age)
        .unwrap();
}

backend_test! {
    #[services]
    async fn staging_left_by_killed_fetches_is_removed(backend: Backend) {
        let bytes = corpus_file(&corpus(), FLAC);
        let server = subsonic_server(&[("s1", "Polar Drift", None), ("s2", "Drift II", None)], &bytes).await;
        let base = subsonic_config(&server);
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                base(config);
                config.remote.download_retry.base = Duration::from_secs(600);
                config.remote.download_retry.max = Duration::from_secs(600);
            })
            .build()
            .await;
        let ann = user(&library, "ann").await;
        let remote = library.remote();
        let staging = musiclib_core::testing::staging_dir(&library);

        // A download waiting for its retry, whose killed attempt left files: cancelling it
        // removes them.
        Mock::given(method("GET"))
            .and(path("/rest/download"))
            .and(query_param("id", "s1"))
            .respond_with(ResponseTemplate::new(503))
            .with_priority(1)
            .mount(&server)
            .await;
        let download = remote.create_download(&ann, "subsonic", "s1").await.unwrap().download;
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(remote.download(&ann, &download.id).await.unwrap().state, DownloadState::Retrying);
        let left = staging.join(format!("fetch-{}", download.track_id));
        std::fs::create_dir_all(&left).unwrap();
        std::fs::write(left.join("audio.flac.part"), b"half").unwrap();
        remote.cancel_download(&ann, &download.id).await.unwrap();
        assert!(!left.exists());

        // The leftovers of a fetch killed on its last attempt (its job failed for good) go
        // with the next fetch once a minute old; a fresh directory stays.
        let dead = staging.join("fetch-0000dead-0000-7000-8000-000000000000");
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join("audio.webm.part"), b"half").unwrap();
        age(&dead, Duration::from_secs(120));
        let fresh = staging.join("fetch-0000f4e5-0000-7000-8000-000000000000");
        std::fs::create_dir_all(&fresh).unwrap();
        let download = remote.create_download(&ann, "subsonic", "s2").await.unwrap().download;
        assert_eq!(settle(&library, &ann, &download.id).await.state, DownloadState::Completed);
        assert!(!dead.exists());
        assert!(fresh.exists());
    }
}
