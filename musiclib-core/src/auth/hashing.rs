//! Password work (argon2id: 19 MiB and tens of milliseconds of one core per hash) runs in a
//! bounded number of slots, one per core, so a crowd of sign-ins costs at most that much
//! memory and never starves the rest of the server. A few times as many wait their turn; past
//! that, or after waiting too long, a sign-in is refused as busy (503 with `Retry-After`)
//! without any hash being computed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::{Error, Result};

/// How many password checks may wait for a slot, per slot.
const WAITING_PER_SLOT: usize = 16;

/// How long a password check waits for a slot before it is refused as busy.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// What a refused check is told to wait.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// The slots of password work, shared by everything that hashes or checks a password.
#[derive(Debug, Clone)]
pub(crate) struct PasswordWork {
    slots: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    max_waiting: usize,
}

impl PasswordWork {
    /// One slot per available core.
    pub(crate) fn per_core() -> PasswordWork {
        PasswordWork::with_slots(
            std::thread::available_parallelism().map_or(2, |cores| cores.get()),
        )
    }

    pub(crate) fn with_slots(slots: usize) -> PasswordWork {
        let slots = slots.max(1);
        PasswordWork {
            slots: Arc::new(Semaphore::new(slots)),
            waiting: Arc::new(AtomicUsize::new(0)),
            max_waiting: slots * WAITING_PER_SLOT,
        }
    }

    /// Runs `work` (a hash or a check) in a slot on the blocking pool. Refused as busy when too
    /// many are waiting already or no slot frees up in time; `work` then never runs.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T> {
        let busy = || Error::Busy {
            what: "sign-ins",
            retry_after: RETRY_AFTER,
        };
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let queued = Waiting::join(&self.waiting, self.max_waiting).ok_or_else(busy)?;
                let permit = tokio::time::timeout(MAX_WAIT, self.slots.clone().acquire_owned())
                    .await
                    .map_err(|_| busy())?
                    .expect("the semaphore is never closed");
                drop(queued);
                permit
            }
        };
        tokio::task::spawn_blocking(move || {
            let result = work();
            drop(permit);
            result
        })
        .await
        .map_err(Error::task("password hashing"))
    }

    /// How many checks wait for a slot now.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

/// A place in the queue of waiting checks, given up when dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn join(waiting: &'a AtomicUsize, max: usize) -> Option<Waiting<'a>> {
        waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < max).then_some(count + 1)
            })
            .ok()
            .map(|_| Waiting(waiting))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_past_the_slots_and_the_queue_is_refused_as_busy() {
        let work = PasswordWork::with_slots(1);
        // One check holds the slot until told to finish.
        let (finish, finished) = mpsc::channel::<()>();
        let running = tokio::spawn({
            let work = work.clone();
            async move { work.run(move || finished.recv().is_ok()).await }
        });
        // Wait (without a clock) until the slot is taken.
        while work.slots.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        // Sixteen more wait their turn; the seventeenth is refused at once, never run.
        let queued: Vec<_> = (0..WAITING_PER_SLOT)
            .map(|index| {
                let work = work.clone();
                tokio::spawn(async move { work.run(move || index).await })
            })
            .collect();
        while work.waiting() < WAITING_PER_SLOT {
            tokio::task::yield_now().await;
        }
        let refused = work.run(|| panic!("must not run")).await.unwrap_err();
        assert_eq!(refused.code(), "busy");
        assert_eq!(refused.retry_after_seconds(), Some(2));
        // The slot frees up: every waiting check runs, in turn.
        finish.send(()).unwrap();
        assert!(running.await.unwrap().unwrap());
        for (index, check) in queued.into_iter().enumerate() {
            assert_eq!(check.await.unwrap().unwrap(), index);
        }
        assert_eq!(work.waiting(), 0);
    }
}
