//! The durable job queue: leases and heartbeats, backoff, attempts, dedup, concurrent
//! workers, and jobs queued by an earlier release.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::backend_test;
use crate::support::*;
use musiclib_core::jobs::{JobState, Outcome, Worker};
use musiclib_core::testing::{enqueue_raw, execute, job_lease_until, queue};
use musiclib_core::{JobId, TrackId};

async fn job(library: &TestLibrary, id: &JobId) -> musiclib_core::jobs::Job {
    queue(library).get(id).await.unwrap()
}

/// Leases and backoffs are on the database clock: a test moves the job's times instead of
/// waiting for it.
async fn expire_lease(library: &TestLibrary, id: &JobId) {
    let changed = execute(
        library,
        "UPDATE jobs SET lease_until = 0 WHERE id = $1 AND state = 'running'",
        &[&id.to_string()],
    )
    .await;
    assert_eq!(changed, 1, "job {id} is not running");
}

async fn make_due(library: &TestLibrary, id: &JobId) {
    let changed = execute(
        library,
        "UPDATE jobs SET run_at = 0 WHERE id = $1 AND state = 'queued'",
        &[&id.to_string()],
    )
    .await;
    assert_eq!(changed, 1, "job {id} is not queued");
}

backend_test! {
    async fn a_job_whose_worker_died_is_taken_again(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let job_id = enqueue_raw(&library, "no_such_kind", serde_json::json!({}), None).await;

        // A worker claims it and dies.
        let claimed = queue(&library).claim("dead-worker", Duration::from_secs(60)).await.unwrap().unwrap();
        assert_eq!(claimed.id, job_id);
        assert!(queue(&library).claim("other", Duration::from_secs(60)).await.unwrap().is_none(), "leased jobs are not shared");
        expire_lease(&library, &job_id).await;

        // Another worker takes it over once the lease ran out.
        let worker = Worker::new(library.library.registry(), "live");
        assert_eq!(worker.run_once().await.unwrap(), Outcome::Ran(job_id.clone()));
        let job = job(&library, &job_id).await;
        assert_eq!(job.attempts, 2);
        // No handler for this kind: a permanent failure, kept with its error.
        assert_eq!(job.state, JobState::Failed);
        assert!(job.error.as_deref().unwrap().contains("no_such_kind"), "{:?}", job.error);
        // The dead worker's late report changes nothing: it no longer holds the job.
        queue(&library).complete(&job_id, "dead-worker").await.unwrap();
        assert_eq!(self::job(&library, &job_id).await.state, JobState::Failed);
    }
}

backend_test! {
    async fn heartbeats_keep_the_lease_and_only_the_holder_renews_it(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let job_id = enqueue_raw(&library, "no_such_kind", serde_json::json!({}), None).await;
        let lease = Duration::from_secs(60);
        queue(&library).claim("holder", lease).await.unwrap().unwrap();
        // Renewed three times while the clock runs a lease and a half (each round moves the lease
        // half of it back): each heartbeat moves it forward again, never claimable by another.
        for _ in 0..3 {
            execute(&library, "UPDATE jobs SET lease_until = lease_until - 30000000 WHERE id = $1", &[&job_id.to_string()]).await;
            let before = job_lease_until(&library, &job_id).await.expect("leased");
            assert!(queue(&library).heartbeat(&job_id, "holder", lease).await.unwrap());
            let after = job_lease_until(&library, &job_id).await.expect("leased");
            assert!(after > before, "the heartbeat did not renew the lease: {before} -> {after}");
            assert!(queue(&library).claim("other", lease).await.unwrap().is_none(), "a renewed lease was taken");
        }
        let before = job_lease_until(&library, &job_id).await;
        assert!(!queue(&library).heartbeat(&job_id, "stranger", lease).await.unwrap(), "only the holder renews");
        assert_eq!(job_lease_until(&library, &job_id).await, before, "a stranger moved the lease");
        // Heartbeats stop (the holder died): the job is taken over once the lease runs out.
        expire_lease(&library, &job_id).await;
        let taken = queue(&library).claim("other", lease).await.unwrap().expect("an expired lease is claimable");
        assert_eq!((taken.id, taken.attempts), (job_id.clone(), 2));
        assert!(!queue(&library).heartbeat(&job_id, "holder", lease).await.unwrap(), "the old holder lost it");
    }
}

