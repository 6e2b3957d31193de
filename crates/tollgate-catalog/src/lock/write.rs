//! Printing a [`Lock`] as `catalog.lock` text: one `[[approval]]` table per
//! approval in server, kind and key order, keys always in the same order,
//! the definition as pretty-printed JSON with sorted keys in a multi-line
//! literal string. The same lock always prints the same text.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{Approval, Lock};

/// The comment at the top of every lock file.
pub(super) const HEADER: &str = "\
# catalog.lock — approved MCP definitions, one [[approval]] per server and definition.
# Written by `tollgate catalog approve`; review changes like code.
# kind: tool | prompt | resource | resource_template; name: the name, URI or URI template;
# approved_at: RFC 3339, UTC; definition: the approved entry as JSON, keys sorted.
";

pub(super) fn to_toml(lock: &Lock) -> String {
    let mut out = String::from(HEADER);
    for approval in lock.iter() {
        out.push('\n');
        entry(&mut out, approval);
    }
    out
}

fn entry(out: &mut String, a: &Approval) {
    out.push_str("[[approval]]\n");
    let at = humantime::format_rfc3339(a.approved_at).to_string();
    for (key, value) in [
        ("server", a.server.as_str()),
        ("kind", a.kind.as_str()),
        ("name", a.key.as_str()),
        ("revision", a.revision.as_str()),
        ("approved_by", a.approved_by.as_str()),
        ("approved_at", at.as_str()),
    ] {
        let _ = writeln!(out, "{key} = {}", basic_string(value));
    }
    if let Some(note) = &a.note {
        let _ = writeln!(out, "note = {}", basic_string(note));
    }
    let _ = write!(out, "definition = '''\n{}\n'''\n", definition_json(&a.definition));
}

/// A TOML basic string (`"…"`), escaping what TOML requires.
fn basic_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The definition as pretty JSON with sorted keys, made safe for a TOML
/// multi-line literal string: such a string cannot hold `'''` or DEL, and
/// both can only occur inside JSON strings, where `\u0027` and `\u007f`
/// mean the same.
pub(super) fn definition_json(definition: &Value) -> String {
    let pretty = serde_json::to_string_pretty(&sorted(definition)).unwrap_or_default();
    let mut text = pretty.replace('\u{7f}', "\\u007f");
    while text.contains("'''") {
        text = text.replace("'''", "''\\u0027");
    }
    text
}

/// `value` with every object's keys inserted in order (so the output is
/// sorted whether or not serde_json preserves insertion order).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                if let Some(v) = map.get(k) {
                    out.insert(k.clone(), sorted(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
