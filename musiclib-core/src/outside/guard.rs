//! Fetching a URL a user gave: a podcast feed, its episodes and images, a radio station.
//!
//! Such a URL is an attack surface (server-side request forgery): without these rules the
//! server would fetch, on anyone's behalf, the admin page of the router beside it, a cloud
//! metadata service, or its own loopback ports. So a guarded fetch
//!
//! - speaks http and https only, to a host with a name or a public address;
//! - resolves the name itself and refuses it when any address it resolves to is private,
//!   loopback, link-local, multicast or otherwise not a public unicast address; the
//!   connection then goes to the checked addresses (the client's resolver is ours, so there
//!   is no second lookup an attacker's DNS could answer differently: no rebinding);
//! - checks every redirect again (scheme, a literal address; its name goes through the same
//!   resolver), at most [`MAX_REDIRECTS`];
//! - ignores proxy settings of the environment (a proxy would resolve names where we cannot
//!   check them);
//! - is bounded in time by its caller (each has its own timeout) and in size by
//!   [`super::read_capped`] or the caller's own count.
//!
//! An operator with a podcast server at home lets private addresses through with
//! `ALLOW_PRIVATE_URLS=true` (tests do too, for their loopback servers); the scheme rules
//! stay.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

/// The most redirects a guarded fetch follows.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// Longest URL accepted from a user or a feed.
pub(crate) const MAX_URL_LEN: usize = 2048;

/// The client for URLs users give. See the module's documentation.
pub(crate) fn guarded_client(allow_private: bool) -> reqwest::Client {
    guarded_builder(allow_private)
        .build()
        .expect("a TLS backend is compiled in")
}

/// [`guarded_client`]'s builder, for a caller that adds its timeouts.
pub(crate) fn guarded_builder(allow_private: bool) -> reqwest::ClientBuilder {
    super::builder()
        .no_proxy()
        .dns_resolver(Arc::new(CheckedResolver { allow_private }))
        .redirect(checked_redirects(allow_private))
}

/// Parses a URL a user gave and checks what can be checked before any lookup: its length,
/// an http or https scheme, a host, no user name or password, and a literal address that is
/// public (or any, with `allow_private`). The message says what is wrong, for a 422.
pub(crate) fn check_url(raw: &str, allow_private: bool) -> Result<Url, String> {
    let raw = raw.trim();
    if raw.len() > MAX_URL_LEN {
        return Err(format!("must be at most {MAX_URL_LEN} characters"));
    }
    let url = Url::parse(raw).map_err(|error| format!("is not a URL ({error})"))?;
    check_parsed(&url, allow_private)?;
    Ok(url)
}

/// [`check_url`] for a parsed URL (a redirect's target).
fn check_parsed(url: &Url, allow_private: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http or https URL".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password".into());
    }
    match url.host() {
        None => Err("has no host".into()),
        Some(url::Host::Ipv4(address)) => check_address(IpAddr::V4(address), allow_private),
        Some(url::Host::Ipv6(address)) => check_address(IpAddr::V6(address), allow_private),
        Some(url::Host::Domain(_)) => Ok(()),
    }
}

fn check_address(address: IpAddr, allow_private: bool) -> Result<(), String> {
    if allow_private || is_public(address) {
        Ok(())
    } else {
        Err(format!(
            "points at {address}, a private, loopback or otherwise non-public address (an operator allows those with ALLOW_PRIVATE_URLS=true)"
        ))
    }
}

/// Whether an address is a public unicast address: nothing of RFC 6890's special-purpose
/// registries a server on someone's network could reach but the internet could not.
pub(crate) fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            // Addresses that carry an IPv4 address reach it: judge that one.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let segments = v6.segments();
            match segments {
                // IPv4-compatible (deprecated) ::a.b.c.d, and the unspecified and loopback.
                [0, 0, 0, 0, 0, 0, _, _] => false,
                // NAT64 64:ff9b::/96 and 64:ff9b:1::/48: an IPv4 address behind a translator.
                [0x64, 0xff9b, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 1, ..] => is_public_v4(
                    Ipv4Addr::from((u32::from(segments[6]) << 16) | u32::from(segments[7])),
                ),
                // 6to4 2002::/16: the IPv4 address in bits 16..48.
                [0x2002, high, low, ..] => {
                    is_public_v4(Ipv4Addr::from((u32::from(high) << 16) | u32::from(low)))
                }
                _ => is_public_v6(v6),
            }
        }
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    !(v4.is_unspecified()
        || v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (b & 0xc0) == 64) // shared address space (carrier-grade NAT), 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments, 192.0.0/24
        || (a == 198 && (b & 0xfe) == 18) // benchmarking, 198.18/15
        || a >= 240) // reserved, 240/4
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    let first = v6.segments()[0];
    !(v6.is_unspecified()
        || v6.is_loopback()
        || v6.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (first & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        || first == 0x2001 && v6.segments()[1] == 0x0db8 // documentation, 2001:db8::/32
        || first == 0x0100 && v6.segments()[1..4] == [0, 0, 0]) // discard-only, 100::/64
}

