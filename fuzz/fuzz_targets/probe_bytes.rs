//! Untrusted uploads: whatever the bytes, probing them (lofty tags, symphonia's check that
//! the audio reaches its end) answers `Ok` or a readable `Err`, never a panic or a hang.
//!
//! `cargo +nightly fuzz run probe_bytes -- -max_total_time=300` (from this folder's parent).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for hint in [
        "upload.mp3",
        "upload.flac",
        "upload.m4a",
        "upload.ogg",
        "upload.wav",
    ] {
        let _ = musiclib_core::probe::probe_bytes(data, hint);
    }
});
