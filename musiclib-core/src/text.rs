//! Text normalisation for matching names: one artist is never split in two by case, accents,
//! Unicode normalisation form or spacing.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

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
        if pending_space {
            key.push(' ');
            pending_space = false;
        }
        key.extend(c.to_lowercase());
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
    fn keys_fold_case_accents_and_forms() {
        assert_eq!(name_key("Beyoncé"), "beyonce");
        assert_eq!(name_key("BEYONCE"), "beyonce");
        assert_eq!(name_key("Beyonce\u{301}"), "beyonce");
        assert_eq!(name_key("  Los   Señores "), "los senores");
        assert_eq!(name_key("Łódź"), "łodz");
        assert_eq!(name_key("月光オーケストラ"), "月光オーケストラ");
    }
}
