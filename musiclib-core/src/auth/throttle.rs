//! Sign-in throttling: every sign-in attempt is counted *before* its password is checked, and
//! given back when it succeeds, so only failures spend a budget, and a burst of concurrent
//! guesses is cut at the budget instead of all reaching the password check.
//!
//! Three budgets, each a burst and then one more failure per interval (GCRA: a "theoretical
//! arrival time" per key, which a refund moves back):
//!
//! - **one account from one address** (`LOGIN_ACCOUNT_FAILURE_*`): a user's own mistakes, and
//!   a guesser at one account from one place;
//! - **one address over all names** (`LOGIN_ADDRESS_FAILURE_*`): a guesser trying many names;
//! - **one account from every address** (ten times the first budget): guessing spread over
//!   many addresses.
//!
//! The last two are shared, so others' failures could lock a user out; a client that proved
//! itself recently from its address (a valid token, a right password or app password) is not
//! refused by them, only by its own pair budget. A spent budget refuses sign-ins before the
//! password is checked, until it has a failure to give again: guessing stops, and the real user
//! waits at most one interval once the failures stop.
//!
//! Budgets are per process (each replica counts its own) and per door: the `/api/v1` login and
//! the Subsonic interface check different secrets (the login password, the app password), so
//! a Subsonic app left with a stale app password cannot lock its owner out of the login.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::SignInThrottleConfig;
use crate::{Error, Result, UserId};

/// Which secret a sign-in checks: each has budgets of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Door {
    /// The login password (`Accounts::login`, registration, password changes).
    Login,
    /// The app password of the Subsonic interface (user and token or password, or API key).
    Legacy,
}

/// How many times the pair budget one account has over all addresses.
const ACCOUNT_TOTAL_FACTOR: u32 = 10;

/// How long a client that proved itself stays proven at its address.
const PROVEN_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

/// Most proven clients remembered (a sweep makes room past it).
const MAX_PROVEN: usize = 100_000;

/// Failures counted per (account, address), per address and per account. Accounts are name
/// keys (known or not, so the answer never tells which names exist).
pub(crate) struct SignInThrottle {
    pairs: Budget<(Door, String, Option<IpAddr>)>,
    addresses: Budget<(Door, IpAddr)>,
    accounts: Budget<(Door, String)>,
    /// Clients that proved themselves: (account, address network) → when, last.
    proven: Mutex<HashMap<(UserId, IpAddr), Instant>>,
}

impl std::fmt::Debug for SignInThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInThrottle").finish_non_exhaustive()
    }
}

/// What a sign-in attempt names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who<'a> {
    /// The door.
    pub door: Door,
    /// The account's name key, when the attempt names one (an API key or a registration
    /// does not).
    pub account: Option<&'a str>,
    /// The client's address, when the adapter knows it.
    pub address: Option<IpAddr>,
    /// Whether this client proved itself as this account from this address recently: the
    /// shared budgets then count its failures without refusing it.
    pub proven: bool,
}

/// One counted attempt. Dropped, it stays counted as a failure (a client that hangs up while
/// its password is checked spent its try); [`Attempt::succeeded`] gives it back.
pub(crate) struct Attempt<'a> {
    throttle: &'a SignInThrottle,
    pair: Option<(Door, String, Option<IpAddr>)>,
    address: Option<(Door, IpAddr)>,
    account: Option<(Door, String)>,
}

impl Attempt<'_> {
    /// The attempt succeeded: it spends nothing.
    pub(crate) fn succeeded(mut self) {
        self.refund();
    }

    /// The attempt was never decided (the server was too busy to check it): it spends nothing.
    pub(crate) fn cancelled(mut self) {
        self.refund();
    }

    fn refund(&mut self) {
        if let Some(key) = self.pair.take() {
            self.throttle.pairs.refund(&key);
        }
        if let Some(key) = self.address.take() {
            self.throttle.addresses.refund(&key);
        }
        if let Some(key) = self.account.take() {
            self.throttle.accounts.refund(&key);
        }
    }
}

