//! `musiclib healthcheck`: asks the server running with these settings whether it is
//! healthy, as a container's HEALTHCHECK or a monitoring script would, without a tool such
//! as curl in the image.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::settings::RawSettings;

/// How long the server has to answer.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The most of its answer read (`/health` answers a few hundred bytes).
const MAX_BODY_BYTES: usize = 64 * 1024;

/// GETs `/health` on BIND_ADDRESS and prints the answer; an error unless it is a 200.
pub async fn check(raw: &RawSettings) -> Result<()> {
    let url = format!("http://{}/health", reachable(raw.bind_address()?));
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .no_proxy()
        .build()
        .context("cannot make an HTTP client")?;
    let mut response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("{url}: no answer"))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .with_context(|| format!("{url}: the answer broke off"))?
    {
        let room = MAX_BODY_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_BODY_BYTES {
            break;
        }
    }
    println!("{}", String::from_utf8_lossy(&body));
    if !status.is_success() {
        bail!("{url} answered {status}");
    }
    Ok(())
}

/// The address to ask a server listening on `bind`: a wildcard address (all interfaces)
/// is reached on loopback.
fn reachable(bind: SocketAddr) -> SocketAddr {
    let ip = match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bind.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_address_is_asked_on_loopback() {
        let reached = |text: &str| reachable(text.parse().unwrap()).to_string();
        assert_eq!(reached("0.0.0.0:8000"), "127.0.0.1:8000");
        assert_eq!(reached("[::]:8000"), "[::1]:8000");
        assert_eq!(reached("192.0.2.7:4533"), "192.0.2.7:4533");
    }
}
