//! Configuration keys in the docs: each `[section] key` code span and
//! every key of a TOML block that configures the gateway is in `tollgate
//! schema`.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;
use tollgate_e2e::children::tollgate_bin;

use super::{exempt, fenced, pages, spans};

/// `tollgate schema`.
pub(super) fn schema() -> Value {
    let out = Command::new(tollgate_bin()).arg("schema").output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `node` with its `$ref` followed.
fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    while let Some(reference) = node.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap();
        node = &root["$defs"][name];
    }
    node
}

/// Every schema a value under `node` may follow: through `$ref`, `anyOf`,
/// `oneOf`, `allOf` and array items.
fn alternatives<'a>(root: &'a Value, node: &'a Value, out: &mut Vec<&'a Value>) {
    let node = resolve(root, node);
    out.push(node);
    for key in ["anyOf", "oneOf", "allOf"] {
        for n in node.get(key).and_then(Value::as_array).into_iter().flatten() {
            alternatives(root, n, out);
        }
    }
    if let Some(items) = node.get("items").filter(|i| i.is_object()) {
        alternatives(root, items, out);
    }
}

/// Whether the configuration has the key `path` (a table's keys, then
/// its keys'…); a free-form value takes any key below it.
pub(super) fn has_key(root: &Value, path: &[&str]) -> bool {
    let mut candidates = vec![root];
    for part in path {
        let mut next = Vec::new();
        for candidate in candidates {
            let mut all = Vec::new();
            alternatives(root, candidate, &mut all);
            for node in all {
                if node == &Value::Bool(true) || node.as_object().is_some_and(serde_json::Map::is_empty) {
                    return true;
                }
                if let Some(property) = node.get("properties").and_then(|p| p.get(*part)) {
                    next.push(property);
                }
                if let Some(map) = node.get("additionalProperties").filter(|a| a.is_object()) {
                    next.push(map);
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        candidates = next;
    }
    true
}

/// A code span that names a configuration key: `[section]`,
/// `[[section]]`, either followed by a key (`[store] replica`, `[audit]
/// enabled = false`); the section and key as dotted paths.
pub(super) fn config_reference(span: &str) -> Option<(String, Option<String>)> {
    let is_name = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
    };
    let rest = span.strip_prefix('[')?;
    let rest = rest.strip_prefix('[').unwrap_or(rest);
    let (section, rest) = rest.split_once(']')?;
    let rest = rest.strip_prefix(']').unwrap_or(rest);
    if !is_name(section) {
        return None;
    }
    let rest = rest.trim();
    if rest.is_empty() {
        return Some((section.to_owned(), None));
    }
    let key = rest.split([' ', '=']).next().unwrap();
    let after = rest[key.len()..].trim_start();
    (is_name(key) && (after.is_empty() || after.starts_with('='))).then(|| (section.to_owned(), Some(key.to_owned())))
}

/// Every key path of a TOML table, tables of arrays included.
fn toml_keys(table: &toml::Table, prefix: &[String], out: &mut BTreeSet<Vec<String>>) {
    for (key, value) in table {
        let mut path = prefix.to_vec();
        path.push(key.clone());
        match value {
            toml::Value::Table(t) => toml_keys(t, &path, out),
            toml::Value::Array(items) => {
                for item in items {
                    if let toml::Value::Table(t) = item {
                        toml_keys(t, &path, out);
                    }
                }
            }
            _ => {}
        }
        out.insert(path);
    }
}

#[test]
fn every_configuration_key_the_docs_name_is_in_the_schema() {
    let root = schema();
    let sections: BTreeSet<String> = root["properties"].as_object().unwrap().keys().cloned().collect();
    let (mut references, mut blocks) = (0, 0);
    let mut wrong = BTreeSet::new();
    for (page, text) in pages() {
        for span in spans(&text) {
            let Some((section, key)) = config_reference(&span) else {
                continue;
            };
            references += 1;
            let mut path: Vec<&str> = section.split('.').collect();
            path.extend(key.iter().flat_map(|k| k.split('.')));
            if !has_key(&root, &path) && !exempt(span.as_str()) {
                wrong.insert(format!("{page}: `{span}`"));
            }
        }
        for (tag, body) in fenced(&text) {
            if tag != "toml" {
                continue;
            }
            let table: toml::Table =
                toml::from_str(&body).unwrap_or_else(|e| panic!("{page}: a TOML block does not parse: {e}\n{body}"));
            if !table.keys().any(|k| sections.contains(k)) {
                continue; // a fragment, a catalog.lock, a policy test file
            }
            blocks += 1;
            let mut keys = BTreeSet::new();
            toml_keys(&table, &[], &mut keys);
            for key in keys {
                let path: Vec<&str> = key.iter().map(String::as_str).collect();
                if !has_key(&root, &path) {
                    wrong.insert(format!("{page}: `{}` in a TOML block", key.join(".")));
                }
            }
        }
    }
    assert!(references > 100, "only {references} `[section] key` references found");
    assert!(blocks > 30, "only {blocks} configuration blocks found");
    assert!(
        wrong.is_empty(),
        "configuration keys the binary does not have (`tollgate schema`):\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}
