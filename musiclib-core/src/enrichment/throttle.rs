//! A process-wide request throttle for the public web services (AcoustID asks for at most 3
//! requests per second per client).
//!
//! It is a GCRA limiter (governor) with a burst of one, so requests are spaced evenly and a
//! server that counts requests in any one-second window never sees more than the rate. The
//! clock is tokio's, so tests can run it with paused time.

use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// governor's clock reading tokio's time (which tests can pause and advance); the sign-in
/// throttle (`auth::throttle`) counts with it too.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TokioClock;

impl Clock for TokioClock {
    type Instant = std::time::Instant;

    fn now(&self) -> std::time::Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// Spaces calls at least `1 / rate` seconds apart, across every task that shares it.
pub struct Throttle {
    limiter: RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<std::time::Instant>>,
    period: Duration,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("period", &self.period)
            .finish()
    }
}

impl Throttle {
    /// At most `per_second` calls per second (a non-positive rate is treated as 1 per hour).
    pub fn per_second(per_second: f64) -> Throttle {
        let period = if per_second > 0.0 {
            // Round up to whole microseconds so rounding never makes it faster than asked.
            Duration::from_micros((1_000_000.0 / per_second).ceil() as u64)
                .max(Duration::from_micros(1))
        } else {
            Duration::from_secs(3600)
        };
        let quota = Quota::with_period(period).expect("the period is positive");
        Throttle {
            limiter: RateLimiter::direct_with_clock(quota, TokioClock),
            period,
        }
    }

    /// The spacing between two calls.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Waits until the next call may go.
    pub async fn ready(&self) {
        loop {
            match self.limiter.check() {
                Ok(()) => return,
                Err(not_until) => {
                    let wait = not_until.wait_time_from(TokioClock.now());
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn calls_are_spaced_by_the_period_even_when_they_race() {
        let throttle = std::sync::Arc::new(Throttle::per_second(3.0));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..9 {
            let throttle = throttle.clone();
            tasks.push(tokio::spawn(async move {
                throttle.ready().await;
                Instant::now()
            }));
        }
        let mut times = Vec::new();
        for task in tasks {
            times.push(task.await.unwrap() - start);
        }
        times.sort();
        // The first goes at once; each later one at least a third of a second after the last.
        assert_eq!(times[0], Duration::ZERO);
        for pair in times.windows(2) {
            assert!(
                pair[1] - pair[0] >= Duration::from_micros(333_334),
                "{times:?}"
            );
        }
        // Never more than 3 in any one-second window.
        for (index, time) in times.iter().enumerate() {
            let in_window = times[index..]
                .iter()
                .filter(|other| **other - *time < Duration::from_secs(1))
                .count();
            assert!(in_window <= 3, "{times:?}");
        }
        // And it does not wait longer than needed: 9 calls take 8 periods (with 5 % slack).
        assert!(times[8] < Duration::from_millis(2850), "{times:?}");
    }
}
