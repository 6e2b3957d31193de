//! `url` and `encoded_blob`: addresses a model could be told to send data
//! to or fetch instructions from, and payloads a reader cannot read —
//! long base64 (mixed case and digits, plausible padding, high entropy, so
//! that long identifiers and paths do not count) and long hex.

use super::{Check, Hit};

/// URL schemes found anywhere (lowercase, with their `//`).
const SCHEMES: &[&str] = &["http://", "https://", "ws://", "wss://", "ftp://", "ftps://", "file://"];
/// The shortest base64 run reported, without padding.
const MIN_BASE64: usize = 40;
/// The shortest hex run reported.
const MIN_HEX: usize = 32;

pub(super) fn scan(text: &str, hits: &mut Vec<Hit>) {
    urls(text, hits);
    encoded(text, hits);
}

fn urls(text: &str, hits: &mut Vec<Hit>) {
    let lower = text.to_ascii_lowercase();
    let starts_word = |at: usize| {
        !lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '+' | '.' | '-'))
    };
    for scheme in SCHEMES {
        for (at, _) in lower.match_indices(scheme) {
            if starts_word(at) {
                hits.push(Hit::new(Check::Url, at, url_end(text, at + scheme.len())));
            }
        }
    }
    for (at, _) in lower.match_indices("data:") {
        if starts_word(at) && is_media_type(&lower[at + 5..]) {
            hits.push(Hit::new(Check::Url, at, url_end(text, at + 5)));
        }
    }
}

/// `type/subtype` then `;` or `,`, as a `data:` URL starts.
fn is_media_type(rest: &str) -> bool {
    let Some((kind, after)) = rest.split_once('/') else {
        return false;
    };
    let sub_len = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(after.len());
    !kind.is_empty()
        && kind.chars().all(|c| c.is_ascii_alphabetic())
        && sub_len > 0
        && matches!(after[sub_len..].chars().next(), Some(';' | ','))
}

/// Where a URL starting before `from` ends: at white space, a quote or an
/// angle bracket, less trailing punctuation.
fn url_end(text: &str, from: usize) -> usize {
    let rest = &text[from..];
    let stop = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
        .unwrap_or(rest.len());
    let url = rest[..stop].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}']);
    from + url.len()
}

fn encoded(text: &str, hits: &mut Vec<Hit>) {
    let is_run = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '_' | '-' | '=');
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (start, is_run(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                run(text, s, i, hits);
                start = None;
            }
            _ => {}
        }
    }
}

/// A run of base64, base64url and hex characters from `start` to `end`.
fn run(text: &str, start: usize, end: usize, hits: &mut Vec<Hit>) {
    let s = &text[start..end];
    if s.len() < MIN_HEX {
        return;
    }
    let mut hex = false;
    for (at, len) in pieces(s, |c| c.is_ascii_hexdigit()) {
        if len >= MIN_HEX {
            hex = true;
            let mut hit = Hit::new(Check::EncodedBlob, start + at, start + at + len);
            hit.note = Some(format!("hex, {len} digits"));
            hits.push(hit);
        }
    }
    if hex {
        return;
    }
    for (at, len) in pieces(s, |c| c != '=') {
        let padding = s[at + len..].chars().take_while(|c| *c == '=').count();
        let plausible = padding == 0 || (padding <= 2 && (len + padding) % 4 == 0);
        if len >= MIN_BASE64 && plausible && looks_random(&s[at..at + len]) {
            let mut hit = Hit::new(Check::EncodedBlob, start + at, start + at + len + padding.min(2));
            hit.note = Some(format!("base64, {len} characters"));
            hits.push(hit);
        }
    }
}

/// The maximal runs of characters that satisfy `keep`, as (offset, length).
fn pieces(s: &str, keep: impl Fn(char) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), '\0'))) {
        match (start, c != '\0' && keep(c)) {
            (None, true) => start = Some(i),
            (Some(st), false) => {
                out.push((st, i - st));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Whether a long run reads like encoded bytes rather than a word, an
/// identifier or a path: upper and lower case and digits all present, and
/// the characters spread as random data spreads them.
fn looks_random(s: &str) -> bool {
    let count = |f: fn(&u8) -> bool| s.as_bytes().iter().filter(|b| f(b)).count();
    let (upper, lower, digits) = (
        count(u8::is_ascii_uppercase),
        count(u8::is_ascii_lowercase),
        count(u8::is_ascii_digit),
    );
    upper >= 3 && lower >= 3 && digits >= 2 && entropy(s) >= 4.0
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = f64::from(u32::try_from(s.len()).unwrap_or(u32::MAX));
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum()
}
