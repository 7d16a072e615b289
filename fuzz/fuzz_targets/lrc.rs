//! LRC text from anywhere (sidecar files, tags, LRCLIB): whatever the text, parsing answers
//! lines in start order, and writing them back and parsing again gives the same lines and
//! offset (the parser is idempotent: nested word stamps, line breaks and minute limits
//! included).
//!
//! `cargo +nightly fuzz run lrc -- -max_total_time=300` (from this folder's parent).
#![no_main]

use libfuzzer_sys::fuzz_target;
use musiclib_core::lyrics::lrc;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = lrc::parse(&text);
    assert!(parsed
        .lines
        .windows(2)
        .all(|pair| pair[0].start_ms <= pair[1].start_ms));
    assert!(parsed
        .lines
        .iter()
        .all(|line| line.start_ms <= lrc::MAX_START_MS));
    let _ = parsed.plain_text();
    let again = lrc::parse(&lrc::write(&parsed.lines, parsed.offset_ms));
    assert_eq!(again.lines, parsed.lines);
    assert_eq!(again.offset_ms, parsed.offset_ms);
});
