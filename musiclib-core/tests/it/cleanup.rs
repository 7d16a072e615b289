//! The `cleanup_storage` job: orphans removed (after a dry run that changes nothing), tracks
//! whose original is gone marked missing, and refusals when storage looks unavailable.

use crate::backend_test;
use crate::support::*;
use musiclib_core::auth::Caller;
use musiclib_core::jobs::JobState;
use musiclib_core::JobId;

const FILES: [&str; 4] = [
    "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
    "library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac",
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3",
];

async fn admin(library: &TestLibrary) -> Caller {
    Caller {
        user: library
            .accounts()
            .create_user("root", "root-password", true)
            .await
            .unwrap(),
    }
}

/// Uploads the files; returns the tracks.
async fn upload_all(library: &TestLibrary, caller: &Caller) -> Vec<musiclib_core::domain::Track> {
    let corpus = corpus();
    let mut tracks = Vec::new();
    for file in FILES {
        let bytes = corpus_file(&corpus, file);
        let outcome = library
            .ingest()
            .upload_track(
                caller,
                Some(file.rsplit('/').next().unwrap()),
                bytes.as_slice(),
            )
            .await
            .unwrap();
        tracks.push(outcome.track);
    }
    tracks
}

/// A scale-out library whose S3 endpoint is `endpoint`, an admin, and five tracks whose
/// originals are expected at `audio/<id>.mp3`.
async fn five_tracks_on_s3_at(endpoint: String) -> (TestLibrary, Caller) {
    let library = TestLibrary::builder(Backend::ScaleOut)
        .config(move |config| {
            if let musiclib_core::config::StorageConfig::S3(s3) = &mut config.storage {
                s3.endpoint = Some(endpoint);
            }
        })
        .build()
        .await;
    let root = admin(&library).await;
    musiclib_core::testing::insert_synthetic_tracks(&library, 5).await;
    musiclib_core::testing::execute(
        &library,
        "UPDATE tracks SET storage_uri = 'audio/' || id || '.mp3', availability = 'available'",
        &[],
    )
    .await;
    (library, root)
}

