//! Lyrics embedded in a file's tags (lofty), and sidecar files.
//!
//! - MP3 (ID3v2): `SYLT` (synced; its time unit is milliseconds or MPEG frames, converted
//!   with the stream's frame length), then `USLT`.
//! - Vorbis comments (FLAC, Ogg, Opus): `LYRICS`, then `UNSYNCEDLYRICS`.
//! - MP4: `©lyr`.
//!
//! Text with LRC time stamps counts as synced wherever it comes from. A file gives one
//! entry per language (ID3v2 frames carry one each; other tags say none): within a language
//! synced lyrics win over plain ones, and the first language read (synced ones first) comes
//! first.

use std::path::Path;

use lofty::config::ParseOptions;
use lofty::file::{AudioFile, FileType, TaggedFileExt};
use lofty::id3::v2::{Frame, FrameId, Id3v2Tag, SynchronizedTextFrame, TimestampFormat};
use lofty::tag::{ItemKey, TagType};

use super::lrc::{self, Line};

/// Lyrics read from a file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileLyrics {
    /// Timed lines (empty when not synced).
    pub lines: Vec<Line>,
    /// The text without time stamps.
    pub plain: String,
    /// ISO 639 code, when the file says.
    pub language: Option<String>,
    /// `[offset:]` of LRC text, ms.
    pub offset_ms: i64,
}

impl FileLyrics {
    /// From text that may be LRC.
    pub(crate) fn from_text(text: &str, language: Option<String>) -> Option<FileLyrics> {
        let parsed = lrc::parse(text);
        let plain = parsed.plain_text();
        if plain.trim().is_empty() && !parsed.is_synced() {
            return None;
        }
        Some(FileLyrics {
            language: language.or(parsed.language.clone()),
            offset_ms: parsed.offset_ms,
            plain,
            lines: parsed.lines,
        })
    }

    pub(crate) fn synced(&self) -> bool {
        !self.lines.is_empty()
    }
}

/// The lyrics embedded in the file at `path`, one entry per language, best first (none for
/// an unreadable file).
pub(crate) fn read(path: &Path) -> Vec<FileLyrics> {
    let options = ParseOptions::new()
        .read_cover_art(false)
        .read_properties(true);
    let Some(tagged) = crate::probe::read_tagged(path, options) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut frames_read = false;
    if tagged.file_type() == FileType::Mpeg {
        let sample_rate = tagged.properties().sample_rate();
        if let Ok(mut file) = std::fs::File::open(path) {
            if let Ok(mpeg) = lofty::mpeg::MpegFile::read_from(&mut file, options) {
                if let Some(id3v2) = mpeg.id3v2() {
                    found.extend(id3v2_lyrics(id3v2, sample_rate));
                    frames_read = true;
                }
            }
        }
    }
    for tag in tagged.tags() {
        // The ID3v2 frames were read with their languages above.
        if frames_read && tag.tag_type() == TagType::Id3v2 {
            continue;
        }
        for key in [ItemKey::Lyrics, ItemKey::UnsyncLyrics] {
            for text in tag.get_strings(key) {
                found.extend(FileLyrics::from_text(text, None));
            }
        }
    }
    one_per_language(found)
}

/// Synced first (stable otherwise), then the first of each language; the same text twice
/// (a tag read through two keys) counts once.
fn one_per_language(mut found: Vec<FileLyrics>) -> Vec<FileLyrics> {
    found.sort_by_key(|lyrics| !lyrics.synced());
    let mut kept: Vec<FileLyrics> = Vec::new();
    for lyrics in found {
        if !kept
            .iter()
            .any(|other| other.language == lyrics.language || other.plain == lyrics.plain)
        {
            kept.push(lyrics);
        }
    }
    kept
}

/// `SYLT` frames, then `USLT` frames, of an ID3v2 tag.
fn id3v2_lyrics(tag: &Id3v2Tag, sample_rate: Option<u32>) -> Vec<FileLyrics> {
    let mut found = Vec::new();
    for frame in tag {
        let Frame::Binary(binary) = frame else {
            continue;
        };
        if binary.id() != &FrameId::Valid("SYLT".into()) {
            continue;
        }
        let Ok(sylt) = SynchronizedTextFrame::parse(&binary.data, binary.flags()) else {
            continue;
        };
        found.extend(from_sylt(&sylt, sample_rate));
    }
    for uslt in tag.unsync_text() {
        found.extend(FileLyrics::from_text(
            &uslt.content,
            language(&uslt.language),
        ));
    }
    found
}

fn from_sylt(sylt: &SynchronizedTextFrame<'_>, sample_rate: Option<u32>) -> Option<FileLyrics> {
    let to_ms = |stamp: u32| -> u64 {
        match sylt.timestamp_format {
            TimestampFormat::MS => u64::from(stamp),
            TimestampFormat::MPEG => {
                // MPEG-1 Layer III frames hold 1152 samples; MPEG-2/2.5 (below 32 kHz) 576.
                let rate = u64::from(sample_rate.unwrap_or(44_100).max(1));
                let samples = if rate >= 32_000 { 1152 } else { 576 };
                u64::from(stamp) * samples * 1000 / rate
            }
        }
    };
    let mut lines: Vec<Line> = sylt
        .content
        .iter()
        .map(|(stamp, text)| Line {
            start_ms: to_ms(*stamp),
            // SYLT entries often carry their own line break at the start; one inside would
            // split the line once written as LRC. Spaces as the LRC parser leaves them.
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            words: None,
        })
        // Past what a stamp can say (a week): not a real time.
        .filter(|line| line.start_ms <= lrc::MAX_START_MS)
        .collect();
    lines.sort_by_key(|line| line.start_ms);
    if lines.iter().all(|line| line.text.is_empty()) {
        return None;
    }
    let plain = lines
        .iter()
        .map(|line| line.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
        .trim_matches('\n')
        .to_string();
    Some(FileLyrics {
        lines,
        plain,
        language: language(&sylt.language),
        offset_ms: 0,
    })
}

/// An ISO 639-2 code from a frame, `None` for "unknown" (`XXX`, `und`, blanks).
fn language(code: &[u8; 3]) -> Option<String> {
    let code = std::str::from_utf8(code)
        .ok()?
        .trim_matches(char::from(0))
        .trim();
    let lower = code.to_ascii_lowercase();
    (code.len() == 3
        && lower.chars().all(|c| c.is_ascii_lowercase())
        && lower != "xxx"
        && lower != "und")
        .then_some(lower)
}

/// A sidecar next to the audio file at `relative` in the folder `root`: the same name with
/// `.lrc`, else `.txt`. A sidecar follows the audio's rules: a regular file inside the
/// folder (a symlink out of it, to `/proc/self/environ` or a secret, is not read; a FIFO or a
/// device is not opened), read through a bound ([`super::MAX_LYRICS_BYTES`]; a larger file
/// is not lyrics).
pub(crate) fn sidecar(root: &Path, relative: &Path) -> Option<FileLyrics> {
    use std::io::Read;
    for extension in ["lrc", "txt"] {
        let path = relative.with_extension(extension);
        let Ok(opened) = crate::storage::open_inside(root, &path) else {
            continue;
        };
        let mut bytes = Vec::new();
        let limit = super::MAX_LYRICS_BYTES as u64 + 1;
        if opened.file().take(limit).read_to_end(&mut bytes).is_err() {
            continue;
        }
        if bytes.len() > super::MAX_LYRICS_BYTES {
            continue;
        }
        if let Some(lyrics) = FileLyrics::from_text(&String::from_utf8_lossy(&bytes), None) {
            return Some(lyrics);
        }
    }
    None
}
