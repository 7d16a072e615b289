//! The HTTP listener: hyper's connection builder over a tokio listener, as `axum::serve`
//! does, plus what an internet-facing server needs and `axum::serve` cannot set:
//!
//! - a connection must bring its first request within `HTTP_HEADER_TIMEOUT_SECONDS`, or it
//!   is closed: a socket that sends nothing, or only part of the HTTP/2 preface, is not held
//!   (hyper reads the protocol version with no timer of its own);
//! - HTTP/1 requests' heads must arrive within the same time (slow-loris clients that trickle
//!   headers are cut off), which also bounds a keep-alive connection's wait for its next
//!   request;
//! - an HTTP/2 connection with no request open for `HTTP_IDLE_TIMEOUT_SECONDS` is closed, and
//!   its peer is pinged so a dead one is dropped;
//! - one client address may hold at most `MAX_CONNECTIONS_PER_ADDRESS` connections (trusted
//!   proxies are not limited);
//! - every request carries its connection's address (`ConnectInfo`) for the sign-in
//!   throttle.
//!
//! Shutdown is graceful: the listener stops, connections are told to finish, and requests
//! under way finish (for at most 30 s).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use musiclib_core::config::TrustedProxies;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};
use tower::ServiceExt;

use crate::shutdown::Shutdown;

/// How often an HTTP/2 peer is pinged, and how long it has to answer.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long an idle connection told to close may take to close (an HTTP/2 peer answers a
/// ping first); past it, it is dropped.
const CLOSING_GRACE: Duration = Duration::from_secs(5);

/// What bounds the listener's connections.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time to the first request's head (and each HTTP/1 request's head).
    pub header_timeout: Duration,
    /// Time an HTTP/2 connection may stay with no request open.
    pub idle_timeout: Duration,
    /// Connections one client address may hold open.
    pub max_per_address: usize,
    /// Proxies whose connections are not counted per address.
    pub trusted_proxies: TrustedProxies,
}