/// Runs the queued jobs and returns the cleanup job as it ended (after its retries).
async fn run_cleanup(
    library: &TestLibrary,
    caller: &Caller,
    dry_run: bool,
) -> musiclib_core::jobs::Job {
    let id: JobId = library
        .maintenance()
        .start_cleanup(caller, dry_run)
        .await
        .unwrap();
    // Until it ends: a retry waits for its backoff.
    loop {
        musiclib_core::testing::drain_jobs(library).await;
        let job = library.jobs().get(caller, &id).await.unwrap();
        if matches!(job.state, JobState::Succeeded | JobState::Failed) {
            return job;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

backend_test! {
    #[services]
    async fn orphans_go_and_lost_originals_are_marked(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let root = admin(&library).await;
        let tracks = upload_all(&library, &root).await;
        musiclib_core::testing::drain_jobs(&library).await;
        // Orphans of three namespaces: a crash between blob and row would leave these.
        let orphans = [
            format!("audio/{}.mp3", musiclib_core::TrackId::new()),
            format!("covers/thumbs/{}/64.jpg", musiclib_core::AlbumId::new()),
            format!("renditions/{}/low.opus", musiclib_core::TrackId::new()),
        ];
        for key in &orphans {
            musiclib_core::testing::put_blob(&library, key, bytes::Bytes::from_static(b"orphaned bytes")).await;
        }

        // A dry run reports them and changes nothing.
        let dry = run_cleanup(&library, &root, true).await;
        assert_eq!(dry.state, JobState::Succeeded, "{dry:?}");
        let result = dry.result.clone().unwrap();
        assert_eq!(result["dry_run"], true);
        assert_eq!(result["orphans"]["originals"], 1, "{result}");
        assert_eq!(result["orphans"]["thumbnails"], 1, "{result}");
        assert_eq!(result["orphans"]["opus_renditions"], 1, "{result}");
        assert_eq!(result["deleted"], 0);
        for key in &orphans {
            assert!(musiclib_core::testing::blob_exists(&library, key).await, "{key}");
        }

        // The real run deletes exactly them.
        let done = run_cleanup(&library, &root, false).await;
        assert_eq!(done.state, JobState::Succeeded, "{done:?}");
        let result = done.result.clone().unwrap();
        assert_eq!(result["deleted"], 3, "{result}");
        for key in &orphans {
            assert!(!musiclib_core::testing::blob_exists(&library, key).await, "{key}");
        }
        for track in &tracks {
            assert!(musiclib_core::testing::blob_exists(&library, &track.storage_uri).await);
        }

        // One original lost (of four: not an outage): its track is marked missing, kept.
        musiclib_core::testing::delete_blob(&library, &tracks[0].storage_uri).await;
        let done = run_cleanup(&library, &root, false).await;
        assert_eq!(done.state, JobState::Succeeded, "{done:?}");
        assert_eq!(done.result.clone().unwrap()["missing_tracks"], 1);
        let lost = library.catalog().get_track(&tracks[0].id).await.unwrap();
        assert_eq!(lost.availability.as_str(), "missing");
        let kept = library.catalog().get_track(&tracks[1].id).await.unwrap();
        assert_eq!(kept.availability.as_str(), "available");

        // Only admins start one.
        let reader = user(&library, "reader").await;
        assert_eq!(library.maintenance().start_cleanup(&reader, true).await.unwrap_err().code(), "forbidden");
    }
}

backend_test! {
    #[services]
    async fn emptied_storage_is_left_alone(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let root = admin(&library).await;
        let tracks = upload_all(&library, &root).await;
        let orphan = format!("audio/{}.mp3", musiclib_core::TrackId::new());
        // Every referenced file gone (an unmounted disk, a wrong bucket), one stray left.
        for track in &tracks {
            musiclib_core::testing::delete_blob(&library, &track.storage_uri).await;
        }
        musiclib_core::testing::put_blob(&library, &orphan, bytes::Bytes::from_static(b"stray")).await;
        let refused = run_cleanup(&library, &root, false).await;
        assert_eq!(refused.state, JobState::Failed, "{refused:?}");
        let error = refused.error.clone().unwrap();
        assert!(error.contains("refused") && error.contains("nothing was deleted"), "{error}");
        // Nothing changed: the stray is still there, no track was marked.
        assert!(musiclib_core::testing::blob_exists(&library, &orphan).await);
        for track in &tracks {
            let track = library.catalog().get_track(&track.id).await.unwrap();
            assert_eq!(track.availability.as_str(), "available");
        }
    }
}

backend_test! {
    #[services]
    async fn young_orphans_wait_for_the_grace_period(backend: Backend) {
        // A blob stored a moment ago may be an upload whose row is not committed yet.
        let library = TestLibrary::builder(backend)
            .config(|config| config.cleanup_grace = std::time::Duration::from_secs(3600))
            .build()
            .await;
        let root = admin(&library).await;
        upload_all(&library, &root).await;
        let fresh = format!("audio/{}.mp3", musiclib_core::TrackId::new());
        musiclib_core::testing::put_blob(&library, &fresh, bytes::Bytes::from_static(b"in flight")).await;
        let done = run_cleanup(&library, &root, false).await;
        assert_eq!(done.state, JobState::Succeeded, "{done:?}");
        let result = done.result.clone().unwrap();
        assert_eq!(result["deleted"], 0, "{result}");
        assert_eq!(result["young"]["originals"], 5, "{result}");
        assert!(musiclib_core::testing::blob_exists(&library, &fresh).await);
    }
}

backend_test! {
    #[services]
    async fn tracks_already_missing_do_not_make_cleanup_refuse(backend: Backend) {
        // Originals lost one at a time: each cleanup marks one more track missing. Tracks
        // already marked are not counted again, so the third loss (three of four files gone
        // in all) is still a lost file, not an outage.
        let library = TestLibrary::new(backend).await;
        let root = admin(&library).await;
        let tracks = upload_all(&library, &root).await;
        for (lost, track) in tracks.iter().take(3).enumerate() {
            musiclib_core::testing::delete_blob(&library, &track.storage_uri).await;
            let done = run_cleanup(&library, &root, false).await;
            assert_eq!(done.state, JobState::Succeeded, "loss {lost}: {done:?}");
            assert_eq!(done.result.clone().unwrap()["missing_tracks"], 1, "loss {lost}");
            let track = library.catalog().get_track(&track.id).await.unwrap();
            assert_eq!(track.availability.as_str(), "missing");
        }
        let kept = library.catalog().get_track(&tracks[3].id).await.unwrap();
        assert_eq!(kept.availability.as_str(), "available");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
)]
async fn an_unreachable_object_store_changes_nothing() {
    // Scale-out whose S3 endpoint does not answer (the server stopped): the listing fails, so
    // nothing is deleted and no track is marked missing.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let (library, root) = five_tracks_on_s3_at(endpoint).await;
    let refused = run_cleanup(&library, &root, false).await;
    assert_eq!(refused.state, JobState::Failed, "{refused:?}");
    let error = refused.error.clone().unwrap();
    assert!(
        error.contains("cannot be listed") && error.contains("nothing was deleted"),
        "{error}"
    );
    let missing: i64 = library
        .catalog()
        .list_tracks(
            &musiclib_core::catalog::TrackFilter {
                availability: Some(musiclib_core::domain::Availability::Missing),
                ..Default::default()
            },
            None,
            musiclib_core::domain::Page::default(),
        )
        .await
        .unwrap()
        .total;
    assert_eq!(missing, 0);
}

/// A TCP proxy in front of the test S3 server that stops it (open connections closed, new
/// ones refused) when the client sends the `stop_at`-th request whose request line matches,
/// and can bring it back: the S3 server going away in the middle of a job.
struct StoppableS3 {
    endpoint: String,
    state: std::sync::Arc<std::sync::Mutex<Switch>>,
    stop: tokio::sync::watch::Sender<bool>,
}

struct Switch {
    seen: usize,
    stop_at: usize,
    matches: fn(&str) -> bool,
}

impl StoppableS3 {
    async fn start() -> StoppableS3 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let upstream = musiclib_core::testing::service_env("MUSICLIB_TEST_S3_ENDPOINT");
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let state = std::sync::Arc::new(std::sync::Mutex::new(Switch {
            seen: 0,
            stop_at: usize::MAX,
            matches: |_| false,
        }));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let (accept_state, accept_stop) = (state.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                let mut stopped = stopped.clone();
                if *stopped.borrow() {
                    continue; // dropped: the server is gone
                }
                let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (state, stop) = (accept_state.clone(), accept_stop.clone());
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.split();
                    let (mut server_read, mut server_write) = server.split();
                    let requests = async {
                        let mut buffer = vec![0u8; 64 * 1024];
                        loop {
                            let read = client_read.read(&mut buffer).await.unwrap_or(0);
                            if read == 0 {
                                return;
                            }
                            let text = String::from_utf8_lossy(&buffer[..read]).to_string();
                            let stop_now = {
                                let mut switch = state.lock().unwrap();
                                let matching = text
                                    .lines()
                                    .filter(|line| {
                                        line.ends_with(" HTTP/1.1") && (switch.matches)(line)
                                    })
                                    .count();
                                switch.seen += matching;
                                matching > 0 && switch.seen >= switch.stop_at
                            };
                            if stop_now {
                                let _ = stop.send(true);
                                return;
                            }
                            if server_write.write_all(&buffer[..read]).await.is_err() {
                                return;
                            }
                        }
                    };
                    let answers = async {
                        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    };
                    tokio::select! {
                        _ = requests => {}
                        _ = answers => {}
                        _ = stopped.wait_for(|stopped| *stopped) => {}
                    }
                });
            }
        });
        StoppableS3 {
            endpoint,
            state,
            stop,
        }
    }

    /// Stops the server when the `nth` request matching `matches` arrives (that request
    /// gets no answer).
    fn stop_at(&self, nth: usize, matches: fn(&str) -> bool) {
        *self.state.lock().unwrap() = Switch {
            seen: 0,
            stop_at: nth,
            matches,
        };
    }

    /// Brings the server back.
    fn restart(&self) {
        self.stop_at(usize::MAX, |_| false);
        let _ = self.stop.send(false);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
)]
async fn the_object_store_stopping_mid_run_deletes_nothing() {
    let s3 = StoppableS3::start().await;
    let endpoint = s3.endpoint.clone();
    let (library, root) = five_tracks_on_s3_at(endpoint).await;
    let tracks = library
        .catalog()
        .list_tracks(
            &Default::default(),
            None,
            musiclib_core::domain::Page::default(),
        )
        .await
        .unwrap()
        .items;
    for track in &tracks {
        musiclib_core::testing::put_blob(
            &library,
            &track.storage_uri,
            bytes::Bytes::from_static(b"audio"),
        )
        .await;
    }
    let orphan = format!("audio/{}.mp3", musiclib_core::TrackId::new());
    musiclib_core::testing::put_blob(&library, &orphan, bytes::Bytes::from_static(b"orphaned"))
        .await;
    let nothing_changed = |job: &musiclib_core::jobs::Job| {
        assert_eq!(job.state, JobState::Failed, "{job:?}");
        assert_eq!(job.result, None, "{job:?}");
    };

    // Stopped between listing one namespace and the next: refused, nothing deleted.
    s3.stop_at(2, |line| line.contains("list-type=2"));
    let job = run_cleanup(&library, &root, false).await;
    nothing_changed(&job);
    let error = job.error.clone().unwrap();
    assert!(
        error.contains("cannot be listed") && error.contains("nothing was deleted"),
        "{error}"
    );
    s3.restart();
    assert!(musiclib_core::testing::blob_exists(&library, &orphan).await);

    // Stopped after every listing, at the first deletion: the deletion fails, the retry
    // cannot list, nothing is deleted and no track is marked missing.
    s3.stop_at(1, |line| {
        line.starts_with("DELETE ") || (line.starts_with("POST ") && line.contains("?delete"))
    });
    let job = run_cleanup(&library, &root, false).await;
    nothing_changed(&job);
    s3.restart();
    assert!(musiclib_core::testing::blob_exists(&library, &orphan).await);
    for track in &tracks {
        assert!(musiclib_core::testing::blob_exists(&library, &track.storage_uri).await);
        let track = library.catalog().get_track(&track.id).await.unwrap();
        assert_eq!(track.availability.as_str(), "available");
    }

    // Back: the orphan goes, the rest stays.
    let job = run_cleanup(&library, &root, false).await;
    assert_eq!(job.state, JobState::Succeeded, "{job:?}");
    assert_eq!(job.result.clone().unwrap()["deleted"], 1);
    assert!(!musiclib_core::testing::blob_exists(&library, &orphan).await);
    for track in &tracks {
        assert!(musiclib_core::testing::blob_exists(&library, &track.storage_uri).await);
    }
}

