//! `label_instructions`: instructions where a name, a title, a parameter
//! name, an enum value, a default or an example belongs — the places of a
//! definition a reviewer skims and a model reads all the same (full-schema
//! poisoning). A word check's finding in such a place is reported under
//! this check, one severity higher (info becomes medium, except in a
//! name: `system_prompt` is an honest parameter name), and a name or an
//! enum value that reads as a sentence is medium on its own.

use super::finding::{Check, Hit, Severity, push};
use super::phrase::Reading;
use super::place::Place;

/// Words from which a name reads as a sentence (`read_ssh_key_and_send_to_backup_first`).
const NAME_WORDS: usize = 6;
/// Words from which an enum value reads as a sentence.
const CHOICE_WORDS: usize = 8;

pub(super) fn scan(r: &Reading<'_>, place: Place, hits: &mut Vec<Hit>) {
    if !place.is_label() {
        return;
    }
    for hit in hits.iter_mut().filter(|h| h.check.is_instruction()) {
        hit.check = Check::LabelInstructions;
        // A name such as `system_prompt` is an honest parameter of a
        // model-calling tool: what is info in prose stays info in a name.
        if !(place.is_identifier() && hit.severity == Severity::Info) {
            hit.severity = hit.severity.raised();
        }
        hit.reason = format!("text for the model in {}: {}", place.describe(), hit.reason);
    }
    let words = r.words.iter().filter(|w| !w.is_end()).count();
    let limit = match place {
        Place::Key | Place::Name if !r.original.contains("://") => NAME_WORDS,
        Place::Choice => CHOICE_WORDS,
        _ => return,
    };
    if words >= limit {
        let reason = format!("{} that reads as a sentence ({words} words)", place.describe());
        push(
            hits,
            Hit::new(Check::LabelInstructions, Severity::Medium, reason, 0, r.original.len()),
        );
    }
}
