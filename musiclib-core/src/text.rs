//! Text normalisation for matching names: one artist is never split in two by case, accents,
//! Unicode normalisation form or spacing.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Most characters of a catalogue text (a track's title, artist, album, album artist and
/// genre; an artist's name, an album's title). Longer ones from a file's tags or an outside
/// service are cut to it, and edits refuse them: the sort indexes hold these texts twice
/// (as written, and lower-cased), and PostgreSQL's index rows hold at most 2,704 bytes, so
/// four such texts of four-byte characters must fit in one.
pub const MAX_TEXT_CHARS: usize = 150;

/// Most bytes of a name key ([`name_key`]): decomposition can make a name's key many times
/// longer than the name (one ligature is eighteen letters), and keys are indexed.
pub const MAX_KEY_BYTES: usize = 600;

/// `text` cut to [`MAX_TEXT_CHARS`] characters, without its control characters, trimmed.
pub fn cap(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
        .take(MAX_TEXT_CHARS)
        .collect::<String>()
        .trim()
        .to_string()
}

/// Whether `text` holds a control character (Unicode's Cc: C0, DEL, C1), which names refuse:
/// some of them cannot be written in XML at all.
pub fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Whether `text` holds a control character other than tab, line feed and carriage return,
/// which longer texts (descriptions) refuse.
pub fn has_control_but_lines(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// The matching key of a name: NFKD without combining marks, lower-cased, with runs of
/// whitespace collapsed. `"Beyoncé"`, `"BEYONCE"` and `"beyonce\u{301}"` share one key.
pub fn name_key(name: &str) -> String {
    let mut key = String::with_capacity(name.len());
    let mut pending_space = false;
    for c in name.nfkd().filter(|c| !is_combining_mark(*c)) {
        if c.is_whitespace() {
            pending_space = !key.is_empty();
            continue;
        }
        let at = key.len();
        if pending_space {
            key.push(' ');
            pending_space = false;
        }
        key.extend(c.to_lowercase());
        if key.len() > MAX_KEY_BYTES {
            key.truncate(at);
            break;
        }
    }
    key
}

/// Key used for substring search: the name key plus the letters kept as typed in NFC, so a
/// query matches with or without accents.
pub fn search_key(parts: &[&str]) -> String {
    let mut text = String::new();
    for part in parts.iter().filter(|part| !part.is_empty()) {
        if !text.is_empty() {
            text.push('\u{1f}');
        }
        text.push_str(&name_key(part));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_and_keys_are_bounded() {
        let long = "\u{1F3B5}".repeat(1000);
        assert_eq!(cap(&long).chars().count(), MAX_TEXT_CHARS);
        assert_eq!(cap("  a\u{0}b\u{1f}c  "), "abc");
        assert_eq!(cap("line\none"), "line\none");
        // One ligature decomposes into eighteen letters: the key stops at its bound.
        let ligatures = "\u{FDFA}".repeat(MAX_TEXT_CHARS);
        let key = name_key(&ligatures);
        assert!(key.len() <= MAX_KEY_BYTES, "{}", key.len());
        assert!(!key.is_empty());
        assert_eq!(name_key(&"x".repeat(700)).len(), MAX_KEY_BYTES);
    }

    #[test]
    fn keys_fold_case_accents_and_forms() {
        assert_eq!(name_key("Beyoncé"), "beyonce");
        assert_eq!(name_key("BEYONCE"), "beyonce");
        assert_eq!(name_key("Beyonce\u{301}"), "beyonce");
        assert_eq!(name_key("  Los   Señores "), "los senores");
        assert_eq!(name_key("Łódź"), "łodz");
        assert_eq!(name_key("月光オーケストラ"), "月光オーケストラ");
    }
}
