//! What remote sources answer (`musiclib-core/src/remote/`): yt-dlp's JSON on stdout (a
//! `--flat-playlist -J` search, a `-j` item) and its stderr and progress lines, and the
//! Subsonic source's JSON answers (`search3`, `getSong`, failures). Any bytes give hits or a
//! `SourceError`, never a panic; every id that comes out (the item's, its artist's and its
//! album's) passes `check_id_chars`, the rule that keeps structure out of URLs and program
//! arguments.
//!
//! `fuzz/run.sh remote_json` (or `cargo fuzz run remote_json`, from `fuzz/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use musiclib_core::fuzzing::{
    subsonic_search, subsonic_song, ytdlp_classify, ytdlp_item, ytdlp_progress, ytdlp_search,
};
use musiclib_core::remote::{check_id_chars, RemoteHit, SUBSONIC, YTDLP};

fn check(hit: &RemoteHit, source: &str) {
    assert_eq!(hit.source, source);
    assert!(check_id_chars(&hit.source_id).is_ok(), "{hit:?}");
    for id in [&hit.artist_source_id, &hit.album_source_id]
        .into_iter()
        .flatten()
    {
        assert!(check_id_chars(id).is_ok(), "{id:?} of {hit:?}");
    }
    assert!(!hit.title.trim().is_empty(), "{hit:?}");
    assert!(hit.track_number.is_none_or(|number| number > 0), "{hit:?}");
    assert!(hit.year.is_none_or(|year| year > 0), "{hit:?}");
    assert!(hit.size_bytes.is_none_or(|size| size > 0), "{hit:?}");
    assert!(hit.duration_ms.is_none_or(|ms| ms >= 0), "{hit:?}");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(hits) = ytdlp_search(data) {
        hits.iter().for_each(|hit| check(hit, YTDLP));
    }
    if let Ok(Some(hit)) = ytdlp_item(data) {
        check(&hit, YTDLP);
    }
    if let Ok(hits) = subsonic_search(data) {
        hits.iter().for_each(|hit| check(hit, SUBSONIC));
    }
    if let Ok(Some(hit)) = subsonic_song(data) {
        check(&hit, SUBSONIC);
    }
    let text = String::from_utf8_lossy(data);
    assert!(!ytdlp_classify(&text).message().is_empty());
    for line in text.lines() {
        if ytdlp_progress(line).is_some() {
            assert!(line.trim().starts_with("musiclib-progress"), "{line:?}");
        }
    }
});
