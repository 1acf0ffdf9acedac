//! Reading a name as a person sees it: invisible characters and combining marks removed,
//! compatibility characters (full-width, superscript, ligatures) folded by Unicode NFKC.
//!
//! An export name becomes a KEY in state and in the exports index, where no value redaction
//! reaches it, so a name that spells a secret is refused; this folding makes "spells" cover a
//! secret written with zero-width spaces between its letters or in full-width forms.
//! Cross-script look-alikes (Cyrillic `а` for Latin `a`) are deliberately not folded.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Whether `c` is invisible when rendered: Unicode's Default_Ignorable_Code_Point set
/// (zero-width spaces and joiners, bidi controls, variation selectors, tag characters, the
/// Hangul fillers, the soft hyphen, ...).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// `text` with invisible characters and combining marks removed, then NFKC-folded (and
/// cleaned once more, since folding can produce a combining mark).
pub fn fold(text: &str) -> String {
    let visible = |c: &char| !is_invisible(*c) && !is_combining_mark(*c);
    let stripped: String = text.chars().filter(visible).collect();
    stripped.nfkc().filter(visible).collect()
}

/// How a name contains a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The value is in the name as written.
    Plain,
    /// The value appears only once the name is read as a person sees it.
    Folded,
}

/// Whether `name` contains `value` (as written, else folded; `value` is folded too). An
/// empty value is never found.
pub fn find(name: &str, value: &str) -> Option<Hit> {
    if value.is_empty() {
        return None;
    }
    if name.contains(value) {
        return Some(Hit::Plain);
    }
    let v = fold(value);
    if v.is_empty() {
        return None;
    }
    fold(name).contains(&v).then_some(Hit::Folded)
}

/// Whether `name` equals `value` (as written, else folded).
pub fn equals(name: &str, value: &str) -> Option<Hit> {
    if name == value {
        return Some(Hit::Plain);
    }
    let v = fold(value);
    (!v.is_empty() && fold(name) == v).then_some(Hit::Folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_and_marks_are_removed() {
        assert_eq!(fold("s\u{200B}e\u{2060}c\u{FEFF}ret"), "secret");
        assert_eq!(fold("se\u{0301}cret"), "secret");
        assert_eq!(fold("a\u{202E}b\u{00AD}c"), "abc");
    }

    #[test]
    fn compatibility_characters_are_folded() {
        assert_eq!(fold("ｓｅｃｒｅｔ"), "secret");
        assert_eq!(fold("x²"), "x2");
        assert_eq!(fold("ﬁle"), "file");
    }

    #[test]
    fn cross_script_look_alikes_are_not_folded() {
        // Cyrillic small a (U+0430) stays distinct from Latin a.
        assert_eq!(find("p\u{0430}ss", "pass"), None);
    }

    #[test]
    fn finds_plain_and_folded_hits() {
        assert_eq!(find("prefix-hunter2-x", "hunter2"), Some(Hit::Plain));
        assert_eq!(find("prefix-ｈｕｎｔｅｒ２", "hunter2"), Some(Hit::Folded));
        assert_eq!(find("h\u{200B}unter2", "hunter2"), Some(Hit::Folded));
        assert_eq!(find("other", "hunter2"), None);
        assert_eq!(find("anything", ""), None);
        assert_eq!(equals("ｐｒｏｄ", "prod"), Some(Hit::Folded));
        assert_eq!(equals("prod-x", "prod"), None);
    }
}
