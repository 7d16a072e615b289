//! HLS names and playlists (`musiclib-core/src/media/hls.rs`). A segment name comes from the
//! request path and becomes part of a blob key or a file path: whatever the text, it is
//! refused or it is exactly `seg-NNNNN.ts` with its index (nothing with `/`, `..`, `\` or
//! NUL is ever accepted). A playlist planned from any stored duration (milliseconds, as the
//! tracks table has it) names segments that parse back to their own index, carries the
//! token safely on every URI, and reads back to the same lengths.
//!
//! `fuzz/run.sh hls_names` (or `cargo fuzz run hls_names`, from `fuzz/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use musiclib_core::media::hls::{parse_segment_name, plan_segments, render_playlist, segment_name};

fuzz_target!(|data: &[u8]| {
    let name = String::from_utf8_lossy(data);
    if let Ok(index) = parse_segment_name(&name) {
        assert!(index < 100_000, "{name:?} gave {index}");
        assert_eq!(segment_name(index), name);
        assert!(
            !name.contains(['/', '\\', '\0']) && !name.contains(".."),
            "{name:?} accepted"
        );
    }

    // A stored duration in ms (any positive one: `hls_source_duration`), a newline, then a
    // token ("248000\nabc").
    let Some((duration_ms, token)) = name.split_once('\n') else {
        return;
    };
    let Some(duration_ms) = duration_ms.parse::<i64>().ok().filter(|ms| *ms > 0) else {
        return;
    };
    let duration = duration_ms as f64 / 1000.0;
    let lengths = plan_segments(duration);
    assert!(!lengths.is_empty());
    assert!(lengths
        .iter()
        .all(|length| length.is_finite() && *length > 0.0));
    let playlist = render_playlist(&lengths, Some(token));
    let uris: Vec<&str> = playlist
        .lines()
        .filter(|line| !line.starts_with('#'))
        .collect();
    assert_eq!(uris.len(), lengths.len());
    for (index, uri) in uris.iter().enumerate() {
        let (name, query) = uri.split_once('?').expect("every URI carries the token");
        assert_eq!(parse_segment_name(name).ok(), Some(index), "{uri:?}");
        assert!(query.starts_with("token=") && !query[6..].contains(['&', '#', '?', ' ']));
    }
    let read = musiclib_core::fuzzing::hls_playlist_lengths(&playlist);
    assert_eq!(read.len(), lengths.len());
    for (read, planned) in read.iter().zip(&lengths) {
        assert!((read - planned).abs() <= 0.0005 + planned.abs() * 1e-12);
    }
});