backend_test! {
    async fn a_failed_attempt_waits_out_its_backoff(backend: Backend) {
        let library = TestLibrary::builder(backend)
            .config(|config| {
                config.jobs.retry_base = Duration::from_secs(3600);
                config.jobs.retry_max = Duration::from_secs(10 * 3600);
                // A scan of a folder that is gone fails as "unavailable": worth retrying.
                config.local_media_import_path = Some("/nonexistent/musiclib-test-music".into());
            })
            .build()
            .await;
        let job_id = enqueue_raw(&library, "scan_local_folder", serde_json::json!({}), None).await;
        let worker = Worker::new(library.library.registry(), "worker");
        assert_eq!(worker.run_once().await.unwrap(), Outcome::Ran(job_id.clone()));
        let failed = job(&library, &job_id).await;
        assert_eq!((failed.state, failed.attempts), (JobState::Queued, 1), "{failed:?}");
        assert!(failed.error.as_deref().unwrap().contains("does not exist"), "{:?}", failed.error);
        // The first retry is the base delay later, on the database clock.
        let delay = failed.run_at.as_micros() - failed.updated_at.as_micros();
        assert!((3_599_990_000..=3_600_010_000).contains(&delay), "backoff of {delay} µs");
        assert_eq!(worker.run_once().await.unwrap(), Outcome::Empty, "claimable before its run_at");
        // Its time comes.
        make_due(&library, &job_id).await;
        assert_eq!(worker.run_once().await.unwrap(), Outcome::Ran(job_id.clone()));
        // The second retry waits twice as long.
        let again = job(&library, &job_id).await;
        assert_eq!((again.state, again.attempts), (JobState::Queued, 2), "{again:?}");
        let delay = again.run_at.as_micros() - again.updated_at.as_micros();
        assert!((7_199_990_000..=7_200_010_000).contains(&delay), "backoff of {delay} µs");
        assert_eq!(worker.run_once().await.unwrap(), Outcome::Empty, "claimable before its run_at");
    }
}

backend_test! {
    async fn retries_back_off_then_stay_failed(backend: Backend) {
        let library = TestLibrary::builder(backend).config(|config| config.jobs.max_attempts = 3).build().await;
        let job_id = enqueue_raw(&library, "enrich_task", serde_json::json!({}), None).await;
        for attempt in 1..=3 {
            let job = queue(&library).claim("flaky", Duration::from_secs(10)).await.unwrap().expect("claimable");
            assert_eq!(job.attempts, attempt);
            queue(&library).fail(&job.id, "flaky", "dependency down", Some(Duration::from_secs(3600))).await.unwrap();
            if attempt < 3 {
                assert!(queue(&library).claim("flaky", Duration::from_secs(10)).await.unwrap().is_none(), "claimable during its backoff");
                make_due(&library, &job_id).await;
            }
        }
        let job = job(&library, &job_id).await;
        assert_eq!(job.state, JobState::Failed, "{job:?}");
        assert!(job.finished_at.is_some());
        assert_eq!(job.error.as_deref(), Some("dependency down"));
        assert!(queue(&library).claim("any", Duration::from_secs(1)).await.unwrap().is_none());
    }
}

backend_test! {
    async fn workers_that_keep_dying_use_up_the_attempts(backend: Backend) {
        let library = TestLibrary::builder(backend).config(|config| config.jobs.max_attempts = 2).build().await;
        let job_id = enqueue_raw(&library, "enrich_task", serde_json::json!({}), None).await;
        for attempt in 1..=2 {
            let job = queue(&library).claim(&format!("doomed{attempt}"), Duration::from_secs(60)).await.unwrap().expect("claimable");
            assert_eq!(job.attempts, attempt);
            assert!(queue(&library).claim("other", Duration::from_secs(60)).await.unwrap().is_none(), "leased jobs are not shared");
            // The worker dies: no heartbeat, no report; its lease runs out.
            expire_lease(&library, &job_id).await;
        }
        // The next claim finds the job out of attempts and fails it for good.
        assert!(queue(&library).claim("survivor", Duration::from_secs(10)).await.unwrap().is_none());
        let job = job(&library, &job_id).await;
        assert_eq!(job.state, JobState::Failed);
        assert!(job.error.as_deref().unwrap().contains("stopped responding"), "{:?}", job.error);
    }
}

