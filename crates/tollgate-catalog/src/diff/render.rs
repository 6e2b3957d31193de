//! [`CatalogDiff`] as plain text for a terminal or a pull request: a count
//! line, then one block per definition — new, changed, removed, renamed —
//! with its description diff (`[-removed-]{+added+}`), its field changes
//! and its poisoning findings (`!`). No colour, and invisible characters
//! written `<U+XXXX>`, so that what the model would read is what the
//! reviewer sees.

use std::fmt::Write as _;

use serde_json::Value;

use super::{CatalogDiff, Change, FieldChange, WordChange, WordOp};
use crate::poison::{Finding, printable_text};

const INDENT: &str = "    ";
/// Longest JSON value shown in a field change, in characters.
const VALUE_CHARS: usize = 160;

pub(super) fn text(d: &CatalogDiff) -> String {
    let mut out = String::new();
    if d.is_empty() {
        let _ = writeln!(out, "server {:?}: no difference from the lock", d.server);
        return out;
    }
    let counts = [d.added.len(), d.changed.len(), d.removed.len(), d.renamed.len()];
    let [new, changed, removed, renamed] = counts;
    let _ = writeln!(
        out,
        "server {:?}: {new} new, {changed} changed, {removed} removed, {renamed} renamed",
        d.server
    );
    for a in &d.added {
        let _ = writeln!(out, "\nnew {} {:?} ({})", a.kind, a.key, a.revision);
        if let Some(text) = a.definition.get("description").and_then(Value::as_str) {
            block(&mut out, "description: ", text);
        }
        findings(&mut out, &a.findings);
    }
    for c in &d.changed {
        let _ = writeln!(
            out,
            "\nchanged {} {:?} (approved {}, live {})",
            c.kind, c.key, c.approved, c.live
        );
        if let Some(words) = &c.description {
            block(&mut out, "description: ", &word_diff(words));
        }
        c.fields.iter().for_each(|f| field(&mut out, f));
        findings(&mut out, &c.findings);
    }
    for r in &d.removed {
        let _ = writeln!(
            out,
            "\nremoved {} {:?} (approved {}, by {})",
            r.kind, r.key, r.revision, r.approved_by
        );
    }
    for r in &d.renamed {
        let _ = writeln!(
            out,
            "\nrenamed {} {:?} → {:?} (content unchanged; approved {}, live {})",
            r.kind, r.from, r.to, r.approved, r.live
        );
        findings(&mut out, &r.findings);
    }
    out
}

/// `label` and `text`, each line of the text indented under the first.
fn block(out: &mut String, label: &str, text: &str) {
    let pad = " ".repeat(label.chars().count());
    for (i, line) in text.split('\n').enumerate() {
        let lead = if i == 0 { label } else { pad.as_str() };
        let _ = writeln!(out, "{INDENT}{lead}{}", printable_text(line));
    }
}

/// The description diff as one text: kept words as they are, removed ones
/// in `[-…-]`, added ones in `{+…+}`.
fn word_diff(words: &[WordChange]) -> String {
    let mut text = String::new();
    for w in words {
        match w.op {
            WordOp::Equal => text.push_str(&w.text),
            WordOp::Delete => {
                let _ = write!(text, "[-{}-]", w.text);
            }
            WordOp::Insert => {
                let _ = write!(text, "{{+{}+}}", w.text);
            }
        }
    }
    text
}

fn field(out: &mut String, f: &FieldChange) {
    let pointer = if f.pointer.is_empty() { "/" } else { &f.pointer };
    let what = match &f.change {
        Change::Added { value } => format!("added {}", value_text(value)),
        Change::Removed { value } => format!("removed {}", value_text(value)),
        Change::Changed { from, to } => format!("{} → {}", value_text(from), value_text(to)),
    };
    let _ = writeln!(out, "{INDENT}{}: {what}", printable_text(pointer));
}

fn value_text(value: &Value) -> String {
    let json = printable_text(&value.to_string());
    match json.char_indices().nth(VALUE_CHARS) {
        Some((cut, _)) => format!("{}…", &json[..cut]),
        None => json,
    }
}

fn findings(out: &mut String, findings: &[Finding]) {
    for f in findings {
        let (start, end) = f.span;
        let _ = writeln!(out, "{INDENT}! {} {} [{start}..{end}]: {}", f.check, f.field, f.excerpt);
    }
}
