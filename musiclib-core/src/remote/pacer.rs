//! How a source spaces its calls and backs off when the service says to slow down.
//!
//! Calls are spaced at least `min_interval` apart. When the service rate-limits a call (HTTP
//! 429, YouTube's "rate-limited"), the source pauses: nothing is sent until the pause ends.
//! The pause starts at 30 s and doubles with each rate-limited call, up to 30 min; a call
//! that works ends it. A search during a pause fails at once, saying how long is left; a
//! download waits it out when it is short, and otherwise fails as temporary, so its job
//! retries later. The pacer lives in one process: each worker process paces itself.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// First pause after a rate-limited call.
const FIRST_PAUSE: Duration = Duration::from_secs(30);
/// Longest pause.
const LONGEST_PAUSE: Duration = Duration::from_secs(30 * 60);
/// A download waits out a pause up to this long rather than failing.
pub(crate) const WAIT_AT_MOST: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub(crate) struct Pacer {
    min_interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// When the next call may start.
    next_slot: Instant,
    /// The current pause's length (zero when not rate-limited).
    pause: Duration,
    /// Until when nothing is sent.
    paused_until: Option<Instant>,
}

impl Pacer {
    pub(crate) fn new(min_interval: Duration) -> Pacer {
        Pacer {
            min_interval,
            state: Mutex::new(State {
                next_slot: Instant::now(),
                pause: Duration::ZERO,
                paused_until: None,
            }),
        }
    }

    /// How long the current pause still lasts.
    pub(crate) fn paused_for(&self) -> Option<Duration> {
        let state = self.state.lock().expect("pacer");
        state
            .paused_until
            .and_then(|until| until.checked_duration_since(Instant::now()))
            .filter(|left| !left.is_zero())
    }

    /// Takes the next slot, waiting for it (a pause must be checked first).
    pub(crate) async fn slot(&self) {
        let wait = {
            let mut state = self.state.lock().expect("pacer");
            let now = Instant::now();
            let start = state.next_slot.max(now);
            state.next_slot = start + self.min_interval;
            start - now
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// The service rate-limited a call: pause longer than last time. Answers the pause.
    pub(crate) fn rate_limited(&self) -> Duration {
        let mut state = self.state.lock().expect("pacer");
        state.pause = if state.pause.is_zero() {
            FIRST_PAUSE
        } else {
            (state.pause * 2).min(LONGEST_PAUSE)
        };
        state.paused_until = Some(Instant::now() + state.pause);
        state.pause
    }

    /// A call worked: no more pause.
    pub(crate) fn worked(&self) {
        let mut state = self.state.lock().expect("pacer");
        state.pause = Duration::ZERO;
        state.paused_until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pauses_grow_and_end_when_a_call_works() {
        let pacer = Pacer::new(Duration::from_millis(1));
        assert!(pacer.paused_for().is_none());
        assert_eq!(pacer.rate_limited(), FIRST_PAUSE);
        assert_eq!(pacer.rate_limited(), FIRST_PAUSE * 2);
        assert!(pacer.paused_for().unwrap() > FIRST_PAUSE);
        for _ in 0..10 {
            pacer.rate_limited();
        }
        assert_eq!(pacer.rate_limited(), LONGEST_PAUSE);
        pacer.worked();
        assert!(pacer.paused_for().is_none());
        assert_eq!(pacer.rate_limited(), FIRST_PAUSE);
    }

    #[tokio::test]
    async fn slots_are_spaced() {
        let pacer = Pacer::new(Duration::from_millis(40));
        let started = Instant::now();
        for _ in 0..3 {
            pacer.slot().await;
        }
        assert!(started.elapsed() >= Duration::from_millis(80));
    }
}
