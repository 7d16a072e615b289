//! The durable job queue: leases, retries, and concurrent workers.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::backend_test;
use crate::support::*;
use musiclib_core::jobs::{JobState, NewJob, Outcome, Worker};

backend_test! {
    async fn a_job_whose_worker_died_is_taken_again(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let job_id = library.enqueue(NewJob::new("cleanup_storage", serde_json::json!({}))).await.unwrap();

        // A worker claims it with a short lease and dies.
        let claimed = library.queue().claim("dead-worker", Duration::from_millis(50)).await.unwrap().unwrap();
        assert_eq!(claimed.id, job_id);
        assert!(library.queue().claim("other", Duration::from_secs(60)).await.unwrap().is_none(), "leased jobs are not shared");
        tokio::time::sleep(Duration::from_millis(120)).await;

        // Another worker takes it over once the lease ran out.
        let worker = Worker::new(library.library.clone(), "live");
        assert_eq!(worker.run_once().await.unwrap(), Outcome::Ran(job_id.clone()));
        let job = library.get_job(&job_id).await.unwrap();
        assert_eq!(job.attempts, 2);
        // This kind is not runnable yet: a permanent failure, kept with its error.
        assert_eq!(job.state, JobState::Failed);
        assert!(job.error.as_deref().unwrap().contains("cleanup_storage"));
    }
}

backend_test! {
    async fn retries_back_off_then_stay_failed(backend: Backend) {
        let library = TestLibrary::builder(backend).config(|config| config.jobs.max_attempts = 3).build().await;
        let job_id = library.enqueue(NewJob::new("enrich_task", serde_json::json!({}))).await.unwrap();
        // Simulate three lost workers: each claim expires.
        for attempt in 1..=3 {
            let job = library.queue().claim("flaky", Duration::from_millis(10)).await.unwrap().expect("claimable");
            assert_eq!(job.attempts, attempt);
            library.queue().fail(&job.id, "flaky", "dependency down", Some(Duration::from_millis(10))).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let job = library.get_job(&job_id).await.unwrap();
        assert_eq!(job.state, JobState::Failed, "{job:?}");
        assert_eq!(job.error.as_deref(), Some("dependency down"));
        assert!(library.queue().claim("any", Duration::from_secs(1)).await.unwrap().is_none());
    }
}

backend_test! {
    async fn dedup_keeps_one_live_job(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let first = library.enqueue(NewJob::new("transcode_track", serde_json::json!({})).dedup("transcode:x:high")).await.unwrap();
        let second = library.enqueue(NewJob::new("transcode_track", serde_json::json!({})).dedup("transcode:x:high")).await.unwrap();
        assert_eq!(first, second);
    }
}

backend_test! {
    async fn concurrent_workers_never_run_one_job_twice(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let mut expected = HashSet::new();
        for index in 0..60 {
            expected.insert(library.enqueue(NewJob::new("noop", serde_json::json!({ "n": index }))).await.unwrap());
        }
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for worker in 0..6 {
            let queue = library.queue().clone();
            let seen = seen.clone();
            tasks.push(tokio::spawn(async move {
                let name = format!("w{worker}");
                while let Some(job) = queue.claim(&name, Duration::from_secs(60)).await.unwrap() {
                    seen.lock().unwrap().push(job.id.clone());
                    queue.complete(&job.id, &name, &serde_json::json!({})).await.unwrap();
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
