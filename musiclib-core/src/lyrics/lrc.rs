//! The one LRC parser, for sidecar files, embedded tags and LRCLIB alike.
//!
//! - Time stamps `[mm:ss]`, `[mm:ss.x]`, `[mm:ss.xx]` (hundredths) and `[mm:ss.xxx]`
//!   (milliseconds), minutes up to 9999 (both ways: [`write`] leaves out what [`parse`]
//!   could not read back, past [`MAX_START_MS`]); several stamps before one text make one
//!   line per stamp.
//! - Header tags, known keys only: `[ar:]`, `[ti:]`, `[al:]`, `[length:]` (`mm:ss` or
//!   `mm:ss.xx`), `[lang:]`, `[offset:]` (ms, signed; kept apart, never applied to the
//!   stamps) are read; `[au:]`, `[by:]`, `[re:]`, `[ve:]`, `[#:]` are dropped. Any other
//!   bracket (`[Chorus: Beyoncé]`) is text.
//! - Enhanced LRC word stamps (`<mm:ss.xx>`) are removed from a timed line's text, until
//!   none is left (removing one can join the pieces of another); the pieces they time are
//!   kept beside it as the line's [`Words`] (OpenSubsonic `songLyrics` v2 cues), and
//!   [`write`] writes them back.
//! - Timed text: blank lines are skipped, and so are lines whose leading tag looks like a
//!   stamp but is not one (`[00:7x.10]`).
//! - A text without any time stamp is plain: its lines are kept as written (trailing spaces
//!   removed, blank lines inside kept, so verse breaks survive; blank lines at either end
//!   dropped), headers aside.

/// One timed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// When it starts, in ms from the start of the track (the file's `offset` not applied).
    pub start_ms: u64,
    /// Its text (empty for a timed pause), word stamps removed and spaces collapsed.
    pub text: String,
    /// Its word timing, when the line has enhanced LRC word stamps.
    pub words: Option<Words>,
}

/// The word timing of one line of enhanced LRC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    /// The line's text as written, stamps removed and spaces untouched: what the cues'
    /// byte offsets count in (it can differ from [`Line::text`] in its spaces).
    pub text: String,
    /// The timed pieces, in the order written; never empty.
    pub cues: Vec<Cue>,
}

impl Words {
    /// The line as enhanced LRC: each piece after its stamp, and a closing stamp where a
    /// piece ends before the next begins (or at the end of the line, when known).
    fn to_lrc(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + self.cues.len() * 10);
        out.push_str(&self.text[..self.cues[0].byte_start]);
        for (index, cue) in self.cues.iter().enumerate() {
            out.push_str(&format!("<{}>", stamp(cue.start_ms)));
            out.push_str(&self.text[cue.byte_start..=cue.byte_end]);
            let next = self.cues.get(index + 1);
            if let Some(end_ms) = cue.end_ms {
                if next.is_none_or(|next| next.start_ms != end_ms) {
                    out.push_str(&format!("<{}>", stamp(end_ms)));
                }
            }
        }
        out.push_str(&self.text[self.cues[self.cues.len() - 1].byte_end + 1..]);
        out
    }
}

/// What an LRC text holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lrc {
    /// Timed lines, by start time (stable for equal times).
    pub lines: Vec<Line>,
    /// Lines without a time stamp nor a header, in order, as written (trailing spaces
    /// removed; blank lines kept): the text when no line has a stamp.
    pub plain: Vec<String>,
    /// `[offset:]`, in ms.
    pub offset_ms: i64,
    /// `[ar:]`.
    pub artist: Option<String>,
    /// `[ti:]`.
    pub title: Option<String>,
    /// `[al:]`.
    pub album: Option<String>,
    /// `[length:]`, in ms.
    pub length_ms: Option<u64>,
    /// `[lang:]`.
    pub language: Option<String>,
}

impl Lrc {
    /// Whether any line carries a time stamp.
    pub fn is_synced(&self) -> bool {
        !self.lines.is_empty()
    }