backend_test! {
    #[services]
    async fn tracks_of_one_musicbrainz_recording_are_duplicates(backend: Backend) {
        // Different files (other bytes, no fingerprint in common) identified as the same
        // recording: one group, for that reason; the other tracks are not grouped.
        let library = TestLibrary::new(backend).await;
        let reader = user(&library, "reader").await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 6).await;
        let tracks = library
            .catalog()
            .list_tracks(&Default::default(), None, musiclib_core::domain::Page::default())
            .await
            .unwrap()
            .items;
        let (a, b) = (&tracks[1], &tracks[4]);
        musiclib_core::testing::execute(
            &library,
            "UPDATE tracks SET musicbrainz_recording_id = 'b9b6dc4c-6d4a-4bba-9d1f-2f3f1ba5e8a1' WHERE id IN ($1, $2)",
            &[a.id.as_str(), b.id.as_str()],
        )
        .await;
        let groups = library
            .maintenance()
            .duplicates(&reader, musiclib_core::domain::Page::default())
            .await
            .unwrap();
        assert_eq!(groups.items.len(), 1, "{groups:#?}");
        let group = &groups.items[0];
        let reasons: Vec<&str> = group.reasons.iter().map(|reason| reason.as_str()).collect();
        assert_eq!(reasons, vec!["same_recording"]);
        let mut ids: Vec<&str> = group.tracks.iter().map(|track| track.id.as_str()).collect();
        ids.sort();
        let mut expected = vec![a.id.as_str(), b.id.as_str()];
        expected.sort();
        assert_eq!(ids, expected);
        assert!(expected.contains(&group.keeper.as_str()));
    }
}
