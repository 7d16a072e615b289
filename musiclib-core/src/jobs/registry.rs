//! The job registry: every kind of background job, each a type implementing [`JobKind`].
//!
//! To add a kind: define a unit type next to the service that does the work, implement
//! [`JobKind`] for it (stored name, payload type, dedup key, pool, handler), and list it in
//! the `registry!` call below. A kind without a payload or a handler does not compile, and
//! one not listed here is never claimed by a worker.
//!
//! The spec names six kinds: `enrich_task`, `scan_local_folder`, `transcode_track`,
//! `cleanup_storage`, `download_task` and `materialize_track` (both fetch a remote track's
//! audio, and share one live job per track). Beside them, `reindex_library` (`POST /admin/reindex`) and `check_files`
//! (`POST /storage/broken/check`), and `submit_scrobbles` and `update_now_playing`
//! (forwarding plays to Last.fm and ListenBrainz), `analyze_sound` and `compute_similarity`
//! (recommendations).
//! Stored names and payload shapes are a contract with jobs
//! already queued in a database: a payload may gain optional fields, never lose or rename one.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{Job, JobContext, JobError};

/// Which workers run a kind. General workers run every kind; a pool's workers run only its
/// kinds, so a process can run many jobs that mostly wait on the network without letting
/// them crowd out the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pool {
    /// CPU- or disk-bound work (imports, transcodes): as many at once as there are general
    /// workers (`WORKER_CONCURRENCY`).
    General,
    /// Work that mostly waits on an outside service (enrichment: AcoustID, the Cover Art
    /// Archive; scrobbling: Last.fm, ListenBrainz), run by many more workers (`ENRICH_CONCURRENCY`); CPU-heavy parts still take
    /// a CPU slot.
    Network,
}

/// A kind of background job.
pub trait JobKind: Send + Sync + 'static {
    /// The stored name, as a job's `kind` shows it (the spec's names).
    const NAME: &'static str;
    /// The workers that run it.
    const POOL: Pool;
    /// Its input, stored with the job as JSON.
    type Payload: Serialize + DeserializeOwned + Send + Sync + 'static;

    /// At most one queued or running job per key: enqueueing a duplicate returns the live
    /// one. `None`: every enqueue is a new job.
    fn dedup_key(payload: &Self::Payload) -> Option<String>;

    /// Its own retries (attempts, backoff), when the job queue's (`JOB_MAX_ATTEMPTS`, 5 s
    /// doubling to 10 min) do not suit it.
    fn retry(_config: &crate::Config) -> Option<crate::config::RetryPolicy> {
        None
    }

    /// Does the work. The value is kept as the job's result; an error says whether another
    /// attempt may succeed.
    fn run(
        context: &JobContext,
        payload: Self::Payload,
    ) -> impl Future<Output = Result<Value, JobError>> + Send;

    /// Called once when a job of this kind has failed for good because its worker died (a
    /// crash, a SIGKILL) during the last attempt, so `run` never returned: a kind whose
    /// handler records its failures somewhere (a track's enrichment state) records this one
    /// too, saying `reason`.
    fn abandoned(
        _library: &crate::Library,
        _payload: Self::Payload,
        _reason: &str,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

macro_rules! registry {
    ($($kind:ty),+ $(,)?) => {
        /// Stored names of every kind this server runs.
        pub const NAMES: &[&str] = &[$(<$kind as JobKind>::NAME),+];

        /// The pool of the kind named `name`.
        pub(crate) fn pool_of(name: &str) -> Option<Pool> {
            $(if name == <$kind as JobKind>::NAME {
                return Some(<$kind as JobKind>::POOL);
            })+
            None
        }

        /// The kinds that retry by their own policy.
        pub(crate) fn retry_policies(
            config: &crate::Config,
        ) -> std::collections::HashMap<&'static str, crate::config::RetryPolicy> {
            let mut policies = std::collections::HashMap::new();
            $(if let Some(policy) = <$kind as JobKind>::retry(config) {
                policies.insert(<$kind as JobKind>::NAME, policy);
            })+
            policies
        }

        /// Lets the kind of `job`, failed for good because its worker died, record the crash
        /// ([`JobKind::abandoned`]).
        pub(crate) async fn abandoned(library: &crate::Library, job: &Job) {
            $(if job.kind == <$kind as JobKind>::NAME {
                if let Ok(payload) = serde_json::from_value(job.payload.clone()) {
                    <$kind as JobKind>::abandoned(library, payload, super::queue::ABANDONED).await;
                }
                return;
            })+
        }

        /// Runs `job` with its kind's handler.
        pub(crate) async fn run(context: &JobContext, job: &Job) -> Result<Value, JobError> {
            $(if job.kind == <$kind as JobKind>::NAME {
                return run_kind::<$kind>(context, &job.payload).await;
            })+
            Err(JobError::permanent(format!(
                "this server has no handler for jobs of kind {:?}",
                job.kind
            )))
        }
    };
}

registry!(
    crate::enrichment::EnrichTrack,
    crate::ingest::ScanLocalFolder,
    crate::media::TranscodeTrack,
    crate::admin::Reindex,
    crate::maintenance::CheckFiles,
    crate::maintenance::CleanupStorage,
    crate::scrobbling::SubmitScrobbles,
    crate::scrobbling::UpdateNowPlaying,
    crate::remote::MaterializeTrack,
    crate::remote::DownloadTask,
    crate::recommend::AnalyzeSound,
    crate::recommend::ComputeSimilarity,
);

/// The stored names of the kinds `pool`'s workers take (every kind for the general pool).
pub(crate) fn kinds_of(pool: Pool) -> Vec<&'static str> {
    match pool {
        Pool::General => Vec::new(),
        pool => NAMES
            .iter()
            .copied()
            .filter(|name| pool_of(name) == Some(pool))
            .collect(),
    }
}

async fn run_kind<K: JobKind>(context: &JobContext, payload: &Value) -> Result<Value, JobError> {
    let payload: K::Payload = serde_json::from_value(payload.clone()).map_err(|error| {
        JobError::permanent(format!(
            "the {} job's payload is malformed: {error}",
            K::NAME
        ))
    })?;
    K::run(context, payload).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_specs_and_unique() {
        let unique: std::collections::HashSet<_> = NAMES.iter().collect();
        assert_eq!(unique.len(), NAMES.len());
        for name in NAMES {
            assert!(
                [
                    "enrich_task",
                    "scan_local_folder",
                    "download_task",
                    "materialize_track",
                    "transcode_track",
                    "cleanup_storage",
                    // Beyond the spec's six: the admin reindex and the file check.
                    "reindex_library",
                    "check_files",
                    // Forwarding plays to Last.fm and ListenBrainz.
                    "submit_scrobbles",
                    "update_now_playing",
                    // Recommendations: sound analysis and artist similarity.
                    "analyze_sound",
                    "compute_similarity",
                ]
                .contains(name),
                "{name} is not a known job kind"
            );
        }
        assert_eq!(
            kinds_of(Pool::Network),
            vec!["enrich_task", "submit_scrobbles", "update_now_playing"]
        );
        assert!(
            kinds_of(Pool::General).is_empty(),
            "general workers take every kind"
        );
    }
}