/// Serves `app` on `listener` until `shutdown`, then waits up to 30 s for open requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT);
    let builder = Arc::new(builder);
    let counts = Arc::new(PerAddress::default());
    // Each connection's task holds a sender; once shutdown drops ours, `recv` ends when the
    // last connection has.
    let (open_sender, mut all_closed) = mpsc::channel::<()>(1);
    let (stop_sender, stop_receiver) = tokio::sync::watch::channel(false);
    let stop = shutdown.wait();
    tokio::pin!(stop);
    loop {
        let (stream, address) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of file descriptors, say: the listener stays, the connection is lost.
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let peer = address.ip().to_canonical();
        let slot = if limits.trusted_proxies.contains(peer) {
            None
        } else {
            match counts.enter(peer, limits.max_per_address) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!(%address, "too many connections from one address; closed");
                    drop(stream);
                    continue;
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let service = {
            let activity = activity.clone();
            app.clone()
                .map_request(move |request: hyper::Request<hyper::body::Incoming>| {
                    let mut request = request.map(Body::new);
                    request
                        .extensions_mut()
                        .insert(ConnectInfo::<SocketAddr>(address));
                    request
                })
                .map_future(move |response| {
                    // Open from here until the response's body is dropped (sent, or
                    // abandoned), or until this future is (a request its client reset).
                    let open = Open::start(activity.clone());
                    async move {
                        let response: axum::response::Response = response.await?;
                        Ok::<_, std::convert::Infallible>(
                            response.map(|body| Body::new(Tracked { body, _open: open })),
                        )
                    }
                })
        };
        let builder = builder.clone();
        let open = open_sender.clone();
        let mut stop = stop_receiver.clone();
        let limits = limits.clone();
        tokio::spawn(async move {
            let _open = open;
            let _slot = slot;
            let connection = builder.serve_connection_with_upgrades(
                TokioIo::new(stream),
                TowerToHyperService::new(service),
            );
            tokio::pin!(connection);
            let mut stopping = false;
            // Until the first request: the header timeout, whatever protocol it speaks.
            let first = tokio::time::sleep(limits.header_timeout);
            tokio::pin!(first);
            // Once an idle connection is told to close: how long its peer has to let it (an
            // HTTP/2 peer that never answers the closing ping would hold it open).
            let closing = tokio::time::sleep(Duration::MAX);
            tokio::pin!(closing);
            let mut idle_closing = false;
            loop {
                let idle_check = tokio::time::sleep(activity.idle_check(limits.idle_timeout));
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(error) = result {
                            tracing::debug!(%error, %address, "connection closed with an error");
                        }
                        return;
                    }
                    () = &mut first, if !activity.seen() => {
                        if !activity.seen() {
                            tracing::debug!(%address, "no request within the header timeout; closed");
                            return;
                        }
                    }
                    () = activity.woken.notified(), if !activity.seen() => {}
                    () = idle_check, if activity.seen() && !stopping => {
                        if activity.idle_for() >= limits.idle_timeout {
                            stopping = true;
                            idle_closing = true;
                            closing.as_mut().reset(tokio::time::Instant::now() + CLOSING_GRACE);
                            connection.as_mut().graceful_shutdown();
                        }
                    }
                    () = &mut closing, if idle_closing => {
                        tracing::debug!(%address, "an idle connection did not close in time; dropped");
                        return;
                    }
                    changed = stop.changed(), if !stopping => {
                        if changed.is_err() || *stop.borrow() {
                            stopping = true;
                            connection.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = stop_sender.send(true);
    drop(open_sender);
    if tokio::time::timeout(Duration::from_secs(30), all_closed.recv())
        .await
        .is_err()
    {
        tracing::warn!("requests still open after 30 s; stopping anyway");
    }
    Ok(())
}

/// What a connection is doing: whether a request came, how many are open, since when none.
struct Activity {
    born: Instant,
    seen: AtomicBool,
    open: AtomicUsize,
    /// Milliseconds after `born` of the last request's start or end.
    last: AtomicU64,
    woken: Notify,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            born: Instant::now(),
            seen: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            last: AtomicU64::new(0),
            woken: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    fn started(&self) {
        self.open.fetch_add(1, Ordering::AcqRel);
        self.last.store(self.now(), Ordering::Release);
        if !self.seen.swap(true, Ordering::AcqRel) {
            self.woken.notify_one();
        }
    }

    fn finished(&self) {
        self.last.store(self.now(), Ordering::Release);
        self.open.fetch_sub(1, Ordering::AcqRel);
    }

    fn seen(&self) -> bool {
        self.seen.load(Ordering::Acquire)
    }

    /// How long no request has been open (zero while one is).
    fn idle_for(&self) -> Duration {
        if self.open.load(Ordering::Acquire) > 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(self.now().saturating_sub(self.last.load(Ordering::Acquire)))
    }

    /// When to look again whether the connection has been idle for `timeout`.
    fn idle_check(&self, timeout: Duration) -> Duration {
        if !self.seen() {
            // Only the header timeout matters until then; look again after it anyway.
            return timeout;
        }
        timeout
            .saturating_sub(self.idle_for())
            .max(Duration::from_millis(100))
    }
}

/// An open request of a connection, finished when dropped.
struct Open(Arc<Activity>);

impl Open {
    fn start(activity: Arc<Activity>) -> Open {
        activity.started();
        Open(activity)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.finished();
    }
}

/// A response body that keeps its request open until it is dropped.
struct Tracked {
    body: Body,
    _open: Open,
}

impl http_body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Open connections per client address (an IPv4 address, or an IPv6 /64).
#[derive(Default)]
struct PerAddress(Mutex<HashMap<IpAddr, usize>>);

impl PerAddress {
    fn enter(self: &Arc<Self>, address: IpAddr, max: usize) -> Option<Slot> {
        let key = match address {
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64))),
            v4 => v4,
        };
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(key).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot {
            counts: self.clone(),
            key,
        })
    }
}

/// One counted connection, given back when dropped.
struct Slot {
    counts: Arc<PerAddress>,
    key: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.key);
            }
        }
    }
}