/// Resolves a name with the system's resolver and lets it through only when every address
/// is public: one private address among public ones is how a rebinding attack would hide.
struct CheckedResolver {
    allow_private: bool,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addresses.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            if !allow_private {
                if let Some(refused) = addresses.iter().find(|a| !is_public(a.ip())) {
                    return Err(format!(
                        "{host} resolves to {}, a private, loopback or otherwise non-public address (an operator allows those with ALLOW_PRIVATE_URLS=true)",
                        refused.ip()
                    )
                    .into());
                }
            }
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

/// Follows at most [`MAX_REDIRECTS`], each target checked as a user's URL is (its name is
/// then checked by the resolver when the client connects to it).
fn checked_redirects(allow_private: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error("too many redirects");
        }
        match check_parsed(attempt.url(), allow_private) {
            Ok(()) => attempt.follow(),
            Err(reason) => attempt.error(format!("a redirect was refused: its URL {reason}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
            "2001:db8::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2002:101:101::1",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn user_urls_are_http_with_a_public_host() {
        assert!(check_url("https://feeds.example.com/show.xml", false).is_ok());
        assert!(check_url("http://93.184.216.34/feed", false).is_ok());
        for (url, says) in [
            ("file:///etc/passwd", "http or https"),
            ("gopher://example.com/", "http or https"),
            ("ftp://example.com/feed", "http or https"),
            ("http://127.0.0.1:8000/feed", "non-public"),
            ("http://[::1]/feed", "non-public"),
            ("http://169.254.169.254/latest/meta-data", "non-public"),
            ("http://user:secret@example.com/feed", "user name"),
            ("not a url", "not a URL"),
        ] {
            let reason = check_url(url, false).unwrap_err();
            assert!(reason.contains(says), "{url}: {reason}");
        }
        assert!(check_url("http://127.0.0.1:8000/feed", true).is_ok());
        assert!(check_url("file:///etc/passwd", true).is_err());
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(check_url(&long, false).unwrap_err().contains("at most"));
    }

    #[tokio::test]
    async fn names_of_private_addresses_and_redirects_to_them_are_refused() {
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        Mock::given(path("/feed"))
            .respond_with(ResponseTemplate::new(200).set_body_string("<rss/>"))
            .mount(&server)
            .await;
        let port = server.address().port();
        Mock::given(path("/to-credentials"))
            .respond_with(ResponseTemplate::new(302).insert_header(
                "location",
                format!("http://admin:secret@localhost:{port}/feed").as_str(),
            ))
            .mount(&server)
            .await;
        Mock::given(path("/to-file"))
            .respond_with(
                ResponseTemplate::new(302).insert_header("location", "file:///etc/passwd"),
            )
            .mount(&server)
            .await;
        // A name (not a literal address) that resolves to loopback: the resolver refuses it.
        let by_name = format!("http://localhost:{port}/feed");
        let refused = guarded_client(false)
            .get(&by_name)
            .send()
            .await
            .unwrap_err();
        let reason = crate::outside::describe(refused);
        assert!(reason.contains("non-public"), "{reason}");
        assert!(server.received_requests().await.unwrap().is_empty());
        // Allowed, it is fetched; a redirect to a private or non-http URL still is not.
        let allowed = guarded_client(true).get(&by_name).send().await.unwrap();
        assert_eq!(allowed.text().await.unwrap(), "<rss/>");
        // A redirect is checked again, as a user's URL is: here one carrying credentials.
        let error = guarded_client(true)
            .get(format!("http://localhost:{port}/to-credentials"))
            .send()
            .await
            .unwrap_err();
        let reason = crate::outside::describe(error);
        assert!(reason.contains("redirect was refused"), "{reason}");
        // One to another scheme is never followed (the 302 is the answer).
        let unfollowed = guarded_client(true)
            .get(format!("http://localhost:{port}/to-file"))
            .send()
            .await
            .unwrap();
        assert_eq!(unfollowed.status(), 302);
        assert_eq!(server.received_requests().await.unwrap().len(), 3);
    }
}
