//! The `Range` header of media requests (RFC 9110, `musiclib-media-http`): whatever the
//! header's text and the representation's size, the answer is the whole body, a refusal (416)
//! or one range inside the representation, never a panic or a range past its end. Through
//! `plan` and `respond_bytes` too, as both adapters send audio and covers: the status,
//! Content-Range and Content-Length agree with the bytes sent.
//!
//! `fuzz/run.sh range` (or `cargo fuzz run range`, from `fuzz/`).
#![no_main]

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use libfuzzer_sys::fuzz_target;
use musiclib_core::Timestamp;
use musiclib_media_http::{byte_range, plan, respond_bytes, ByteRange, Plan, Representation};

/// Sizes up to this are also answered with real bytes.
const SENT_UP_TO: u64 = 4096;

fn check_part(range: &std::ops::Range<u64>, size: u64, header: &str) {
    assert!(
        range.start < range.end && range.end <= size,
        "{header:?} on {size} bytes gave {range:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    // The size in decimal, a newline, then the header's value ("1000\nbytes=0-99").
    let Some(at) = data.iter().position(|byte| *byte == b'\n') else {
        return;
    };
    let Some(size) = std::str::from_utf8(&data[..at])
        .ok()
        .and_then(|size| size.parse::<u64>().ok())
    else {
        return;
    };
    let value = &data[at + 1..];
    let text = String::from_utf8_lossy(value);
    match byte_range(&text, size) {
        ByteRange::Part(range) => check_part(&range, size, &text),
        ByteRange::Whole | ByteRange::Unsatisfiable => {}
    }

    // As a request carries it: only what a header value can hold.
    let Ok(value) = HeaderValue::from_bytes(value) else {
        return;
    };
    let mut request = HeaderMap::new();
    request.insert(header::RANGE, value);
    let representation = Representation {
        size,
        mime_type: "audio/flac",
        etag: "\"etag\"",
        last_modified: Timestamp::from_micros(1_700_000_000_000_000),
    };
    let planned = plan(&request, &representation);
    match &planned {
        Plan::Part(range) => check_part(range, size, &text),
        Plan::NotModified => panic!("no conditional header, yet 304"),
        Plan::Whole | Plan::Unsatisfiable => {}
    }
    if size > SENT_UP_TO {
        return;
    }
    let bytes = Bytes::from((0..size).map(|at| at as u8).collect::<Vec<u8>>());
    let response = futures::executor::block_on(respond_bytes(
        &Method::GET,
        &request,
        &representation,
        bytes.clone(),
        HeaderMap::new(),
        |_| Response::new(Body::empty()),
    ));
    let status = response.status();
    let headers = response.headers().clone();
    let body = futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
        .expect("an in-memory body");
    let content_range = headers
        .get(header::CONTENT_RANGE)
        .map(|value| value.to_str().expect("ASCII").to_string());
    match planned {
        Plan::Whole => {
            assert_eq!(status, StatusCode::OK);
            assert_eq!(body, bytes);
        }
        Plan::Part(range) => {
            assert_eq!(status, StatusCode::PARTIAL_CONTENT);
            assert_eq!(body, bytes.slice(range.start as usize..range.end as usize));
            assert_eq!(
                content_range.as_deref(),
                Some(format!("bytes {}-{}/{size}", range.start, range.end - 1).as_str())
            );
        }
        Plan::Unsatisfiable => {
            assert_eq!(status, StatusCode::RANGE_NOT_SATISFIABLE);
            assert_eq!(
                content_range.as_deref(),
                Some(format!("bytes */{size}").as_str())
            );
        }
        Plan::NotModified => unreachable!(),
    }
    if status != StatusCode::RANGE_NOT_SATISFIABLE {
        assert_eq!(
            headers[header::CONTENT_LENGTH],
            body.len().to_string().as_str()
        );
    }
});
