//! Sign-in throttling: failed sign-ins are counted per account name and per client address,
//! each against a budget of a burst and then one more failure per interval (GCRA limiters,
//! governor). Only failures count, so a Subsonic app that signs every request with the right
//! password never spends anything. Once a budget is spent, sign-ins are refused before the
//! password is checked, until it has a failure to give again: guessing stops, and the real
//! user waits at most one interval once the failures stop.
//!
//! Budgets are per process (each replica counts its own) and per door: the `/api/v1` login
//! and the Subsonic interface check different secrets (the login password, the app password),
//! so a Subsonic app left with a stale app password cannot lock its owner out of the login.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use tokio::time::Instant;

use crate::config::SignInThrottleConfig;
use crate::enrichment::throttle::TokioClock;
use crate::{Error, Result};

/// Which secret a sign-in checks: each has budgets of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Door {
    /// The login password (`Accounts::login`).
    Login,
    /// The app password of the Subsonic interface (user and token or password, or API key).
    Legacy,
}

/// Failures are counted per account name (its name key, known or not, so the answer never
/// tells which names exist) and per client address.
pub(crate) struct SignInThrottle {
    accounts: Budget<(Door, String)>,
    addresses: Budget<(Door, IpAddr)>,
}

impl std::fmt::Debug for SignInThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInThrottle").finish_non_exhaustive()
    }
}

impl SignInThrottle {
    pub(crate) fn new(config: &SignInThrottleConfig) -> SignInThrottle {
        SignInThrottle {
            accounts: Budget::new(config.account_burst, config.account_interval),
            addresses: Budget::new(config.address_burst, config.address_interval),
        }
    }

    /// Refuses a sign-in through `door` when its account (a name key) or its address has spent
    /// its budget, with the longer of the two waits. An unknown address (a router called
    /// without the connection's address, as tests do) is throttled by its account alone.
    pub(crate) fn check(
        &self,
        door: Door,
        account: Option<&str>,
        address: Option<IpAddr>,
    ) -> Result<()> {
        let now = Instant::now();
        let by_account =
            account.and_then(|account| self.accounts.wait(&(door, account.to_string()), now));
        let by_address =
            address.and_then(|address| self.addresses.wait(&(door, client(address)), now));
        match by_account.max(by_address) {
            Some(retry_after) => Err(Error::SignInThrottled { retry_after }),
            None => Ok(()),
        }
    }

    /// Counts a failed sign-in against its account and its address.
    pub(crate) fn failed(&self, door: Door, account: Option<&str>, address: Option<IpAddr>) {
        let now = Instant::now();
        if let Some(account) = account {
            self.accounts.fail((door, account.to_string()), now);
        }
        if let Some(address) = address {
            self.addresses.fail((door, client(address)), now);
        }
    }
}

/// The key of a client address: an IPv4 address, or the /64 network of an IPv6 address (one
/// host usually holds a whole /64, so single addresses would give it billions of budgets).
fn client(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let network = u128::from(v6) & !(u128::MAX >> 64);
            IpAddr::V6(Ipv6Addr::from(network))
        }
    }
}

/// How many failures pass between two sweeps of forgotten keys.
const SWEEP_EVERY: u64 = 512;

type Limiter<K> = RateLimiter<K, HashMapStateStore<K>, TokioClock, StateInformationMiddleware>;

/// One budget per key: `burst` failures, then one per `interval`.
struct Budget<K: Hash + Eq + Clone> {
    /// The failures (each one a cell of the GCRA limiter).
    failures: Limiter<K>,
    /// Keys whose budget is spent, with when it has a failure to give again. The limiter
    /// cannot be asked without spending a cell, and a sign-in that succeeds must spend nothing,
    /// so the check reads this instead.
    spent: Mutex<HashMap<K, Instant>>,
    interval: Duration,
    counted: AtomicU64,
}

impl<K: Hash + Eq + Clone> Budget<K> {
    fn new(burst: u32, interval: Duration) -> Budget<K> {
        let interval = interval.max(Duration::from_millis(1));
        let quota = Quota::with_period(interval)
            .expect("the interval is positive")
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        Budget {
            failures: Limiter::new(quota, HashMapStateStore::default(), TokioClock),
            spent: Mutex::new(HashMap::new()),
            interval,
            counted: AtomicU64::new(0),
        }
    }

    /// How long `key` must still wait, when its budget is spent.
    fn wait(&self, key: &K, now: Instant) -> Option<Duration> {
        let spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent
            .get(key)
            .map(|until| until.saturating_duration_since(now))
            .filter(|wait| !wait.is_zero())
    }

