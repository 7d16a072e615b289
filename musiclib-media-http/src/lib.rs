//! musiclib-media-http: the HTTP semantics of a media response, once, for both adapters
//! (`/api/v1` and the Subsonic interface).
//!
//! A media response sends a stored representation (a track's audio, a rendition, a cover)
//! described by [`Representation`]: RFC 9110 validators (a strong ETag, Last-Modified),
//! conditional requests (If-None-Match before If-Modified-Since: 304), one byte range at a
//! time (206 with Content-Range; If-Range; a range starting past the end is 416 with
//! `Content-Range: bytes */size`; several ranges or an invalid header get the whole body),
//! and HEAD (the same headers, no body). Core supplies the bytes; this crate knows no
//! storage, and the adapters know no Range rules.
//!
//! The two adapters depend on this crate and on core, never on each other.

use std::future::Future;
use std::ops::Range;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::media::{Cover, TrackAudio};
use musiclib_core::{ErrorKind, Timestamp};

/// The HTTP status of a core error's kind, for both adapters (`/api/v1` answers
/// [`ErrorKind::InvalidInput`] as 422, a media response as 400).
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::InvalidInput => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Gone => StatusCode::GONE,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
        ErrorKind::NotSupported => StatusCode::NOT_IMPLEMENTED,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// What is being sent: its size, type and validators.
#[derive(Debug, Clone, Copy)]
pub struct Representation<'a> {
    /// Size in bytes.
    pub size: u64,
    /// MIME type.
    pub mime_type: &'a str,
    /// Strong validator, quoted.
    pub etag: &'a str,
    /// When it last changed (HTTP dates carry whole seconds).
    pub last_modified: Timestamp,
}

impl<'a> From<&'a TrackAudio> for Representation<'a> {
    fn from(audio: &'a TrackAudio) -> Self {
        Representation {
            size: audio.size,
            mime_type: &audio.mime_type,
            etag: &audio.etag,
            last_modified: audio.last_modified,
        }
    }
}

impl<'a> From<&'a Cover> for Representation<'a> {
    fn from(cover: &'a Cover) -> Self {
        Representation {
            size: cover.bytes.len() as u64,
            mime_type: cover.mime_type,
            etag: &cover.etag,
            last_modified: cover.last_modified,
        }
    }
}

/// What a `Range` header asks of a representation of `size` bytes, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByteRange {
    /// The whole representation (no Range, or one the server ignores: invalid syntax,
    /// several ranges).
    Whole,
    /// One satisfiable range.
    Part(Range<u64>),
    /// A range that starts beyond the end.
    Unsatisfiable,
}

/// Resolves a `Range` header value against `size` bytes. Parsing is http-range-header's;
/// what to do with its answer follows RFC 9110 §14.1.2: a suffix longer than the
/// representation means all of it, an end beyond it means its last byte, a start beyond it
/// is unsatisfiable, and an invalid header is ignored.
pub fn byte_range(header: &str, size: u64) -> ByteRange {
    use http_range_header::SyntacticallyCorrectRange as Spec;
    let Ok(parsed) = http_range_header::parse_range_header(header) else {
        // Bad syntax, another unit, a reversed range: ignored.
        return ByteRange::Whole;
    };
    let [only] = parsed.into_ranges()[..] else {
        // Several ranges: answering with the whole body is allowed, and what players need.
        return ByteRange::Whole;
    };
    let (start, end) = match only {
        // `bytes=-0` is well-formed but selects nothing (§14.1.1).
        Spec::FromLast(0) => return ByteRange::Unsatisfiable,
        Spec::FromLast(suffix) => (size.saturating_sub(suffix), size),
        Spec::FromStart(start) => (start, size),
        Spec::Indexed(start, last) => (start, last.saturating_add(1).min(size)),
    };
    if start >= size {
        ByteRange::Unsatisfiable
    } else {
        ByteRange::Part(start..end)
    }
}

