//! Keeps the documentation honest: every configuration key in the schema is
//! documented, and every configuration shipped or shown in the docs loads.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use tollgate_config::{Environment, load_str, schema};

struct DocEnv;

impl Environment for DocEnv {
    fn var(&self, _: &str) -> Option<String> {
        // Any referenced key: 32 bytes, base64.
        Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into())
    }
    fn read_file(&self, _: &Path) -> Result<Vec<u8>, String> {
        Ok(b"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".to_vec())
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                out.extend(props.keys().cloned());
            }
            m.values().for_each(|v| keys(v, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

#[test]
fn every_schema_key_is_documented() {
    let doc = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let mut all = Vec::new();
    keys(&schema(), &mut all);
    assert!(all.len() > 20, "schema walk found too few keys: {all:?}");
    for key in all {
        let documented = [format!("`{key}`"), format!("`[{key}]`"), format!("`[[{key}]]`")]
            .iter()
            .any(|form| doc.contains(form.as_str()));
        assert!(documented, "docs/configuration.md does not document `{key}`");
    }
}

fn toml_blocks(text: &str) -> Vec<String> {
    text.split("```toml")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn shipped_and_documented_configs_load() {
    let mut checked = 0;
    for dir in ["examples", "deploy", "docs"] {
        for entry in walk(&root().join(dir)) {
            let read = || std::fs::read_to_string(&entry).unwrap();
            let snippets = match entry.extension().and_then(|e| e.to_str()) {
                Some("toml") => vec![read()],
                Some("md") => toml_blocks(&read())
                    .into_iter()
                    .filter(|b| b.contains("[listen]"))
                    .collect(),
                _ => continue,
            };
            for s in snippets {
                if let Err(e) = load_str(&entry, &s, &DocEnv) {
                    panic!("{} does not load:\n{e}", entry.display());
                }
                checked += 1;
            }
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for s in toml_blocks(&readme).into_iter().filter(|b| b.contains("[listen]")) {
        load_str(Path::new("README.md"), &s, &DocEnv).unwrap_or_else(|e| panic!("README.md example:\n{e}"));
        checked += 1;
    }
    assert!(checked >= 3, "found only {checked} configurations to check");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
