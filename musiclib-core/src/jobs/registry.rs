//! The job registry: every kind of background job, each a type implementing [`JobKind`], and
//! the periodic tasks a worker process runs beside its workers.
//!
//! To add a kind: define a unit type next to the service that does the work, implement
//! [`JobKind`] for it (stored name, payload type, dedup key, pool, the service it runs with,
//! handler), and register it in that service's `register_jobs` (`registry.kind::<K>(service)`).
//! A kind without a payload or a handler does not compile, and one not registered is never
//! claimed by a worker. A periodic task registers itself the same way
//! ([`Registry::periodic`]).
//!
//! The spec names six kinds: `enrich_task`, `scan_local_folder`, `transcode_track`,
//! `cleanup_storage`, `download_task` and `materialize_track` (both fetch a remote track's
//! audio, and share one live job per track). Beside them, `reindex_library` (`POST /admin/reindex`) and `check_files`
//! (`POST /storage/broken/check`), and `submit_scrobbles` and `update_now_playing`
//! (forwarding plays to Last.fm and ListenBrainz), `analyze_sound` and `compute_similarity`
//! (recommendations), and `analyze_loudness` (ReplayGain where tags have none).
//! Stored names and payload shapes are a contract with jobs
//! already queued in a database: a payload may gain optional fields, never lose or rename one.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{Job, JobContext, JobError, Jobs};
use crate::config::RetryPolicy;

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
    /// What its handler runs with: the service that registered it.
    type Service: Clone + Send + Sync + 'static;

    /// At most one queued or running job per key: enqueueing a duplicate returns the live
    /// one. `None`: every enqueue is a new job.
    fn dedup_key(payload: &Self::Payload) -> Option<String>;

    /// Its own retries (attempts, backoff), when the job queue's (`JOB_MAX_ATTEMPTS`, 5 s
    /// doubling to 10 min) do not suit it.
    fn retry(_config: &crate::Config) -> Option<RetryPolicy> {
        None
    }

    /// Does the work. The value is kept as the job's result; an error says whether another
    /// attempt may succeed.
    fn run(
        service: &Self::Service,
        context: &JobContext,
        payload: Self::Payload,
    ) -> impl Future<Output = Result<Value, JobError>> + Send;

    /// Called once when a job of this kind has failed for good because its worker died (a
    /// crash, a SIGKILL) during the last attempt, so `run` never returned: a kind whose
    /// handler records its failures somewhere (a track's enrichment state) records this one
    /// too, saying `reason`.
    fn abandoned(
        _service: &Self::Service,
        _payload: Self::Payload,
        _reason: &str,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// A registered kind, its type erased.
trait Handler: Send + Sync {
    fn run<'a>(
        &'a self,
        context: &'a JobContext,
        payload: &'a Value,
    ) -> BoxFuture<'a, Result<Value, JobError>>;
    fn abandoned<'a>(&'a self, payload: &'a Value) -> BoxFuture<'a, ()>;
}

struct Registered<K: JobKind> {
    service: K::Service,
}

impl<K: JobKind> Handler for Registered<K> {
    fn run<'a>(
        &'a self,
        context: &'a JobContext,
        payload: &'a Value,
    ) -> BoxFuture<'a, Result<Value, JobError>> {
        Box::pin(async move {
            let payload: K::Payload = serde_json::from_value(payload.clone()).map_err(|error| {
                JobError::permanent(format!(
                    "the {} job's payload is malformed: {error}",
                    K::NAME
                ))
            })?;
            K::run(&self.service, context, payload).await
        })
    }

    fn abandoned<'a>(&'a self, payload: &'a Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Ok(payload) = serde_json::from_value(payload.clone()) {
                K::abandoned(&self.service, payload, super::queue::ABANDONED).await;
            }
        })
    }
}

