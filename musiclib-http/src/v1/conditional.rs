//! Validators and conditional requests shared by the media endpoints (covers, streams):
//! HTTP dates and the If-None-Match / If-Modified-Since check (RFC 9110 §13).

use axum::http::{header, HeaderMap};
use musiclib_core::Timestamp;

/// A timestamp truncated to whole seconds, as HTTP dates carry.
pub(crate) fn system_time(at: Timestamp) -> std::time::SystemTime {
    let seconds = at.as_micros().div_euclid(1_000_000).max(0) as u64;
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)
}

/// An HTTP date (IMF-fixdate), to the second.
pub(crate) fn http_date(at: Timestamp) -> String {
    httpdate::fmt_http_date(system_time(at))
}

/// Whether the client's copy is current: If-None-Match when present (it wins, §13.2.2),
/// else If-Modified-Since.
pub(crate) fn not_modified(request: &HeaderMap, etag: &str, last_modified: Timestamp) -> bool {
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
