//! `invisible_unicode`: characters a reader does not see but a model reads —
//! zero-width and other format characters, bidirectional controls, tag
//! characters (which spell ASCII invisibly) and variation selectors used to
//! smuggle bytes. Runs of them are one finding; tag text is decoded.

use super::{Check, Hit};

/// Whether `c` is invisible or reorders text, wherever it stands.
pub(super) fn is_hidden(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD                  // soft hyphen
        | 0x034F                // combining grapheme joiner
        | 0x061C                // Arabic letter mark
        | 0x115F | 0x1160      // Hangul fillers
        | 0x17B4 | 0x17B5      // Khmer inherent vowels
        | 0x180B..=0x180F      // Mongolian variation selectors, vowel separator
        | 0x200B..=0x200F      // zero-width space/joiners, LRM, RLM
        | 0x202A..=0x202E      // bidi embeddings and overrides
        | 0x2060..=0x2064      // word joiner, invisible operators
        | 0x2066..=0x206F      // bidi isolates, deprecated format characters
        | 0x3164 | 0xFFA0      // Hangul fillers
        | 0xFE00..=0xFE0F      // variation selectors
        | 0xFEFF                // zero-width no-break space
        | 0xFFF9..=0xFFFB      // interlinear annotations
        | 0x1D173..=0x1D17A    // musical formatting
        | 0xE0000..=0xE007F    // tags
        | 0xE0100..=0xE01EF // variation selectors supplement
    )
}

/// A pictograph an emoji sequence may join or style (ZWJ, VS16).
fn is_pictograph(c: char) -> bool {
    matches!(u32::from(c), 0x2190..=0x2BFF | 0x1F000..=0x1FAFF)
}

/// Hidden characters that are part of an ordinary emoji: a zero-width
/// joiner between two pictographs, or one VS16 after a pictograph.
fn is_emoji_glue(prev: Option<char>, c: char, next: Option<char>) -> bool {
    match c {
        '\u{200D}' => prev.is_some_and(is_pictograph) && next.is_some_and(is_pictograph),
        '\u{FE0F}' => prev.is_some_and(is_pictograph),
        _ => false,
    }
}

pub(super) fn scan(text: &str, hits: &mut Vec<Hit>) {
    let mut run: Option<(usize, usize)> = None;
    let mut prev = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let hidden = is_hidden(c) && !is_emoji_glue(prev, c, next);
        match (&mut run, hidden) {
            (Some((_, end)), true) => *end = i + c.len_utf8(),
            (None, true) => run = Some((i, i + c.len_utf8())),
            (Some((start, end)), false) => {
                hits.push(finding(text, *start, *end));
                run = None;
            }
            (None, false) => {}
        }
        prev = Some(c);
    }
    if let Some((start, end)) = run {
        hits.push(finding(text, start, end));
    }
}

fn finding(text: &str, start: usize, end: usize) -> Hit {
    let run = &text[start..end];
    let count = run.chars().count();
    let decoded: String = run
        .chars()
        .filter_map(|c| match u32::from(c) {
            t @ 0xE0020..=0xE007E => char::from_u32(t - 0xE0000),
            _ => None,
        })
        .collect();
    let bidi = run
        .chars()
        .any(|c| matches!(u32::from(c), 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069));
    let mut note = format!("{count} invisible character{}", if count == 1 { "" } else { "s" });
    if bidi {
        note.push_str(", bidirectional control");
    }
    if !decoded.is_empty() {
        note.push_str(&format!(", tag text {decoded:?}"));
    }
    Hit {
        check: Check::InvisibleUnicode,
        start,
        end,
        note: Some(note),
    }
}