impl SignInThrottle {
    pub(crate) fn new(config: &SignInThrottleConfig) -> SignInThrottle {
        SignInThrottle {
            pairs: Budget::new(config.account_burst, config.account_interval),
            addresses: Budget::new(config.address_burst, config.address_interval),
            accounts: Budget::new(
                config.account_burst.saturating_mul(ACCOUNT_TOTAL_FACTOR),
                config.account_interval,
            ),
            proven: Mutex::new(HashMap::new()),
        }
    }

    /// Counts an attempt, before any secret is checked. Refused with the longest wait when a
    /// budget it spends from has nothing left (then nothing is counted).
    pub(crate) fn begin(&self, who: Who<'_>) -> Result<Attempt<'_>> {
        let now = Instant::now();
        let mut attempt = Attempt {
            throttle: self,
            pair: None,
            address: None,
            account: None,
        };
        let address = who.address.map(client);
        let mut waits = Vec::new();
        if let Some(account) = who.account {
            let key = (who.door, account.to_string(), address);
            match self.pairs.take(&key, now, true) {
                Ok(()) => attempt.pair = Some(key),
                Err(wait) => waits.push(wait),
            }
            let key = (who.door, account.to_string());
            match self.accounts.take(&key, now, !who.proven) {
                Ok(()) => attempt.account = Some(key),
                Err(wait) => waits.push(wait),
            }
        }
        if let Some(address) = address {
            let key = (who.door, address);
            match self.addresses.take(&key, now, !who.proven) {
                Ok(()) => attempt.address = Some(key),
                Err(wait) => waits.push(wait),
            }
        }
        match waits.into_iter().max() {
            Some(retry_after) => {
                attempt.refund();
                Err(Error::SignInThrottled { retry_after })
            }
            None => Ok(attempt),
        }
    }

    /// Remembers that `user` proved itself from `address`.
    pub(crate) fn proved(&self, user: &UserId, address: Option<IpAddr>) {
        let Some(address) = address.map(client) else {
            return;
        };
        let now = Instant::now();
        let mut proven = self.proven.lock().unwrap_or_else(PoisonError::into_inner);
        if proven.len() >= MAX_PROVEN && !proven.contains_key(&(user.clone(), address)) {
            proven.retain(|_, when| now.saturating_duration_since(*when) < PROVEN_FOR);
            if proven.len() >= MAX_PROVEN {
                // Still full of recent clients: forget them all rather than grow.
                proven.clear();
            }
        }
        proven.insert((user.clone(), address), now);
    }

    /// Whether `user` proved itself from `address` recently.
    pub(crate) fn is_proven(&self, user: &UserId, address: Option<IpAddr>) -> bool {
        let Some(address) = address.map(client) else {
            return false;
        };
        let proven = self.proven.lock().unwrap_or_else(PoisonError::into_inner);
        proven
            .get(&(user.clone(), address))
            .is_some_and(|when| Instant::now().saturating_duration_since(*when) < PROVEN_FOR)
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

/// How many attempts pass between two sweeps of forgotten keys.
const SWEEP_EVERY: u64 = 512;

/// One budget per key: `burst` failures, then one per `interval` (GCRA). A key's value is its
/// theoretical arrival time: the time at which its whole burst is back. An attempt may spend
/// when that time is at most `(burst − 1) × interval` ahead; spending moves it one interval on,
/// a refund one interval back.
struct Budget<K: Hash + Eq + Clone> {
    keys: Mutex<HashMap<K, Duration>>,
    /// The origin of the stored times.
    epoch: Instant,
    interval: Duration,
    tolerance: Duration,
    counted: AtomicU64,
}

impl<K: Hash + Eq + Clone> Budget<K> {
    fn new(burst: u32, interval: Duration) -> Budget<K> {
        let interval = interval.max(Duration::from_millis(1));
        Budget {
            keys: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
            interval,
            tolerance: interval.saturating_mul(burst.max(1) - 1),
            counted: AtomicU64::new(0),
        }
    }

    /// Spends one attempt of `key`. When the budget is spent: refused with the wait if
    /// `enforce`, else counted anyway (a proven client's failures still count for others).
    fn take(&self, key: &K, now: Instant, enforce: bool) -> std::result::Result<(), Duration> {
        let now = now.saturating_duration_since(self.epoch);
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let arrival = keys.get(key).copied().unwrap_or(Duration::ZERO).max(now);
        let allowed_at = arrival.saturating_sub(self.tolerance);
        if enforce && allowed_at > now {
            return Err(allowed_at - now);
        }
        keys.insert(key.clone(), arrival + self.interval);
        if self.counted.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            // Keys whose whole burst is back are as good as new: forget them, so names and
            // addresses tried once do not pile up.
            keys.retain(|_, arrival| *arrival > now);
        }
        Ok(())
    }

    /// Gives one attempt of `key` back.
    fn refund(&self, key: &K) {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(arrival) = keys.get_mut(key) {
            *arrival = arrival.saturating_sub(self.interval);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.lock().unwrap().len()
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

    fn who<'a>(door: Door, account: Option<&'a str>, address: Option<IpAddr>) -> Who<'a> {
        Who {
            door,
            account,
            address,
            proven: false,
        }
    }

    /// Seconds to wait when refused; a failed attempt when not.
    fn fail(throttle: &SignInThrottle, who: Who<'_>) -> Option<u64> {
        match throttle.begin(who) {
            Ok(_attempt) => None,
            Err(error) => Some(error.retry_after_seconds().expect("a throttled sign-in")),
        }
    }

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7)));
    const WORK: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 1)));

    #[tokio::test(start_paused = true)]
    async fn an_account_is_refused_after_its_burst_and_gets_one_try_per_interval() {
        let throttle = throttle(3, 1000);
        let alice = who(Door::Login, Some("alice"), HOME);
        for _ in 0..3 {
            assert_eq!(fail(&throttle, alice), None);
        }
        assert_eq!(fail(&throttle, alice), Some(6));
        // Another account, the same account through the other door: untouched.
        assert_eq!(fail(&throttle, who(Door::Login, Some("bob"), HOME)), None);
        assert_eq!(
            fail(&throttle, who(Door::Legacy, Some("alice"), HOME)),
            None
        );
        tokio::time::advance(Duration::from_millis(5_500)).await;
        assert_eq!(fail(&throttle, alice), Some(1));
        tokio::time::advance(Duration::from_millis(500)).await;
        // One more try; failing it spends the budget again for one interval.
        assert_eq!(fail(&throttle, alice), None);
        assert_eq!(fail(&throttle, alice), Some(6));
        // Left alone for the whole burst's time, the account has its whole burst back.
        tokio::time::advance(Duration::from_secs(18)).await;
        for _ in 0..3 {
            assert_eq!(fail(&throttle, alice), None);
        }
        assert!(throttle.begin(alice).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn successes_spend_nothing() {
        let throttle = throttle(2, 1000);
        let alice = who(Door::Legacy, Some("alice"), HOME);
        for _ in 0..1000 {
            throttle.begin(alice).expect("counted").succeeded();
        }
        assert_eq!(fail(&throttle, alice), None);
        assert_eq!(fail(&throttle, alice), None);
        assert_eq!(fail(&throttle, alice), Some(6));
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_are_counted_before_they_are_decided() {
        // Sixty guesses at once: only the burst's worth get to the password.
        let throttle = throttle(10, 1000);
        let alice = who(Door::Login, Some("alice"), HOME);
        let attempts: Vec<_> = (0..60).map(|_| throttle.begin(alice)).collect();
        assert_eq!(
            attempts.iter().filter(|attempt| attempt.is_ok()).count(),
            10
        );
        // A busy server gives an undecided attempt back.
        let mut attempts = attempts.into_iter().flatten();
        attempts.next().unwrap().cancelled();
        drop(attempts);
        assert_eq!(fail(&throttle, alice), None);
        assert_eq!(fail(&throttle, alice), Some(6));
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_is_refused_over_all_names_and_others_are_not() {
        let throttle = throttle(1000, 4);
        for index in 0..4 {
            let name = format!("guess{index}");
            assert_eq!(fail(&throttle, who(Door::Login, Some(&name), HOME)), None);
        }
        assert_eq!(
            fail(&throttle, who(Door::Login, Some("fresh"), HOME)),
            Some(2)
        );
        // An API key names no account: the address alone decides.
        assert_eq!(fail(&throttle, who(Door::Login, None, HOME)), Some(2));
        assert_eq!(fail(&throttle, who(Door::Login, Some("fresh"), WORK)), None);
        // Without an address, only the account counts.
        assert_eq!(fail(&throttle, who(Door::Login, Some("fresh"), None)), None);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(fail(&throttle, who(Door::Login, Some("fresh"), HOME)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn one_address_failing_does_not_lock_the_account_out_elsewhere() {
        let throttle = throttle(3, 1000);
        let guesser = who(Door::Legacy, Some("alice"), WORK);
        for _ in 0..3 {
            assert_eq!(fail(&throttle, guesser), None);
        }
        assert_eq!(fail(&throttle, guesser), Some(6));
        // A failure every few seconds from one place keeps that place out, not alice at home.
        for _ in 0..20 {
            tokio::time::advance(Duration::from_secs(6)).await;
            assert_eq!(fail(&throttle, guesser), None);
            throttle
                .begin(who(Door::Legacy, Some("alice"), HOME))
                .expect("alice at home")
                .succeeded();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn guessing_from_many_addresses_spends_the_account_but_not_a_proven_client() {
        let throttle = throttle(2, 100_000);
        let alice = UserId::new();
        throttle.proved(&alice, HOME);
        // 2 × 10 failures spread over many addresses spend the account's total budget.
        for host in 0..20u8 {
            let address = Some(IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, host)));
            assert_eq!(
                fail(&throttle, who(Door::Login, Some("alice"), address)),
                None
            );
        }
        let stranger = Some(IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 200)));
        assert_eq!(
            fail(&throttle, who(Door::Login, Some("alice"), stranger)),
            Some(6)
        );
        // The client that proved itself at home signs in all the same.
        let home = Who {
            proven: throttle.is_proven(&alice, HOME),
            ..who(Door::Login, Some("alice"), HOME)
        };
        assert!(home.proven);
        throttle.begin(home).expect("a proven client").succeeded();
        // Another user id, or another address, is not proven.
        assert!(!throttle.is_proven(&UserId::new(), HOME));
        assert!(!throttle.is_proven(&alice, stranger));
        assert!(!throttle.is_proven(&alice, None));
        // Proven clients are forgotten after a week.
        tokio::time::advance(PROVEN_FOR).await;
        assert!(!throttle.is_proven(&alice, HOME));
    }

    #[tokio::test(start_paused = true)]
    async fn a_proven_client_is_not_locked_out_by_failures_at_its_address() {
        let throttle = throttle(1000, 3);
        let bob = UserId::new();
        throttle.proved(&bob, HOME);
        for index in 0..3 {
            let name = format!("guess{index}");
            assert_eq!(fail(&throttle, who(Door::Login, Some(&name), HOME)), None);
        }
        assert_eq!(
            fail(&throttle, who(Door::Login, Some("carol"), HOME)),
            Some(2)
        );
        let proven = Who {
            proven: true,
            ..who(Door::Login, Some("bob"), HOME)
        };
        throttle
            .begin(proven)
            .expect("bob proved himself")
            .succeeded();
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
            budget.take(&key, Instant::now(), true).unwrap();
        }
        assert_eq!(budget.len() as u64, SWEEP_EVERY - 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        budget.take(&SWEEP_EVERY, Instant::now(), true).unwrap();
        // The sweep ran with the last attempt: only its key is left.
        assert_eq!(budget.len(), 1);
    }
}