/// A timestamp truncated to whole seconds, as HTTP dates carry.
fn system_time(at: Timestamp) -> std::time::SystemTime {
    let seconds = at.as_micros().div_euclid(1_000_000).max(0) as u64;
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)
}

/// An HTTP date (IMF-fixdate), to the second.
pub fn http_date(at: Timestamp) -> String {
    httpdate::fmt_http_date(system_time(at))
}

/// Whether the client's copy is current: If-None-Match when present (it wins, §13.2.2),
/// else If-Modified-Since.
pub fn not_modified(request: &HeaderMap, etag: &str, last_modified: Timestamp) -> bool {
    match request.get(header::IF_NONE_MATCH) {
        Some(value) => value.to_str().is_ok_and(|tags| {
            tags.split(',')
                .map(|tag| tag.trim().trim_start_matches("W/"))
                .any(|tag| tag == "*" || tag == etag)
        }),
        None => request
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| httpdate::parse_http_date(text).ok())
            .is_some_and(|since| system_time(last_modified) <= since),
    }
}

/// What to answer a request for a representation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// 304: the client's copy is current.
    NotModified,
    /// 200 with the whole body.
    Whole,
    /// 206 with this range.
    Part(Range<u64>),
    /// 416: the range starts past the end.
    Unsatisfiable,
}

/// Decides what `request` gets: conditional headers first, then the range (applied only
/// when If-Range, if present, still names this representation: the exact ETag, or the
/// exact Last-Modified date).
pub fn plan(request: &HeaderMap, representation: &Representation<'_>) -> Plan {
    if not_modified(request, representation.etag, representation.last_modified) {
        return Plan::NotModified;
    }
    let range_applies = request
        .get(header::IF_RANGE)
        .and_then(|value| value.to_str().ok())
        .is_none_or(|value| {
            let value = value.trim();
            if value.starts_with('"') {
                value == representation.etag
            } else {
                value == http_date(representation.last_modified)
            }
        });
    let wanted = match request
        .get(header::RANGE)
        .and_then(|value| value.to_str().ok())
    {
        Some(range) if range_applies => byte_range(range, representation.size),
        _ => ByteRange::Whole,
    };
    match wanted {
        ByteRange::Whole => Plan::Whole,
        ByteRange::Part(range) => Plan::Part(range),
        ByteRange::Unsatisfiable => Plan::Unsatisfiable,
    }
}

/// The response to a `method` request with `request` headers for `representation`.
///
/// `headers` are the adapter's own (Cache-Control, say); the validators, Accept-Ranges,
/// Content-Type, Content-Length and Content-Range are added here. A 416 is
/// `unsatisfiable(size)` (each adapter has its error body) with `Content-Range: bytes */size`.
/// `read` is called only for a GET that sends bytes, with the range to send; its error is
/// the caller's (nothing has been sent yet).
pub async fn respond<F, Fut, E>(
    method: &Method,
    request: &HeaderMap,
    representation: &Representation<'_>,
    mut headers: HeaderMap,
    unsatisfiable: impl FnOnce(u64) -> Response,
    read: F,
) -> Result<Response, E>
where
    F: FnOnce(Range<u64>) -> Fut,
    Fut: Future<Output = Result<Body, E>>,
{
    let size = representation.size;
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(value) = HeaderValue::from_str(representation.etag) {
        headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&http_date(representation.last_modified)) {
        headers.insert(header::LAST_MODIFIED, value);
    }
    let (status, range) = match plan(request, representation) {
        Plan::NotModified => return Ok((StatusCode::NOT_MODIFIED, headers).into_response()),
        Plan::Unsatisfiable => {
            let mut response = unsatisfiable(size);
            *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            response.headers_mut().extend(headers);
            response.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{size}")).expect("ascii"),
            );
            return Ok(response);
        }
        Plan::Whole => (StatusCode::OK, 0..size),
        Plan::Part(range) => {
            let content_range = format!("bytes {}-{}/{size}", range.start, range.end - 1);
            headers.insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&content_range).expect("ascii"),
            );
            (StatusCode::PARTIAL_CONTENT, range)
        }
    };
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(representation.mime_type)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(range.end - range.start),
    );
    if method == Method::HEAD {
        return Ok((status, headers).into_response());
    }
    let body = read(range).await?;
    Ok((status, headers, body).into_response())
}