    /// The text without time stamps: the timed lines' text when synced (pauses as blank
    /// lines), else the plain lines (blank ones included); no blank line at either end.
    pub fn plain_text(&self) -> String {
        let lines: Vec<&str> = if self.is_synced() {
            self.lines.iter().map(|line| line.text.as_str()).collect()
        } else {
            self.plain.iter().map(String::as_str).collect()
        };
        let first = lines.iter().position(|line| !line.trim().is_empty());
        let last = lines.iter().rposition(|line| !line.trim().is_empty());
        match (first, last) {
            (Some(first), Some(last)) => lines[first..=last].join("\n"),
            _ => String::new(),
        }
    }
}

/// The latest start a stamp can say: `[9999:59.999]`.
pub const MAX_START_MS: u64 = 9999 * 60_000 + 59_999;

/// Parses LRC (or plain) text. Never fails: what cannot be read is skipped.
pub fn parse(text: &str) -> Lrc {
    let mut lrc = Lrc::default();
    for raw in text.trim_start_matches('\u{feff}').lines() {
        // Word stamps go first, so none is left to look like a line stamp once removed.
        let line = strip_word_stamps(raw.trim());
        let line = line.as_str();
        if line.is_empty() {
            // Kept for a plain text's verse breaks; timed text has no use for it.
            lrc.plain.push(String::new());
            continue;
        }
        let mut rest = line;
        let mut stamps = Vec::new();
        let mut malformed = false;
        while let Some(tag_end) = rest.strip_prefix('[').and_then(|tag| tag.find(']')) {
            let tag = &rest[1..=tag_end];
            match parse_stamp(tag) {
                Some(ms) => stamps.push(ms),
                None if looks_like_stamp(tag) => {
                    malformed = true;
                    break;
                }
                None => break,
            }
            rest = rest[tag_end + 2..].trim_start();
        }
        if malformed {
            continue;
        }
        if stamps.is_empty() {
            match header(raw.trim()) {
                Some((key, value)) => apply_header(&mut lrc, key, value),
                // The line as written: word stamps and spaces untouched.
                None => lrc.plain.push(raw.trim_end().to_string()),
            }
            continue;
        }
        let text = rest.trim().to_string();
        let words = words_after(raw.trim(), stamps.len());
        lrc.lines.extend(stamps.into_iter().map(|start_ms| Line {
            start_ms,
            text: text.clone(),
            words: words.clone(),
        }));
    }
    lrc.lines.sort_by_key(|line| line.start_ms);
    lrc
}

/// Writes timed lines as LRC: `[mm:ss.xx]`, or `[mm:ss.xxx]` when the time has a
/// millisecond part; an `[offset:]` line first when it is not zero. A line with word timing
/// is written as enhanced LRC. Line breaks inside a text become spaces; a line starting past
/// [`MAX_START_MS`] is left out (no stamp could say it).
pub fn write(lines: &[Line], offset_ms: i64) -> String {
    let mut out = String::new();
    if offset_ms != 0 {
        out.push_str(&format!("[offset:{offset_ms:+}]\n"));
    }
    for line in lines.iter().filter(|line| line.start_ms <= MAX_START_MS) {
        let text = match &line.words {
            Some(words) => words.to_lrc(),
            None => line.text.replace(['\r', '\n'], " "),
        };
        out.push_str(&format!("[{}] {}\n", stamp(line.start_ms), text));
    }
    out
}

/// `mm:ss.xx` (or `.xxx` when the milliseconds need it).
pub fn stamp(ms: u64) -> String {
    let (minutes, seconds, millis) = (ms / 60_000, (ms / 1000) % 60, ms % 1000);
    if millis % 10 == 0 {
        format!("{minutes:02}:{seconds:02}.{:02}", millis / 10)
    } else {
        format!("{minutes:02}:{seconds:02}.{millis:03}")
    }
}

