//! `homoglyphs`: letters that look like the Latin ones a reader sees but
//! are not, so that a filter (or a reviewer's search) misses the word.
//!
//! - A word mixing Latin letters with Cyrillic, Greek or Armenian
//!   look-alikes (`іgnore`, `sеnd_emаil`): high. Words wholly in another
//!   script are text in that language and pass; so do symbols such as
//!   `Ωm` or `πr`, whose letters imitate no Latin one.
//! - Runs of full-width Latin letters (`ｉｇｎｏｒｅ`) in text that is not
//!   Chinese, Japanese or Korean (where full-width letters are ordinary),
//!   and mathematical styled letters (`𝐢𝐠𝐧𝐨𝐫𝐞`): medium.
//!
//! What the disguised words say is read by the other checks on the folded
//! text; this check says that they were disguised.

use super::finding::{Check, Hit, Severity, push};
use super::fold::lookalike;

/// The fewest disguised letters in a row that count.
const MIN_RUN: usize = 3;

pub(super) fn scan(text: &str, hits: &mut Vec<Hit>) {
    mixed_words(text, hits);
    styled_runs(text, hits);
}

fn mixed_words(text: &str, hits: &mut Vec<Hit>) {
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (start, c.is_alphanumeric()) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                word(text, s, i, hits);
                start = None;
            }
            _ => {}
        }
    }
}

fn word(text: &str, start: usize, end: usize, hits: &mut Vec<Hit>) {
    let w = &text[start..end];
    let latin = w.chars().filter(char::is_ascii_alphabetic).count();
    let disguised: String = w
        .chars()
        .filter(|c| !c.is_ascii() && c.to_lowercase().any(|l| lookalike(l).is_some()))
        .collect();
    if latin >= 2 && !disguised.is_empty() {
        let note = format!(
            "{} look-alike letter{} among Latin ones",
            disguised.chars().count(),
            plural(&disguised)
        );
        let reason = "a word mixing Latin letters with Cyrillic, Greek or Armenian look-alikes";
        push(
            hits,
            Hit::new(Check::Homoglyphs, Severity::High, reason, start, end).with_note(note),
        );
    }
}

fn plural(s: &str) -> &'static str {
    if s.chars().count() == 1 { "" } else { "s" }
}

fn is_full_width_latin(c: char) -> bool {
    matches!(u32::from(c), 0xFF21..=0xFF3A | 0xFF41..=0xFF5A)
}

fn is_styled_latin(c: char) -> bool {
    matches!(u32::from(c), 0x1D400..=0x1D6A3)
}

fn is_east_asian(c: char) -> bool {
    matches!(
        u32::from(c),
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0x1100..=0x11FF
    )
}

/// Runs of full-width or styled letters (spaces and punctuation of the
/// same forms inside a run keep it going).
fn styled_runs(text: &str, hits: &mut Vec<Hit>) {
    let east_asian = text.chars().any(is_east_asian);
    let mut run: Option<(usize, usize, usize)> = None;
    let flush = |run: Option<(usize, usize, usize)>, hits: &mut Vec<Hit>| {
        if let Some((start, end, letters)) = run.filter(|r| r.2 >= MIN_RUN) {
            let reason = "full-width or styled Latin letters: a reader sees the word, a filter does not";
            push(
                hits,
                Hit::new(Check::Homoglyphs, Severity::Medium, reason, start, end)
                    .with_note(format!("{letters} disguised letters")),
            );
        }
    };
    for (i, c) in text.char_indices() {
        let disguised = (is_full_width_latin(c) && !east_asian) || is_styled_latin(c);
        let joiner = c == ' ' || c == '\u{3000}' || matches!(u32::from(c), 0xFF01..=0xFF20);
        match (&mut run, disguised, joiner) {
            (Some(r), true, _) => {
                r.1 = i + c.len_utf8();
                r.2 += 1;
            }
            (None, true, _) => run = Some((i, i + c.len_utf8(), 1)),
            (Some(_), false, true) => {}
            (Some(_), false, false) => flush(run.take(), hits),
            (None, false, _) => {}
        }
    }
    flush(run, hits);
}
