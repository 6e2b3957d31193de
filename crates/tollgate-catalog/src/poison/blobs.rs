//! `url` and `encoded_blob`: addresses a model could be told to send data
//! to or fetch instructions from, and payloads a reader cannot read.
//!
//! A URL is info: documentation links are everywhere in honest
//! definitions; what a URL is used for (data sent to it) is
//! `context_exfiltration`'s business. Encoded data is decoded: base64 or
//! hex that decodes to readable text is medium, high when that text holds
//! instructions; an opaque blob (long base64 with mixed case, digits,
//! plausible padding and high entropy, so that long identifiers and paths
//! do not count; long hex) is info, since ids, hashes and example tokens
//! look the same.

use base64::Engine;
use base64::alphabet::{STANDARD, URL_SAFE};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::finding::{Check, Hit, Severity};

/// URL schemes found anywhere (lowercase, with their `//`).
const SCHEMES: &[&str] = &["http://", "https://", "ws://", "wss://", "ftp://", "ftps://", "file://"];
/// The shortest opaque base64 run reported, without padding.
const MIN_BASE64: usize = 40;
/// The shortest run decoded to look for text.
const MIN_DECODED: usize = 16;
/// The shortest hex run reported.
const MIN_HEX: usize = 32;

/// Whether a decoded text holds instructions (the word checks, run by
/// the caller).
pub(super) type Instructs<'a> = &'a dyn Fn(&str) -> bool;

pub(super) fn scan(text: &str, with_urls: bool, instructs: Instructs<'_>, hits: &mut Vec<Hit>) {
    if with_urls {
        urls(text, hits);
    }
    encoded(text, instructs, hits);
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
                hits.push(url(at, url_end(text, at + scheme.len())));
            }
        }
    }
    for (at, _) in lower.match_indices("data:") {
        if starts_word(at) && is_media_type(&lower[at + 5..]) {
            hits.push(url(at, url_end(text, at + 5)));
        }
    }
}

fn url(start: usize, end: usize) -> Hit {
    let reason = "a URL: read where it points and what the text does with it";
    Hit::new(Check::Url, Severity::Info, reason, start, end)
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

fn encoded(text: &str, instructs: Instructs<'_>, hits: &mut Vec<Hit>) {
    let is_run = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '_' | '-' | '=');
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (start, is_run(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                run(text, s, i, instructs, hits);
                start = None;
            }
            _ => {}
        }
    }
}

/// A run of base64, base64url and hex characters from `start` to `end`.
fn run(text: &str, start: usize, end: usize, instructs: Instructs<'_>, hits: &mut Vec<Hit>) {
    let s = &text[start..end];
    if s.len() < MIN_DECODED {
        return;
    }
    let mut hex = false;
    for (at, len) in pieces(s, |c| c.is_ascii_hexdigit()) {
        if len >= MIN_HEX {
            hex = true;
            let decoded = decode_hex(&s[at..at + len]);
            let what = format!("hex, {len} digits");
            hits.push(blob(decoded, what, instructs, start + at, start + at + len));
        }
    }
    if hex {
        return;
    }
    for (at, len) in pieces(s, |c| c != '=') {
        let padding = s[at + len..].chars().take_while(|c| *c == '=').count();
        let piece = &s[at..at + len];
        let end = start + at + len + padding.min(2);
        let what = format!("base64, {len} characters");
        let text = decode_base64(piece).filter(|d| len >= MIN_DECODED && is_text(d));
        let plausible = padding == 0 || (padding <= 2 && (len + padding) % 4 == 0);
        if text.is_some() || (len >= MIN_BASE64 && plausible && looks_random(piece)) {
            hits.push(blob(text, what, instructs, start + at, end));
        }
    }
}

/// What a blob is worth: readable text that instructs is high, readable
/// text medium, anything else info.
fn blob(decoded: Option<String>, what: String, instructs: Instructs<'_>, start: usize, end: usize) -> Hit {
    let (severity, reason, note) = match decoded.filter(|d| is_text(d)) {
        Some(text) if instructs(&text) => (
            Severity::High,
            "encoded text that decodes to instructions for the model",
            format!("{what}, decodes to {text:?}"),
        ),
        Some(text) => (
            Severity::Medium,
            "encoded text a reader cannot read but a model can decode",
            format!("{what}, decodes to {text:?}"),
        ),
        None => (
            Severity::Info,
            "an opaque encoded blob (an id, a hash or hidden data)",
            what,
        ),
    };
    Hit::new(Check::EncodedBlob, severity, reason, start, end).with_note(note)
}

fn decode_hex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = s
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
        })
        .collect();
    bytes.and_then(|b| String::from_utf8(b).ok())
}

fn decode_base64(s: &str) -> Option<String> {
    let config = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    [STANDARD, URL_SAFE]
        .iter()
        .find_map(|alphabet| GeneralPurpose::new(alphabet, config).decode(s).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
}

/// Readable text: a few words of printable characters, mostly letters.
fn is_text(s: &str) -> bool {
    let chars = s.chars().count();
    let printable = s.chars().filter(|c| !c.is_control() || *c == '\n').count();
    let letters = s.chars().filter(|c| c.is_alphabetic()).count();
    let spaces = s.chars().filter(|c| *c == ' ').count();
    chars >= 12 && printable == chars && letters * 10 >= chars * 6 && spaces >= 2
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