backend_test! {
    async fn jobs_queued_by_an_earlier_release_still_run(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        // Payloads as they were written before kinds were typed: a track that is gone by now.
        let gone = TrackId::new();
        let enrich = enqueue_raw(&library, "enrich_task", serde_json::json!({ "track_id": gone.to_string() }), Some(&format!("enrich:{gone}"))).await;
        let transcode = enqueue_raw(&library, "transcode_track",
            serde_json::json!({ "track_id": gone.to_string(), "qualities": ["low"] }), Some(&format!("transcode:{gone}:low"))).await;
        let malformed = enqueue_raw(&library, "enrich_task", serde_json::json!({ "track_id": "not an id" }), None).await;
        assert_eq!(musiclib_core::testing::drain_jobs(&library).await, 3);

        let enrich = job(&library, &enrich).await;
        assert_eq!(enrich.state, JobState::Succeeded, "{enrich:?}");
        assert_eq!(enrich.result.unwrap()["outcome"], "skipped");
        // Without the track there is nothing to transcode (with or without ffmpeg).
        let transcode = job(&library, &transcode).await;
        assert!(matches!(transcode.state, JobState::Succeeded | JobState::Failed), "{transcode:?}");
        assert_eq!(transcode.attempts, 1, "not retried: {transcode:?}");
        let malformed = job(&library, &malformed).await;
        assert_eq!((malformed.state, malformed.attempts), (JobState::Failed, 1));
        assert!(malformed.error.unwrap().contains("payload is malformed"));
    }
}

backend_test! {
    async fn dedup_keeps_one_live_job(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let first = enqueue_raw(&library, "transcode_track", serde_json::json!({}), Some("transcode:x:high")).await;
        let second = enqueue_raw(&library, "transcode_track", serde_json::json!({}), Some("transcode:x:high")).await;
        assert_eq!(first, second);
        // Once it finished, the same key is a new job.
        let claimed = queue(&library).claim("w", Duration::from_secs(10)).await.unwrap().unwrap();
        queue(&library).complete(&claimed.id, "w").await.unwrap();
        let third = enqueue_raw(&library, "transcode_track", serde_json::json!({}), Some("transcode:x:high")).await;
        assert_ne!(third, first);
    }
}

