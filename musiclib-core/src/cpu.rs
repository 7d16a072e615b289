//! [`CpuSlots`]: one slot per core for CPU-heavy work (decoding, fingerprinting, transcoding),
//! however many jobs and requests run at once, so the async runtime's threads stay free.

use std::sync::Arc;

use tokio::sync::{Semaphore, SemaphorePermit};

/// Slots for CPU-heavy work, shared by every service of a library.
#[derive(Clone, Debug)]
pub(crate) struct CpuSlots(Arc<Semaphore>);

impl CpuSlots {
    /// One slot per available core.
    pub(crate) fn per_core() -> CpuSlots {
        CpuSlots(Arc::new(Semaphore::new(
            std::thread::available_parallelism().map_or(2, |cores| cores.get()),
        )))
    }

    /// Waits for a slot; it is given back when the permit drops.
    pub(crate) async fn acquire(&self) -> SemaphorePermit<'_> {
        self.0
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// A slot if one is free now (work that can use a second core when there is one).
    pub(crate) fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.0.try_acquire().ok()
    }
}
