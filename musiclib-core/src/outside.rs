//! Outside web services (AcoustID, the Cover Art Archive, LRCLIB, Last.fm, ListenBrainz, a
//! Subsonic source, the external recommender): the HTTP clients they share, and the rules
//! every client follows.
//!
//! A client lives with the service that uses it (`enrichment::acoustid`,
//! `enrichment::coverart`), takes its base URL from [`crate::Config`] (so tests point it at a
//! wiremock server fed with the service's real responses from `shared/fixtures`), keeps to
//! the service's rate limit (`enrichment::throttle`), and degrades: a failure of an outside
//! service is a reason recorded on the result, never a failed request of ours. Every request
//! goes through [`send`], which counts it by service and outcome (`crate::metrics`). A failure
//! is logged or recorded through [`describe`], never with its URL (it may carry a key).

pub(crate) mod guard;

use std::time::Duration;

use crate::metrics::{Outcome, OutsideCall, Service};

/// The HTTP client of every outside service: our User-Agent (public services ask for one
/// that names the program), a connect timeout, no `Referer` (a redirect would otherwise tell
/// the next host the URL, query and keys included); request timeouts are each client's.
pub(crate) fn http_client() -> reqwest::Client {
    builder().build().expect("a TLS backend is compiled in")
}

/// The HTTP client of a service configured with credentials of its own (a Subsonic server, a
/// recommender): as [`http_client`], following redirects only on the same scheme, host and
/// port (at most 5). A redirect elsewhere fails the call: the credentials travel in the
/// query, and a request sent to wherever the service points would be the server fetching
/// any address for it.
pub(crate) fn same_origin_client() -> reqwest::Client {
    builder()
        .redirect(same_origin_redirects(5))
        .build()
        .expect("a TLS backend is compiled in")
}

fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .user_agent(concat!(
            "musiclib/",
            env!("CARGO_PKG_VERSION"),
            " (self-hosted music library server)"
        ))
        .connect_timeout(Duration::from_secs(10))
        .referer(false)
}

/// Follows at most `max` redirects, each to the origin the first request went to.
fn same_origin_redirects(max: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.error("a redirect with no first request");
        };
        let next = attempt.url();
        let same = next.scheme() == first.scheme()
            && next.host_str() == first.host_str()
            && next.port_or_known_default() == first.port_or_known_default();
        if attempt.previous().len() > max {
            attempt.error("too many redirects")
        } else if same {
            attempt.follow()
        } else {
            attempt.error("a redirect to another host was refused")
        }
    })
}

/// An answer's body, at most `max` bytes: one whose `Content-Length` says more is refused
/// before it is read, and one without (or lying about it) as soon as it passes the bound.
/// The error says why, never with the URL.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<bytes::Bytes, String> {
    let too_large = || format!("the answer is larger than {max} bytes");
    if response
        .content_length()
        .is_some_and(|length| length > max as u64)
    {
        return Err(too_large());
    }
    let mut body = bytes::BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(describe)? {
        if body.len() + chunk.len() > max {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// An answer's JSON body of at most `max` bytes ([`read_capped`]), as `T`.
pub(crate) async fn json_capped<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
    max: usize,
) -> Result<T, String> {
    let body = read_capped(response, max).await?;
    serde_json::from_slice(&body).map_err(|error| format!("an unreadable answer: {error}"))
}

/// A failed call as logs and recorded reasons may show it: the chain of causes without the
/// request's URL, which reqwest writes into its errors and whose query or user part may carry
/// a secret (the Subsonic source's `apiKey`, or `t` and `s`; credentials in a recommender URL).
pub(crate) fn describe(error: reqwest::Error) -> String {
    crate::error_chain(&error.without_url())
}

/// Sends `request` to `service`, counting the call by its outcome: the HTTP status class,
/// a timeout, or a connection failure. What the answer means is the client's to decide.
pub(crate) async fn send(
    service: Service,
    request: reqwest::RequestBuilder,
) -> reqwest::Result<reqwest::Response> {
    let call = OutsideCall::start(service);
    let result = request.send().await;
    call.finish(match &result {
        Ok(response) => Outcome::of_status(response.status().as_u16()),
        Err(error) if error.is_timeout() => Outcome::Timeout,
        Err(_) => Outcome::Unavailable,
    });
    result
}

#[cfg(test)]
mod tests {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    #[tokio::test]
    async fn bodies_are_read_within_their_bound_with_or_without_a_length() {
        let server = MockServer::start().await;
        Mock::given(path("/small"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'x'; 100]))
            .mount(&server)
            .await;
        Mock::given(path("/large"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'x'; 5000]))
            .mount(&server)
            .await;
        let client = super::http_client();
        let get = |name: &str| client.get(format!("{}/{name}", server.uri())).send();
        assert_eq!(
            super::read_capped(get("small").await.unwrap(), 1000)
                .await
                .unwrap()
                .len(),
            100
        );
        let refused = super::read_capped(get("large").await.unwrap(), 1000)
            .await
            .unwrap_err();
        assert!(refused.contains("larger than 1000"), "{refused}");
        // Without a Content-Length: a chunked body is cut as it passes the bound.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                .await;
            // Endless, until the reader hangs up.
            loop {
                if socket.write_all(b"400\r\n").await.is_err()
                    || socket.write_all(&[b'y'; 0x400]).await.is_err()
                    || socket.write_all(b"\r\n").await.is_err()
                {
                    break;
                }
            }
        });
        let endless = client
            .get(format!("http://{address}/"))
            .send()
            .await
            .unwrap();
        let refused = super::read_capped(endless, 64 * 1024).await.unwrap_err();
        assert!(refused.contains("larger than"), "{refused}");
    }

    #[tokio::test]
    async fn credentialed_clients_follow_redirects_only_to_their_origin() {
        let server = MockServer::start().await;
        let elsewhere = MockServer::start().await;
        Mock::given(path("/here"))
            .respond_with(ResponseTemplate::new(302).insert_header("location", "/there"))
            .mount(&server)
            .await;
        Mock::given(path("/there"))
            .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
            .mount(&server)
            .await;
        Mock::given(path("/away"))
            .respond_with(
                ResponseTemplate::new(302)
                    .insert_header("location", format!("{}/stolen", elsewhere.uri()).as_str()),
            )
            .mount(&server)
            .await;
        let client = super::same_origin_client();
        let here = client
            .get(format!("{}/here?apiKey=k", server.uri()))
            .send()
            .await
            .unwrap();
        assert_eq!(here.text().await.unwrap(), "ok");
        let away = client
            .get(format!("{}/away?apiKey=k", server.uri()))
            .send()
            .await;
        assert!(away.is_err(), "followed a redirect to another host");
        let reached = elsewhere
            .received_requests()
            .await
            .expect("requests are recorded");
        assert!(reached.is_empty(), "{reached:?}");
    }

    #[tokio::test]
    async fn described_failures_never_show_the_url() {
        // Nothing listens on port 1: the connection is refused at once.
        let error = super::http_client()
            .get("http://127.0.0.1:1/rest/ping?u=alice&t=sekrit-token&s=salt&apiKey=sekrit-key")
            .send()
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("sekrit"),
            "reqwest shows the URL: {error}"
        );
        let described = super::describe(error);
        assert!(!described.contains("sekrit"), "{described}");
        assert!(!described.is_empty());
    }
}
