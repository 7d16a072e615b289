//! Podcast feeds (`musiclib-core/src/podcasts/feed.rs`): a feed is a document from anywhere.
//! Whatever the bytes, reading one ends with a feed or a reason, never a panic, in time and
//! memory bounded by the input (entities a document declares are never expanded); what it
//! answers keeps to its bounds: at most `MAX_ITEMS` items, every item with an enclosure and a
//! guid, titles and descriptions within their lengths and free of markup.
//!
//! `fuzz/run.sh podcast_feed` (or `cargo fuzz run podcast_feed`, from `fuzz/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use musiclib_core::podcasts::feed::{parse, MAX_DESCRIPTION_CHARS, MAX_ITEMS, MAX_TITLE_CHARS};

fuzz_target!(|data: &[u8]| {
    let document = String::from_utf8_lossy(data);
    let Ok(feed) = parse(&document) else {
        return;
    };
    assert!(!feed.title.is_empty());
    assert!(feed.title.chars().count() <= MAX_TITLE_CHARS);
    assert!(feed.items.len() <= MAX_ITEMS);
    for item in &feed.items {
        assert!(!item.enclosure_url.is_empty() && !item.guid.is_empty());
        assert!(item.title.chars().count() <= MAX_TITLE_CHARS);
        if let Some(description) = &item.description {
            assert!(description.chars().count() <= MAX_DESCRIPTION_CHARS);
            assert!(!description.contains('<'), "{description:?} kept markup");
        }
        if let Some(ms) = item.duration_ms {
            assert!((0..=7 * 24 * 3600 * 1000).contains(&ms));
        }
    }
});
