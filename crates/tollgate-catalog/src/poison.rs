//! Poisoning checks: text in a definition that is there for the model rather
//! than for the person reading the catalog — the signs of tool poisoning,
//! shadowing and rug pulls published against MCP servers.
//!
//! Not on the request path: `tollgate catalog diff` runs [`check`] on every
//! new, changed and renamed definition so that the reviewer sees each
//! [`Finding`] (the definition, the JSON pointer of the field, the byte span
//! of the offending text, an excerpt, a [`Severity`] and the reason in
//! words); the sync logs the findings of unapproved definitions and counts
//! them by [`Check::as_str`]. A finding is a reason to read closely, not a
//! verdict: approval stays a person's call.
//!
//! Every string of a definition is read, and so are the names of its
//! parameters; where a string sits (`place`) decides how: names are split
//! into words, labels (titles, enum values, defaults, examples) should hold
//! no instructions at all (`labels`), locators (`$schema`, `icons`) only
//! get the character checks. Text is folded first (`fold`: invisible
//! characters dropped, full-width and styled letters, accents and
//! look-alike letters read as plain Latin) and cut into words (`phrase`).
//! The checks, one module each, lowest layer first:
//!
//! - characters: `unicode` (`invisible_unicode`, `terminal_escape`),
//!   `homoglyphs`;
//! - words, from lexicons of phrases with their severity: `text`
//!   (`model_instructions`), `exfil` (`context_exfiltration`), `foreign`
//!   (`foreign_instructions`), `influence` (`passive_influence`,
//!   `false_error`), `shadowing` (`shadowing`, `tool_discovery`),
//!   `secrets` (`sensitive_path`);
//! - data: `blobs` (`url`, `encoded_blob`, decoded and read again);
//! - surroundings: `names` (`tool_reference`, `server_reference`, from the
//!   [`CheckContext`]) and `long_description`.
//!
//! `docs/catalog.md` ("Poisoning checks") lists what each check finds and
//! misses, and the recall and false alarms measured on the labelled corpus
//! of `tests/corpus/`: the lexicons catch what they were shown and miss much
//! of what is phrased anew, so a clean result means "nothing matched".

use serde_json::Value;

use crate::definition::Definition;

mod blobs;
mod context;
mod exfil;
mod finding;
mod fold;
mod foreign;
mod homoglyphs;
mod influence;
mod labels;
mod names;
mod phrase;
mod place;
mod secrets;
mod shadowing;
mod text;
mod unicode;

pub use context::CheckContext;
pub(crate) use finding::printable_text;
pub use finding::{Check, Finding, Severity};

use finding::{Hit, excerpt};
use phrase::Reading;
use place::Place;

/// Run every check on every string of `definition` (and on the names of
/// its parameters); findings in field order, then by position.
pub fn check(definition: &Definition, context: &CheckContext) -> Vec<Finding> {
    let mut strings = Vec::new();
    collect_strings(&definition.body, &mut String::new(), false, &mut strings);
    let key_pointer = format!("/{}", definition.kind.key_field());
    let mut findings = Vec::new();
    for s in strings {
        let place = if s.is_key {
            Place::Name
        } else {
            Place::of(&s.pointer, &key_pointer)
        };
        let mut hits = scan(s.text, place, &definition.key, context);
        if s.pointer == "/description" {
            long_description(s.text, context, &mut hits);
        }
        hits.sort_by_key(|h| (h.start, h.check));
        findings.extend(hits.into_iter().map(|hit| Finding {
            check: hit.check,
            severity: hit.severity,
            reason: hit.reason,
            kind: definition.kind,
            key: definition.key.clone(),
            field: s.pointer.clone(),
            span: (hit.start, hit.end),
            excerpt: excerpt(s.text, hit.start, hit.end, hit.note.as_deref()),
        }));
    }
    findings
}

/// Every check that applies at `place` on one string.
fn scan(text: &str, place: Place, own: &str, context: &CheckContext) -> Vec<Hit> {
    let mut hits = Vec::new();
    unicode::scan(text, &mut hits);
    homoglyphs::scan(text, &mut hits);
    if matches!(place, Place::Locator | Place::Repeat) {
        return hits;
    }
    let reading = if place.is_identifier() {
        Reading::identifier(text)
    } else {
        Reading::prose(text)
    };
    read_words(&reading, place == Place::Name, own, context, &mut hits);
    secrets::scan(&reading, place, &mut hits);
    if !place.is_identifier() {
        names::scan(text, own, context, &mut hits);
        let with_urls = matches!(place, Place::Description | Place::Prose);
        blobs::scan(text, with_urls, &instructs, &mut hits);
    }
    labels::scan(&reading, place, &mut hits);
    hits
}

/// The checks that read words.
fn read_words(reading: &Reading<'_>, is_parameter: bool, own: &str, context: &CheckContext, hits: &mut Vec<Hit>) {
    text::scan(reading, hits);
    exfil::scan(reading, is_parameter, hits);
    foreign::scan(reading, hits);
    influence::scan(reading, context, hits);
    shadowing::scan(reading, own, context, hits);
}

/// Whether decoded text holds instructions of medium severity or more.
fn instructs(text: &str) -> bool {
    let mut hits = Vec::new();
    read_words(&Reading::prose(text), false, "", &CheckContext::default(), &mut hits);
    hits.iter().any(|h| h.severity >= Severity::Medium)
}

/// A string of the definition: its JSON pointer and whether it is an
/// object key (a parameter's name) rather than a value.
struct Text<'a> {
    pointer: String,
    text: &'a str,
    is_key: bool,
}

/// Every string in `value` with its JSON pointer, in document order, and
/// the keys of `properties` objects (parameter names) before their values.
fn collect_strings<'a>(value: &'a Value, pointer: &mut String, in_properties: bool, out: &mut Vec<Text<'a>>) {
    match value {
        Value::String(s) => out.push(Text {
            pointer: pointer.clone(),
            text: s,
            is_key: false,
        }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                collect_strings(item, pointer, false, out);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                if in_properties {
                    out.push(Text {
                        pointer: pointer.clone(),
                        text: k,
                        is_key: true,
                    });
                }
                collect_strings(v, pointer, k == "properties" && !in_properties, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// The description is the longest the server has by far.
fn long_description(text: &str, context: &CheckContext, hits: &mut Vec<Hit>) {
    let chars = text.chars().count();
    let median = context.median_description_len;
    if chars > 500 && chars > median.saturating_mul(4) {
        let reason = "a description far longer than the server's others, where text for the model can hide";
        let hit = Hit::new(Check::LongDescription, Severity::Info, reason, 0, text.len())
            .with_note(format!("{chars} characters; the server's median is {median}"));
        hits.push(hit);
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tests_checks;
