//! `invisible_unicode`: characters a reader does not see but a model reads —
//! zero-width and other format characters, bidirectional controls, tag
//! characters (which spell ASCII invisibly) and variation selectors used to
//! smuggle bytes. Runs of them are one finding; tag text is decoded. A
//! run, a tag, a bidirectional control or a variation selector is high; a
//! single stray zero-width space, soft hyphen or byte-order mark (often
//! left by copy and paste) is info.
//!
//! `terminal_escape`: ANSI escape sequences and other control characters
//! (a carriage return not followed by a line feed included), which hide or
//! overwrite text where a definition is shown in a terminal: high.

use super::finding::{Check, Hit, Severity, push};

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
    invisible(text, hits);
    terminal(text, hits);
}

fn invisible(text: &str, hits: &mut Vec<Hit>) {
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
    let selector = run
        .chars()
        .any(|c| matches!(u32::from(c), 0xFE00..=0xFE0F | 0xE0100..=0xE01EF));
    let mut note = format!("{count} invisible character{}", if count == 1 { "" } else { "s" });
    if bidi {
        note.push_str(", bidirectional control");
    }
    if !decoded.is_empty() {
        note.push_str(&format!(", tag text {decoded:?}"));
    }
    let (severity, reason) = if !decoded.is_empty() {
        (
            Severity::High,
            "invisible tag characters that spell text only the model reads",
        )
    } else if bidi {
        (
            Severity::High,
            "a bidirectional control that makes the text read differently than it shows",
        )
    } else if count > 1 || selector {
        (
            Severity::High,
            "a run of invisible characters that can carry hidden data",
        )
    } else {
        (
            Severity::Info,
            "a stray invisible character, often left by copy and paste",
        )
    };
    Hit::new(Check::InvisibleUnicode, severity, reason, start, end).with_note(note)
}

/// ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`),
/// other C0 and C1 controls but tab and line breaks, and a carriage return
/// that does not end a line.
fn terminal(text: &str, hits: &mut Vec<Hit>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let Some(c) = text[i..].chars().next() else { break };
        let len = c.len_utf8();
        let control = c.is_control() && !matches!(c, '\n' | '\t' | '\r');
        let lone_cr = c == '\r' && bytes.get(i + 1) != Some(&b'\n');
        if !(control || lone_cr) {
            i += len;
            continue;
        }
        let end = if c == '\u{1b}' { escape_end(text, i) } else { i + len };
        let reason = if c == '\u{1b}' {
            "an ANSI escape sequence that can hide or rewrite text in a terminal"
        } else if lone_cr {
            "a carriage return that lets later text overwrite a line in a terminal"
        } else {
            "a control character"
        };
        push(hits, Hit::new(Check::TerminalEscape, Severity::High, reason, i, end));
        i = end.max(i + len);
    }
}

/// Where the escape sequence starting at `at` (an ESC) ends.
fn escape_end(text: &str, at: usize) -> usize {
    let rest = &text.as_bytes()[at + 1..];
    let body = match rest.first() {
        Some(b'[') => rest[1..].iter().position(|b| (0x40..=0x7E).contains(b)).map(|p| p + 2),
        Some(b']') => rest
            .windows(2)
            .position(|w| w[0] == 0x07 || w == b"\x1b\\")
            .map(|p| if rest[p] == 0x07 { p + 1 } else { p + 2 }),
        Some(_) => Some(1),
        None => Some(0),
    };
    let end = at + 1 + body.unwrap_or(rest.len());
    (end..=text.len())
        .find(|e| text.is_char_boundary(*e))
        .unwrap_or(text.len())
}