backend_test! {
    async fn concurrent_workers_never_run_one_job_twice(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let mut expected = HashSet::new();
        for index in 0..60 {
            expected.insert(enqueue_raw(&library, "noop", serde_json::json!({ "n": index }), None).await);
        }
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for worker in 0..6 {
            let queue = queue(&library);
            let seen = seen.clone();
            tasks.push(tokio::spawn(async move {
                let name = format!("w{worker}");
                while let Some(job) = queue.claim(&name, Duration::from_secs(60)).await.unwrap() {
                    seen.lock().unwrap().push(job.id.clone());
                    queue.complete(&job.id, &name).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let seen = seen.lock().unwrap().clone();
        let unique: HashSet<_> = seen.iter().cloned().collect();
        assert_eq!(seen.len(), unique.len(), "a job was claimed twice");
        assert_eq!(unique, expected);
    }
}

backend_test! {
    async fn job_visibility_is_decided_by_core(backend: Backend) {
        let library = TestLibrary::builder(backend)
            .config(|config| config.local_media_import_path = Some(std::env::temp_dir()))
            .build()
            .await;
        let admin = musiclib_core::auth::Caller {
            user: library.accounts().create_user("root", "root-password", true).await.unwrap(),
        };
        let alice = user(&library, "alice").await;
        let scan = library.ingest().start_local_scan(&admin).await.unwrap();
        assert_eq!(library.ingest().start_local_scan(&alice).await.unwrap_err().code(), "forbidden");
        assert_eq!(library.jobs().get(&admin, &scan).await.unwrap().id, scan);
        // Another user's job does not exist for them.
        assert_eq!(library.jobs().get(&alice, &scan).await.unwrap_err().code(), "not_found");
    }
}

backend_test! {
    #[services]
    async fn a_worker_that_loses_its_lease_stops_the_job(backend: Backend) {
        // An ffmpeg that answers `-version` and otherwise writes its pid and runs until killed:
        // a rendition build that never ends by itself.
        let tools = tempfile::tempdir().unwrap();
        let pid_file = tools.path().join("ffmpeg.pid");
        let ffmpeg = tools.path().join("ffmpeg");
        std::fs::write(
            &ffmpeg,
            format!(
                "#!/bin/sh\n[ \"$1\" = -version ] && exit 0\necho $$ > '{}'\nexec sleep 600\n",
                pid_file.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&ffmpeg, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.transcoding.ffmpeg = ffmpeg;
                // Heartbeats every second.
                config.jobs.lease = Duration::from_secs(3);
            })
            .build()
            .await;
        let caller = user(&library, "owner").await;
        let track = library
            .ingest()
            .upload_track(&caller, Some("tone.wav"), musiclib_core::testing::wav_tone(3).as_slice())
            .await
            .unwrap()
            .track;
        // The upload's own jobs first (its enrichment), so the worker below takes the build.
        musiclib_core::testing::drain_jobs(&library).await;
        let job_id = library.media().request_optimize(&track.id, &caller.user.id).await.unwrap();
        let worker = Worker::new(library.library.registry(), "slow");
        let running = tokio::spawn(async move { worker.run_once().await });
        // Once its ffmpeg runs, another worker takes the job over (the lease was lost while
        // this one was stalled, say).
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while !pid_file.exists() {
            assert!(std::time::Instant::now() < deadline, "ffmpeg never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        let taken = execute(
            &library,
            "UPDATE jobs SET worker_id = 'thief' WHERE id = $1 AND state = 'running'",
            &[&job_id.to_string()],
        )
        .await;
        assert_eq!(taken, 1);
        // The first worker stops at its next heartbeat, without waiting for its ffmpeg, and
        // writes nothing over the new holder's job.
        let outcome = tokio::time::timeout(Duration::from_secs(120), running)
            .await
            .expect("the worker went on with a job it lost")
            .unwrap()
            .unwrap();
        assert_eq!(outcome, Outcome::Ran(job_id.clone()));
        let job = job(&library, &job_id).await;
        assert_eq!(job.state, JobState::Running, "{job:?}");
        assert_eq!(job.attempts, 1);
        // Its ffmpeg was killed with the handler.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
        {
            assert!(std::time::Instant::now() < deadline, "ffmpeg {pid} outlived its job");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // No rendition was published by the worker that lost the job.
        let renditions = musiclib_core::testing::blob_keys(&library, "renditions/").await;
        assert!(renditions.is_empty(), "{renditions:?}");
    }
}

backend_test! {
    async fn every_kind_and_periodic_task_is_registered_by_its_service(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let registry = library.library.registry();
        // The spec's six kinds, the admin reindex and the file check, scrobbling's two, the
        // recommendations' two, the loudness measurement, and the podcasts' two; each once.
        assert_eq!(
            registry.kinds().names(),
            vec![
                "analyze_loudness",
                "analyze_sound",
                "check_files",
                "cleanup_storage",
                "compute_similarity",
                "download_podcast_episode",
                "download_task",
                "enrich_task",
                "materialize_track",
                "refresh_podcasts",
                "reindex_library",
                "scan_local_folder",
                "submit_scrobbles",
                "transcode_track",
                "update_now_playing",
            ]
        );
        assert_eq!(
            registry.kinds().pool_kinds(musiclib_core::jobs::Pool::Network),
            vec![
                "download_podcast_episode",
                "enrich_task",
                "refresh_podcasts",
                "submit_scrobbles",
                "update_now_playing"
            ]
        );
        assert!(
            registry.kinds().pool_kinds(musiclib_core::jobs::Pool::General).is_empty(),
            "general workers take every kind"
        );
        assert_eq!(
            registry.periodic_names(),
            vec![
                "loudness_sweep",
                "podcast_refresh_sweep",
                "recommend_sweep",
                "scrobble_resume"
            ]
        );
    }
}

backend_test! {
    async fn a_library_let_go_releases_its_services_and_connections(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        // Workers and registered handlers hold services, never the library in a loop.
        musiclib_core::testing::drain_jobs(&library.library).await;
        let released = library.library.released_probe();
        assert!(!released());
        drop(library);
        assert!(released(), "something the library built still holds it");
    }
}