    /// Counts a failure of `key`; when it spends the budget, the key waits from now on.
    fn fail(&self, key: K, now: Instant) {
        let wait = match self.failures.check_key(&key) {
            Ok(state) if state.remaining_burst_capacity() > 0 => None,
            // That was the last failure of the budget: the next is back within an interval.
            Ok(_) => Some(self.interval),
            // Failures checked at the same time overshot the budget (they all passed the check
            // before any was counted): wait until the limiter has room again.
            Err(not_until) => Some(not_until.wait_time_from(TokioClock.now())),
        };
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(wait) = wait {
            let until = now + wait;
            let entry = spent.entry(key).or_insert(until);
            *entry = (*entry).max(until);
        }
        if self.counted.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            // Keys left alone long enough are back to a full budget: forget them, so names
            // and addresses tried once do not pile up.
            spent.retain(|_, until| *until > now);
            self.failures.retain_recent();
            self.failures.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(account_burst: u32, address_burst: u32) -> SignInThrottle {
        SignInThrottle::new(&SignInThrottleConfig {
            account_burst,
            account_interval: Duration::from_secs(6),
            address_burst,
            address_interval: Duration::from_secs(2),
        })
    }

    fn waits(result: Result<()>) -> Option<u64> {
        match result {
            Ok(()) => None,
            Err(error) => Some(error.retry_after_seconds().expect("a throttled sign-in")),
        }
    }

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7)));

    #[tokio::test(start_paused = true)]
    async fn an_account_is_refused_after_its_burst_and_gets_one_try_per_interval() {
        let throttle = throttle(3, 1000);
        for _ in 0..3 {
            assert_eq!(
                waits(throttle.check(Door::Login, Some("alice"), HOME)),
                None
            );
            throttle.failed(Door::Login, Some("alice"), HOME);
        }
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), HOME)),
            Some(6)
        );
        // Another account, the same account through the other door: untouched.
        assert_eq!(waits(throttle.check(Door::Login, Some("bob"), HOME)), None);
        assert_eq!(
            waits(throttle.check(Door::Legacy, Some("alice"), HOME)),
            None
        );
        tokio::time::advance(Duration::from_millis(5_500)).await;
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), HOME)),
            Some(1)
        );
        tokio::time::advance(Duration::from_millis(500)).await;
        // One more try; failing it spends the budget again for one interval.
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), HOME)),
            None
        );
        throttle.failed(Door::Login, Some("alice"), HOME);
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), HOME)),
            Some(6)
        );
        // Left alone for the whole burst's time, the account has its whole burst back.
        tokio::time::advance(Duration::from_secs(18)).await;
        for _ in 0..3 {
            assert_eq!(
                waits(throttle.check(Door::Login, Some("alice"), HOME)),
                None
            );
            throttle.failed(Door::Login, Some("alice"), HOME);
        }
        assert!(throttle.check(Door::Login, Some("alice"), HOME).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn successes_spend_nothing() {
        let throttle = throttle(2, 1000);
        // Checks alone (sign-ins that succeed) never throttle.
        for _ in 0..1000 {
            assert_eq!(
                waits(throttle.check(Door::Legacy, Some("alice"), HOME)),
                None
            );
        }
        throttle.failed(Door::Legacy, Some("alice"), HOME);
        assert_eq!(
            waits(throttle.check(Door::Legacy, Some("alice"), HOME)),
            None
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_is_refused_over_all_names_and_others_are_not() {
        let throttle = throttle(1000, 4);
        for index in 0..4 {
            let name = format!("guess{index}");
            assert_eq!(waits(throttle.check(Door::Login, Some(&name), HOME)), None);
            throttle.failed(Door::Login, Some(&name), HOME);
        }
        assert_eq!(
            waits(throttle.check(Door::Login, Some("fresh"), HOME)),
            Some(2)
        );
        // An API key names no account: the address alone decides.
        assert_eq!(waits(throttle.check(Door::Login, None, HOME)), Some(2));
        let elsewhere = Some("198.51.100.1".parse().unwrap());
        assert_eq!(
            waits(throttle.check(Door::Login, Some("fresh"), elsewhere)),
            None
        );
        // Without an address, only the account counts.
        assert_eq!(
            waits(throttle.check(Door::Login, Some("fresh"), None)),
            None
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(
            waits(throttle.check(Door::Login, Some("fresh"), HOME)),
            None
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_longer_wait_of_account_and_address_is_given() {
        let throttle = throttle(1, 1);
        throttle.failed(Door::Login, Some("alice"), HOME);
        // The account waits 6 s, the address 2 s.
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), HOME)),
            Some(6)
        );
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), HOME)),
            Some(3)
        );
        assert_eq!(waits(throttle.check(Door::Login, Some("bob"), HOME)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_that_overshoot_together_wait_for_the_limiter() {
        let throttle = throttle(2, 1000);
        // Five failures that all passed the check before any was counted.
        for _ in 0..5 {
            throttle.failed(Door::Login, Some("alice"), None);
        }
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), None)),
            Some(6)
        );
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(
            waits(throttle.check(Door::Login, Some("alice"), None)),
            None
        );
    }

    #[test]
    fn ipv6_hosts_share_their_network_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client(a), client(b));
        assert_ne!(client(a), client(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(client(mapped), HOME.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn forgotten_keys_are_swept() {
        let budget: Budget<u64> = Budget::new(1, Duration::from_secs(1));
        for key in 0..SWEEP_EVERY - 1 {
            budget.fail(key, Instant::now());
        }
        assert_eq!(budget.spent.lock().unwrap().len() as u64, SWEEP_EVERY - 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        budget.fail(SWEEP_EVERY, Instant::now());
        // The sweep ran with the last failure: only its key is left.
        assert_eq!(budget.spent.lock().unwrap().len(), 1);
        assert_eq!(budget.failures.len(), 1);
    }
}
