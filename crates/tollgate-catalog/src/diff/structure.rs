//! The two halves of a changed definition's diff: a word-level diff of its
//! description (with `similar`, Patience, so that a sentence slipped into a
//! paragraph reads as one insertion), and a structural diff of everything
//! else — each key added, removed or changed, named by its JSON pointer.
//! Arrays of plain values (`required`, `enum`) compare as sets, so a new
//! required property is one addition, not a shifted list.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use similar::{Algorithm, ChangeTag, TextDiff};

/// What happened to a run of words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WordOp {
    /// In both.
    Equal,
    /// Only in the approved text.
    Delete,
    /// Only in the live text.
    Insert,
}

/// A run of words (with the white space between them) of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WordChange {
    /// Kept, removed or added.
    pub op: WordOp,
    /// The words.
    pub text: String,
}

/// What happened at one JSON pointer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// Only in the live definition.
    Added {
        /// The live value.
        value: Value,
    },
    /// Only in the approved definition.
    Removed {
        /// The approved value.
        value: Value,
    },
    /// In both, different.
    Changed {
        /// The approved value.
        from: Value,
        /// The live value.
        to: Value,
    },
}

/// One difference outside the description.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// Where, e.g. `/inputSchema/properties/cc` or `/annotations/readOnlyHint`.
    pub pointer: String,
    /// What happened there.
    #[serde(flatten)]
    pub change: Change,
}

/// The word-level diff from `old` to `new`.
pub(super) fn words(old: &str, new: &str) -> Vec<WordChange> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(Duration::from_secs(1))
        .diff_words(old, new);
    let mut out: Vec<WordChange> = Vec::new();
    for change in diff.iter_all_changes() {
        let op = match change.tag() {
            ChangeTag::Equal => WordOp::Equal,
            ChangeTag::Delete => WordOp::Delete,
            ChangeTag::Insert => WordOp::Insert,
        };
        match out.last_mut() {
            Some(last) if last.op == op => last.text.push_str(change.value()),
            _ => out.push(WordChange {
                op,
                text: change.value().to_owned(),
            }),
        }
    }
    out
}

/// Every difference between the approved and live entries, leaving out the
/// top-level keys in `skip`.
pub(super) fn fields(approved: &Value, live: &Value, skip: &[&str]) -> Vec<FieldChange> {
    let mut out = Vec::new();
    match (approved, live) {
        (Value::Object(a), Value::Object(b)) => {
            let keep = |m: &Map<String, Value>| {
                m.iter()
                    .filter(|(k, _)| !skip.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Map<_, _>>()
            };
            compare(
                &Value::Object(keep(a)),
                &Value::Object(keep(b)),
                &mut String::new(),
                &mut out,
            );
        }
        _ => compare(approved, live, &mut String::new(), &mut out),
    }
    out
}

fn compare(old: &Value, new: &Value, pointer: &mut String, out: &mut Vec<FieldChange>) {
    match (old, new) {
        _ if old == new => {}
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                one(a.get(k), b.get(k), pointer, out);
                pointer.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) if is_plain(a) && is_plain(b) => sets(a, b, pointer, out),
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                one(a.get(i), b.get(i), pointer, out);
                pointer.truncate(len);
            }
        }
        _ => push(
            pointer,
            Change::Changed {
                from: old.clone(),
                to: new.clone(),
            },
            out,
        ),
    }
}

fn one(old: Option<&Value>, new: Option<&Value>, pointer: &mut String, out: &mut Vec<FieldChange>) {
    match (old, new) {
        (Some(a), Some(b)) => compare(a, b, pointer, out),
        (Some(a), None) => push(pointer, Change::Removed { value: a.clone() }, out),
        (None, Some(b)) => push(pointer, Change::Added { value: b.clone() }, out),
        (None, None) => {}
    }
}

/// Arrays of strings, numbers, booleans and nulls, compared as sets: the
/// removed values at their approved index, the added ones at their live
/// index; the same values in another order are one change of the array.
fn sets(a: &[Value], b: &[Value], pointer: &str, out: &mut Vec<FieldChange>) {
    let before = out.len();
    for (i, v) in a.iter().enumerate().filter(|(_, v)| !b.contains(v)) {
        push(&format!("{pointer}/{i}"), Change::Removed { value: v.clone() }, out);
    }
    for (i, v) in b.iter().enumerate().filter(|(_, v)| !a.contains(v)) {
        push(&format!("{pointer}/{i}"), Change::Added { value: v.clone() }, out);
    }
    if out.len() == before {
        let change = Change::Changed {
            from: Value::Array(a.to_vec()),
            to: Value::Array(b.to_vec()),
        };
        push(pointer, change, out);
    }
}

fn is_plain(items: &[Value]) -> bool {
    items.iter().all(|v| !(v.is_array() || v.is_object()))
}

fn push(pointer: &str, change: Change, out: &mut Vec<FieldChange>) {
    out.push(FieldChange {
        pointer: pointer.to_owned(),
        change,
    });
}