/// [`respond`] for a representation held in memory (a cover).
pub async fn respond_bytes(
    method: &Method,
    request: &HeaderMap,
    representation: &Representation<'_>,
    bytes: bytes::Bytes,
    headers: HeaderMap,
    unsatisfiable: impl FnOnce(u64) -> Response,
) -> Response {
    let sent: Result<Response, std::convert::Infallible> = respond(
        method,
        request,
        representation,
        headers,
        unsatisfiable,
        |range| async move {
            Ok(Body::from(
                bytes.slice(range.start as usize..range.end as usize),
            ))
        },
    )
    .await;
    match sent {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn ranges_follow_rfc_9110() {
        use ByteRange::*;
        assert_eq!(byte_range("bytes=0-99", 1000), Part(0..100));
        assert_eq!(byte_range("bytes=900-", 1000), Part(900..1000));
        assert_eq!(byte_range("bytes=-100", 1000), Part(900..1000));
        // A suffix longer than the file is all of it; an end past the file is its last byte.
        assert_eq!(byte_range("bytes=-5000", 1000), Part(0..1000));
        assert_eq!(byte_range("bytes=990-5000", 1000), Part(990..1000));
        assert_eq!(byte_range("bytes=999-999", 1000), Part(999..1000));
        assert_eq!(byte_range("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(byte_range("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(byte_range("bytes=0-", 0), Unsatisfiable);
        // Ignored: bad syntax, other units, several ranges, reversed.
        assert_eq!(byte_range("bytes=abc", 1000), Whole);
        assert_eq!(byte_range("items=0-1", 1000), Whole);
        assert_eq!(byte_range("bytes=0-1,5-6", 1000), Whole);
        assert_eq!(byte_range("bytes=9-1", 1000), Whole);
    }

    /// The hardest headers of the `range` fuzz target, kept here: long ones, numbers past
    /// `u64`, the largest sizes, odd spacing and bytes.
    #[test]
    fn hostile_range_headers_give_a_bounded_answer() {
        use ByteRange::*;
        let many = format!("bytes={}", vec!["0-1"; 20_000].join(","));
        assert_eq!(byte_range(&many, 1000), Whole);
        let long = format!("bytes=0-{}", "9".repeat(64 * 1024));
        assert_eq!(byte_range(&long, 1000), Whole);
        // A start past u64 is past any end.
        assert_eq!(
            byte_range("bytes=18446744073709551616-", 1000),
            Unsatisfiable
        );
        assert_eq!(
            byte_range("bytes=0-18446744073709551615", u64::MAX),
            Part(0..u64::MAX)
        );
        assert_eq!(
            byte_range("bytes=-18446744073709551615", u64::MAX),
            Part(0..u64::MAX)
        );
        assert_eq!(
            byte_range("bytes=18446744073709551614-", u64::MAX),
            Part(u64::MAX - 1..u64::MAX)
        );
        assert_eq!(byte_range("bytes=-1", 0), Unsatisfiable);
        for odd in [
            "",
            "bytes=",
            "bytes=-",
            "bytes=--1",
            "bytes=0--1",
            "bytes=\u{0}0-1",
            "bytes=０-1",
        ] {
            assert!(
                matches!(byte_range(odd, 10), Whole | Unsatisfiable),
                "{odd:?}"
            );
        }
        for size in [0, 1, 2, 10, u64::MAX] {
            for header in [
                "bytes=0-0",
                "bytes=1-",
                "bytes=-1",
                "bytes=5-9",
                " bytes=0-1 ",
            ] {
                if let Part(range) = byte_range(header, size) {
                    assert!(
                        range.start < range.end && range.end <= size,
                        "{header} {size}"
                    );
                }
            }
        }
    }

    const ETAG: &str = "\"abc\"";

    fn representation() -> Representation<'static> {
        Representation {
            size: 10,
            mime_type: "audio/flac",
            etag: ETAG,
            last_modified: Timestamp::from_micros(1_700_000_000_000_000),
        }
    }

    fn request(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    async fn send(method: Method, pairs: &[(header::HeaderName, &str)]) -> (Response, Vec<u8>) {
        let response = respond_bytes(
            &method,
            &request(pairs),
            &representation(),
            bytes::Bytes::from_static(b"0123456789"),
            HeaderMap::new(),
            |_| Response::new(Body::from("gone past the end")),
        )
        .await;
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        (Response::from_parts(parts, Body::empty()), bytes)
    }

    #[tokio::test]
    async fn one_response_for_every_case() {
        let date = http_date(representation().last_modified);

        let (whole, body) = send(Method::GET, &[]).await;
        assert_eq!(
            (whole.status(), body.as_slice()),
            (StatusCode::OK, &b"0123456789"[..])
        );
        assert_eq!(whole.headers()[header::ETAG], ETAG);
        assert_eq!(whole.headers()[header::LAST_MODIFIED], date.as_str());
        assert_eq!(whole.headers()[header::ACCEPT_RANGES], "bytes");

        let (part, body) = send(Method::GET, &[(header::RANGE, "bytes=2-4")]).await;
        assert_eq!(
            (part.status(), body.as_slice()),
            (StatusCode::PARTIAL_CONTENT, &b"234"[..])
        );
        assert_eq!(part.headers()[header::CONTENT_RANGE], "bytes 2-4/10");
        assert_eq!(part.headers()[header::CONTENT_LENGTH], "3");

        let (head, body) = send(Method::HEAD, &[(header::RANGE, "bytes=2-4")]).await;
        assert_eq!(
            (head.status(), body.len()),
            (StatusCode::PARTIAL_CONTENT, 0)
        );
        assert_eq!(head.headers()[header::CONTENT_LENGTH], "3");

        let (past, body) = send(Method::GET, &[(header::RANGE, "bytes=10-")]).await;
        assert_eq!(past.status(), StatusCode::RANGE_NOT_SATISFIABLE);
        assert_eq!(past.headers()[header::CONTENT_RANGE], "bytes */10");
        assert_eq!(body, b"gone past the end");

        let (cached, body) = send(Method::GET, &[(header::IF_NONE_MATCH, ETAG)]).await;
        assert_eq!((cached.status(), body.len()), (StatusCode::NOT_MODIFIED, 0));
        assert_eq!(cached.headers()[header::ETAG], ETAG);
        let (cached, _) = send(Method::GET, &[(header::IF_MODIFIED_SINCE, &date)]).await;
        assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
        // If-None-Match wins over If-Modified-Since.
        let (changed, _) = send(
            Method::GET,
            &[
                (header::IF_NONE_MATCH, "\"other\""),
                (header::IF_MODIFIED_SINCE, &date),
            ],
        )
        .await;
        assert_eq!(changed.status(), StatusCode::OK);

        // If-Range: the range applies while the validator matches, else the whole body.
        let (still, _) = send(
            Method::GET,
            &[(header::RANGE, "bytes=0-0"), (header::IF_RANGE, ETAG)],
        )
        .await;
        assert_eq!(still.status(), StatusCode::PARTIAL_CONTENT);
        let (dated, _) = send(
            Method::GET,
            &[(header::RANGE, "bytes=0-0"), (header::IF_RANGE, &date)],
        )
        .await;
        assert_eq!(dated.status(), StatusCode::PARTIAL_CONTENT);
        let (stale, body) = send(
            Method::GET,
            &[(header::RANGE, "bytes=0-0"), (header::IF_RANGE, "\"old\"")],
        )
        .await;
        assert_eq!((stale.status(), body.len()), (StatusCode::OK, 10));
    }
}