/// `mm:ss`, `mm:ss.x`, `mm:ss.xx`, `mm:ss.xxx` → ms.
fn parse_stamp(tag: &str) -> Option<u64> {
    let (minutes, seconds) = tag.split_once(':')?;
    if minutes.is_empty() || minutes.len() > 4 || !minutes.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (whole, fraction) = match seconds.split_once(['.', ':']) {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (seconds, None),
    };
    if whole.is_empty() || whole.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    if whole >= 60 {
        return None;
    }
    let millis = match fraction {
        None => 0,
        Some(fraction)
            if !fraction.is_empty()
                && fraction.len() <= 3
                && fraction.bytes().all(|b| b.is_ascii_digit()) =>
        {
            let value: u64 = fraction.parse().ok()?;
            value * 10u64.pow(3 - fraction.len() as u32)
        }
        Some(_) => return None,
    };
    Some(minutes.parse::<u64>().ok()? * 60_000 + whole * 1000 + millis)
}

/// A tag that starts like a time stamp (digits and a colon) but did not parse as one.
fn looks_like_stamp(tag: &str) -> bool {
    tag.split_once(':').is_some_and(|(minutes, _)| {
        !minutes.is_empty() && minutes.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The header keys LRC defines; any other `[word: text]` is text (a section mark).
const HEADER_KEYS: [&str; 11] = [
    "ar", "ti", "al", "au", "length", "lang", "offset", "by", "re", "ve", "#",
];

/// `[key:value]` filling the whole line, with a key LRC defines.
fn header(line: &str) -> Option<(&'static str, &str)> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?;
    let (key, value) = inner.split_once(':')?;
    let key = key.trim();
    let known = HEADER_KEYS
        .into_iter()
        .find(|known| known.eq_ignore_ascii_case(key))?;
    Some((known, value.trim()))
}

fn apply_header(lrc: &mut Lrc, key: &str, value: &str) {
    let text = (!value.is_empty()).then(|| value.to_string());
    match key {
        "ar" => lrc.artist = text,
        "ti" => lrc.title = text,
        "al" => lrc.album = text,
        "lang" => lrc.language = text,
        "length" => lrc.length_ms = parse_stamp(value),
        "offset" => lrc.offset_ms = value.trim_start_matches('+').parse().unwrap_or(0),
        _ => {}
    }
}

/// Removes `<mm:ss.xx>` word stamps, collapsing the spaces they leave. Again until none is
/// left: removing `<00:01>` from `<0<00:01>0:01>` leaves another.
fn strip_word_stamps(text: &str) -> String {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    while text.contains('<') {
        let stripped = strip_word_stamps_once(&text);
        if stripped == text {
            break;
        }
        text = stripped;
    }
    text
}

fn strip_word_stamps_once(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let Some(len) = rest[start..].find('>') else {
            break;
        };
        if parse_stamp(&rest[start + 1..start + len]).is_some() {
            out.push_str(&rest[..start]);
            rest = &rest[start + len + 1..];
        } else {
            out.push_str(&rest[..=start]);
            rest = &rest[start + 1..];
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The word timing of a timed line as written (`raw`, trimmed), after its `count` leading
/// line stamps; `None` when it has no word stamps (or its stamps are not where the
/// stamp-free reading found them: a word stamp nested in a line stamp).
fn words_after(raw: &str, count: usize) -> Option<Words> {
    if !raw.contains('<') {
        return None;
    }
    let mut rest = raw;
    for _ in 0..count {
        let tag_end = rest.strip_prefix('[')?.find(']')?;
        parse_stamp(&rest[1..=tag_end])?;
        rest = rest[tag_end + 2..].trim_start();
    }
    let (text, cues) = word_cues(rest.trim(), None);
    (!cues.is_empty()).then_some(Words { text, cues })
}

/// One timed piece (a word or a syllable) of an enhanced LRC line (OpenSubsonic
/// `songLyrics` v2 `cue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cue {
    /// When it starts, in ms (its `<mm:ss.xx>` stamp).
    pub start_ms: u64,
    /// When it ends: the next stamp of the line, else the line's end (`None` when unknown).
    pub end_ms: Option<u64>,
    /// Its text, as written between its stamp and the next (spaces included).
    pub text: String,
    /// Where it starts in the line's text, in UTF-8 bytes.
    pub byte_start: usize,
    /// Where it ends in the line's text: the offset of its last byte (inclusive, as the
    /// OpenSubsonic spec counts: "눈" at the start is 0–2).
    pub byte_end: usize,
}

/// The text of one line of enhanced LRC (what follows its `[mm:ss.xx]` stamp) without its
/// word stamps, and the timed pieces of it, with their UTF-8 byte offsets into that text.
/// `line_end_ms` (the next line's start) ends the last piece when no stamp closes it. A
/// line without word stamps has no pieces; text before the first stamp belongs to none.
pub fn word_cues(line: &str, line_end_ms: Option<u64>) -> (String, Vec<Cue>) {
    let mut text = String::with_capacity(line.len());
    // (stamp, byte offset in `text` where its piece begins)
    let mut stamps: Vec<(u64, usize)> = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('<') {
        let stamp = rest[open..]
            .find('>')
            .and_then(|close| Some((parse_stamp(&rest[open + 1..open + close])?, close)));
        match stamp {
            Some((ms, close)) => {
                text.push_str(&rest[..open]);
                stamps.push((ms, text.len()));
                rest = &rest[open + close + 1..];
            }
            None => {
                // A `<` that opens no stamp is text.
                text.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    text.push_str(rest);
    let mut cues = Vec::new();
    for (index, &(start_ms, from)) in stamps.iter().enumerate() {
        let next = stamps.get(index + 1);
        let to = next.map_or(text.len(), |&(_, at)| at);
        if to <= from {
            // Two stamps in a row, or a closing stamp: no text of its own.
            continue;
        }
        cues.push(Cue {
            start_ms,
            end_ms: next.map(|&(ms, _)| ms).or(line_end_ms),
            text: text[from..to].to_string(),
            byte_start: from,
            byte_end: to - 1,
        });
    }
    (text, cues)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_cues_give_utf8_byte_offsets_of_cjk_text() {
        let (text, cues) = word_cues(
            "<00:12.00>東<00:12.50>京<00:13.00>の<00:13.40>夜<00:14.20>",
            Some(15_000),
        );
        assert_eq!(text, "東京の夜");
        let got: Vec<(&str, u64, Option<u64>, usize, usize)> = cues
            .iter()
            .map(|cue| {
                (
                    cue.text.as_str(),
                    cue.start_ms,
                    cue.end_ms,
                    cue.byte_start,
                    cue.byte_end,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("東", 12_000, Some(12_500), 0, 2),
                ("京", 12_500, Some(13_000), 3, 5),
                ("の", 13_000, Some(13_400), 6, 8),
                ("夜", 13_400, Some(14_200), 9, 11),
            ]
        );
        for cue in &cues {
            assert_eq!(&text[cue.byte_start..=cue.byte_end], cue.text);
        }
    }

    #[test]
    fn word_cues_keep_spaces_and_end_at_the_next_line() {
        let (text, cues) = word_cues("intro <00:01.00>눈을 <00:02.5>뜬 a<b", Some(4_000));
        assert_eq!(text, "intro 눈을 뜬 a<b");
        assert_eq!(cues.len(), 2);
        assert_eq!(
            (cues[0].text.as_str(), cues[0].byte_start, cues[0].byte_end),
            ("눈을 ", 6, 12)
        );
        assert_eq!(cues[1].end_ms, Some(4_000));
        assert_eq!(cues[1].text, "뜬 a<b");
        let (plain, none) = word_cues("no stamps here", None);
        assert_eq!((plain.as_str(), none.len()), ("no stamps here", 0));
    }
    use proptest::prelude::*;

    fn line(start_ms: u64, text: &str) -> Line {
        Line {
            start_ms,
            text: text.into(),
            words: None,
        }
    }

    #[test]
    fn stamps_of_every_precision_and_several_per_line() {
        let lrc = parse(
            "[ar: Aurora Lane]\n[ti:Polar Drift]\n[al:Northern Lights]\n[length: 02:22.50]\n[lang:en]\n[offset:+250]\n[by:someone]\n\
             [00:12.40] White horizon\n[00:18.955]Only the hum\n[01:02]Whole seconds\n[00:05.1] Tenths\n\
             [00:44.30][01:54.60] Polar drift, polar drift\n\n   \n[02:20.00] \n[100:00.00] Late",
        );
        assert_eq!(lrc.artist.as_deref(), Some("Aurora Lane"));
        assert_eq!(lrc.title.as_deref(), Some("Polar Drift"));
        assert_eq!(lrc.album.as_deref(), Some("Northern Lights"));
        assert_eq!(lrc.length_ms, Some(142_500));
        assert_eq!(lrc.language.as_deref(), Some("en"));
        assert_eq!(lrc.offset_ms, 250);
        assert_eq!(
            lrc.lines,
            vec![
                line(5_100, "Tenths"),
                line(12_400, "White horizon"),
                line(18_955, "Only the hum"),
                line(44_300, "Polar drift, polar drift"),
                line(62_000, "Whole seconds"),
                line(114_600, "Polar drift, polar drift"),
                line(140_000, ""),
                line(6_000_000, "Late"),
            ]
        );
        assert!(lrc.plain.iter().all(String::is_empty), "{:?}", lrc.plain);
        assert!(lrc.is_synced());
    }

    #[test]
    fn word_stamps_are_tolerated_and_malformed_lines_skipped() {
        let lrc = parse(
            "[00:01.00] <00:01.00> Hello <00:01.50> world <b>\n[00:7x.10] broken\n[0a:01.00] not a stamp\n[00:03.00]Fine\n[offset:-100]",
        );
        let texts: Vec<(u64, &str)> = lrc
            .lines
            .iter()
            .map(|line| (line.start_ms, line.text.as_str()))
            .collect();
        assert_eq!(texts, [(1_000, "Hello world <b>"), (3_000, "Fine")]);
        assert_eq!(lrc.plain, vec!["[0a:01.00] not a stamp".to_string()]);
        assert_eq!(lrc.offset_ms, -100);
    }

    #[test]
    fn plain_text_is_kept_as_written_with_its_verse_breaks_and_section_marks() {
        let lrc = parse(
            "\u{feff}\n\n[ar: Beyoncé]\n[Chorus: Beyoncé]\nLa la   la  \r\n\n\n  Indented <b>\n[Verse 2]\n[re:tool]\nSecond verse\n\n",
        );
        assert!(!lrc.is_synced());
        assert_eq!(lrc.artist.as_deref(), Some("Beyoncé"));
        assert_eq!(
            lrc.plain_text(),
            "[Chorus: Beyoncé]\nLa la   la\n\n\n  Indented <b>\n[Verse 2]\nSecond verse"
        );
        // Only the keys LRC defines are headers.
        for line in ["[Intro: Jay-Z]", "[la:en]", "[tool:x]", "[Bridge:]"] {
            assert_eq!(parse(line).plain_text(), line);
        }
        for line in ["[AU:a]", "[by:b]", "[ve:1]", "[#:comment]", "[length:3:00]"] {
            assert_eq!(parse(line).plain_text(), "", "{line}");
        }
        assert_eq!(parse("\n \n").plain_text(), "");
    }

    #[test]
    fn word_timing_is_kept_beside_the_line_and_written_back() {
        let lrc = parse(
            "[00:12.00]<00:12.00>東<00:12.50>京<00:13.00>の<00:13.40>夜<00:14.20>\n\
             [00:15.00] <00:15.00>눈을  <00:16.00>뜬 순간\n[00:18.00] no words",
        );
        assert_eq!(lrc.lines[0].text, "東京の夜");
        let words = lrc.lines[0].words.as_ref().unwrap();
        assert_eq!(words.text, "東京の夜");
        let pieces: Vec<(&str, u64, Option<u64>, usize, usize)> = words
            .cues
            .iter()
            .map(|cue| {
                (
                    cue.text.as_str(),
                    cue.start_ms,
                    cue.end_ms,
                    cue.byte_start,
                    cue.byte_end,
                )
            })
            .collect();
        assert_eq!(
            pieces,
            [
                ("東", 12_000, Some(12_500), 0, 2),
                ("京", 12_500, Some(13_000), 3, 5),
                ("の", 13_000, Some(13_400), 6, 8),
                ("夜", 13_400, Some(14_200), 9, 11),
            ]
        );
        // The line's text collapses spaces; the words keep them, and the offsets count in
        // the words' text.
        assert_eq!(lrc.lines[1].text, "눈을 뜬 순간");
        let words = lrc.lines[1].words.as_ref().unwrap();
        assert_eq!(words.text, "눈을  뜬 순간");
        assert_eq!((words.cues[1].byte_start, words.cues[1].end_ms), (8, None));
        for cue in &words.cues {
            assert_eq!(&words.text[cue.byte_start..=cue.byte_end], cue.text);
        }
        assert_eq!(lrc.lines[2].words, None);
        let written = write(&lrc.lines, 0);
        assert!(written.contains("<00:13.40>夜<00:14.20>"), "{written}");
        assert_eq!(parse(&written).lines, lrc.lines);
    }

    #[test]
    fn word_stamps_are_removed_until_none_is_left() {
        let lrc = parse("[00:02.00] <0<00:01>0:01> Hi\n<0<00:01>0:03>[00:05.00] There");
        let texts: Vec<&str> = lrc.lines.iter().map(|line| line.text.as_str()).collect();
        assert_eq!(texts, ["Hi", "There"]);
        assert_eq!(lrc.lines[1].start_ms, 5_000);
        assert_eq!(parse(&write(&lrc.lines, 0)).lines, lrc.lines);
    }

    #[test]
    fn minutes_have_the_same_limit_both_ways() {
        let last = line(MAX_START_MS, "last");
        let lines = vec![
            line(0, "one\ntwo"),
            last.clone(),
            line(MAX_START_MS + 1, "never"),
        ];
        let text = write(&lines, 0);
        assert_eq!(text, "[00:00.00] one two\n[9999:59.999] last\n");
        assert_eq!(parse(&text).lines, vec![line(0, "one two"), last]);
        assert!(parse("[10000:00.00] too late").lines.is_empty());
    }

    #[test]
    fn synced_plain_text_keeps_pauses_inside_only() {
        let lrc = parse("[00:01.00] One\n[00:02.00] \n[00:03.00] Two\n[00:04.00] ");
        assert_eq!(lrc.plain_text(), "One\n\nTwo");
    }

    fn text() -> impl Strategy<Value = String> {
        // Text as lyrics have it: no line breaks, no leading bracket, no word-stamp brackets;
        // spaces inside only, single.
        "[a-zA-Z0-9ñüéß桜の雨,.!?' -]{0,40}"
            .prop_map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
    }

    proptest! {
        #[test]
        fn lines_survive_a_round_trip(
            mut lines in proptest::collection::vec((0u64..6_000_000, text()), 0..40),
            offset in -5_000i64..5_000,
        ) {
            lines.sort_by_key(|(start, _)| *start);
            let lines: Vec<Line> = lines.into_iter().map(|(start_ms, text)| Line { start_ms, text, words: None }).collect();
            let parsed = parse(&write(&lines, offset));
            prop_assert_eq!(parsed.lines, lines);
            prop_assert_eq!(parsed.offset_ms, offset);
        }

        #[test]
        fn any_text_parses_and_writes_back(text in "(\\[[0-9:.a-z]{0,9}\\]|<[0-9:.]{0,9}>|\\PC|\n){0,60}") {
            let parsed = parse(&text);
            prop_assert!(parsed.lines.windows(2).all(|pair| pair[0].start_ms <= pair[1].start_ms));
            let again = parse(&write(&parsed.lines, parsed.offset_ms));
            prop_assert_eq!(&again.lines, &parsed.lines);
            prop_assert_eq!(again.offset_ms, parsed.offset_ms);
        }

        #[test]
        fn nested_word_stamps_parse_once_and_for_all(text in "(\\[[0-9:.]{0,7}\\]|<[0-9:.<>]{0,9}>|[a ]){0,40}") {
            let parsed = parse(&text);
            prop_assert_eq!(parse(&write(&parsed.lines, 0)).lines, parsed.lines);
        }
    }
}