/// A task a worker process runs for as long as it runs, beside its workers (re-enqueueing
/// plays still waiting to be scrobbled, the recommendations' sweep): given the shutdown
/// signal, it returns when that resolves.
pub(crate) type PeriodicTask =
    Arc<dyn Fn(BoxFuture<'static, ()>) -> BoxFuture<'static, ()> + Send + Sync>;

/// What the queue knows of every registered kind: its name, pool and own retries (not its
/// handler, which holds its service: [`Jobs`] keeps this, and services keep `Jobs`).
#[derive(Debug, Clone, Default)]
pub struct Kinds {
    pools: BTreeMap<&'static str, Pool>,
    retries: HashMap<&'static str, RetryPolicy>,
}

impl Kinds {
    /// Stored names of every registered kind, in name order.
    pub fn names(&self) -> Vec<&'static str> {
        self.pools.keys().copied().collect()
    }

    /// The stored names of the kinds `pool`'s workers take (none listed for the general
    /// pool: its workers take every kind).
    pub fn pool_kinds(&self, pool: Pool) -> Vec<&'static str> {
        match pool {
            Pool::General => Vec::new(),
            pool => self
                .pools
                .iter()
                .filter(|(_, of)| **of == pool)
                .map(|(name, _)| *name)
                .collect(),
        }
    }

    /// The retry policy of the kind named `name`, when it has its own.
    pub(crate) fn retry_of(&self, name: &str) -> Option<RetryPolicy> {
        self.retries.get(name).copied()
    }
}

/// Every job kind and periodic task this server runs, each registered by its service with
/// what it runs with, and the queue they use. Built once when the library opens; workers hold
/// it.
pub struct Registry {
    jobs: Jobs,
    kinds: Kinds,
    handlers: BTreeMap<&'static str, Arc<dyn Handler>>,
    periodic: Vec<(&'static str, PeriodicTask)>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("kinds", &self.kinds.names())
            .field("periodic", &self.periodic_names())
            .finish()
    }
}

impl Registry {
    /// An empty registry of `jobs`' queue.
    pub(crate) fn new(jobs: Jobs) -> Registry {
        Registry {
            jobs,
            kinds: Kinds::default(),
            handlers: BTreeMap::new(),
            periodic: Vec::new(),
        }
    }

    /// The queue.
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// The kinds' names, pools and retries.
    pub fn kinds(&self) -> &Kinds {
        &self.kinds
    }

    /// Registers kind `K`, run with `service` (and its own retry policy from `config`). A
    /// name registered twice is a programming error.
    pub(crate) fn kind<K: JobKind>(&mut self, service: K::Service, config: &crate::Config) {
        let previous = self
            .handlers
            .insert(K::NAME, Arc::new(Registered::<K> { service }));
        assert!(previous.is_none(), "job kind {} registered twice", K::NAME);
        self.kinds.pools.insert(K::NAME, K::POOL);
        if let Some(policy) = K::retry(config) {
            self.kinds.retries.insert(K::NAME, policy);
        }
    }

    /// Registers a periodic task named `name`: `task(shutdown)` runs until `shutdown`
    /// resolves.
    pub(crate) fn periodic<F>(
        &mut self,
        name: &'static str,
        task: impl Fn(BoxFuture<'static, ()>) -> F + Send + Sync + 'static,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        self.periodic
            .push((name, Arc::new(move |shutdown| Box::pin(task(shutdown)))));
    }

    /// The names of the periodic tasks, in name order.
    pub fn periodic_names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.periodic.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names
    }

    /// The periodic tasks, by name.
    pub(crate) fn periodic_tasks(&self) -> &[(&'static str, PeriodicTask)] {
        &self.periodic
    }

    /// Lets the kind of `job`, failed for good because its worker died, record the crash
    /// ([`JobKind::abandoned`]).
    pub(crate) async fn abandoned(&self, job: &Job) {
        if let Some(handler) = self.handlers.get(job.kind.as_str()) {
            handler.abandoned(&job.payload).await;
        }
    }

    /// Runs `job` with its kind's handler.
    pub(crate) async fn run(&self, context: &JobContext, job: &Job) -> Result<Value, JobError> {
        match self.handlers.get(job.kind.as_str()) {
            Some(handler) => handler.run(context, &job.payload).await,
            None => Err(JobError::permanent(format!(
                "this server has no handler for jobs of kind {:?}",
                job.kind
            ))),
        }
    }
}
