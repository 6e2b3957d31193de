//! The docs name only what the binary has: every metric, CLI flag and
//! configuration key that `docs/*.md` or the README mentions exists.
//!
//! - **Metrics**: every `tollgate_…` or `mcp_…` name is a metric of
//!   `docs/metrics.md`'s tables (themselves checked against the registered
//!   collectors by `tollgate-server`'s `doc_sync` test), a histogram's
//!   `_bucket`, `_sum` or `_count` series, or one of their labels; Rust
//!   crate names (`RUST_LOG=tollgate_server=debug`) are not metrics.
//! - **CLI flags**: in code blocks and code spans, a `--flag` after
//!   `tollgate SUBCOMMAND…` is in that subcommand's `--help`, as the built
//!   binary prints it (`a|b` alternatives: in each).
//! - **Configuration keys**: a code span that is `[section]`, `[section]
//!   key` or `[[section]] key` names a table and key of the binary's
//!   `tollgate schema`; so does every key of a TOML code block that
//!   configures the gateway (one whose top-level keys include a
//!   configuration section; fragments and other files are left out).
//!
//! `EXEMPT` lists names deliberately not the binary's, each with why.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;
use tollgate_e2e::children::tollgate_bin;
use tollgate_e2e::repo_root;

/// Names the docs use that are deliberately not the binary's.
const EXEMPT: &[(&str, &str)] = &[
    (
        "[[approval]]",
        "a table of catalog.lock (docs/catalog.md), not of the configuration",
    ),
    ("tollgate_e2e", "the black-box test crate, named as a Rust crate"),
    (
        "tollgate_catalog_approvals",
        "the PostgreSQL channel approvals are announced on (LISTEN/NOTIFY), not a metric",
    ),
];

fn exempt(name: &str) -> bool {
    EXEMPT.iter().any(|(n, _)| *n == name)
}

/// Every page checked: `docs/*.md` and the README, by name.
fn pages() -> Vec<(String, String)> {
    let root = repo_root();
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    names.push("README.md".into());
    assert!(names.len() > 10, "too few pages: {names:?}");
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// A page's fenced code blocks, each with its language tag.
fn fenced(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(tag) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(block) => out.push(block),
                None => open = Some((tag.trim().to_owned(), String::new())),
            }
            continue;
        }
        if let Some((_, body)) = &mut open {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// A page's inline code spans, outside fenced blocks.
fn spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            out.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------

/// What docs/metrics.md's metric tables list.
#[derive(Default)]
struct MetricDocs {
    names: BTreeSet<String>,
    histograms: BTreeSet<String>,
    labels: BTreeSet<String>,
    /// Old names of the "Renamed in this release" table (`| old name |
    /// new name |`), each with the cell naming what replaced it.
    renamed: BTreeMap<String, String>,
}

/// The rows of the tables whose first header cell is `metric`.
fn metric_docs(doc: &str) -> MetricDocs {
    let mut out = MetricDocs::default();
    let mut columns: Option<(usize, usize)> = None;
    let mut renames = false;
    for line in doc.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            columns = None;
            renames = false;
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.first() == Some(&"old name") {
            renames = true;
            continue;
        }
        if renames {
            if let (Some(old), Some(new)) = (cells.first(), cells.get(1))
                && !old.starts_with('-')
            {
                out.renamed.insert(old.trim_matches('`').to_owned(), (*new).to_owned());
            }
            continue;
        }
        if cells.first() == Some(&"metric") {
            let at = |name: &str| cells.iter().position(|c| *c == name).unwrap();
            columns = Some((at("type"), at("labels")));
            continue;
        }
        let Some((kind, labels)) = columns else { continue };
        if cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':'))) {
            continue;
        }
        let name = cells[0].trim_matches('`').to_owned();
        if cells[kind] == "histogram" {
            out.histograms.insert(name.clone());
        }
        out.labels
            .extend(cells[labels].split('`').skip(1).step_by(2).map(str::to_owned));
        out.names.insert(name);
    }
    out
}

/// Words of `text` that look like metric names: lowercase runs of
/// `[a-z0-9_]` starting `tollgate_` or `mcp_`.
fn metric_like(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("tollgate_") || w.starts_with("mcp_"))
        .map(|w| w.trim_end_matches('_').to_owned())
        .collect()
}

/// The crates of the workspace, as Rust names them (`tollgate_server`).
fn crate_names() -> BTreeSet<String> {
    std::fs::read_dir(repo_root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap().replace('-', "_"))
        .collect()
}

/// Why `name` is not a documented metric, if it is not.
fn unknown_metric(name: &str, docs: &MetricDocs, crates: &BTreeSet<String>) -> bool {
    let series_of_histogram = ["_bucket", "_sum", "_count"]
        .iter()
        .filter_map(|s| name.strip_suffix(s))
        .any(|base| docs.histograms.contains(base));
    !(docs.names.contains(name)
        || series_of_histogram
        || docs.labels.contains(name)
        || crates.contains(name)
        || exempt(name))
}

#[test]
fn every_metric_the_docs_name_is_registered() {
    let docs = metric_docs(&std::fs::read_to_string(repo_root().join("docs/metrics.md")).unwrap());
    assert!(docs.names.len() > 40, "too few metrics parsed: {}", docs.names.len());
    let crates = crate_names();
    let mut wrong = Vec::new();
    // The old names of renamed metrics, on docs/metrics.md's list only;
    // each replaced by metrics that exist.
    assert!(!docs.renamed.is_empty(), "the renamed list is parsed");
    for (old, new) in &docs.renamed {
        for name in metric_like(new) {
            if unknown_metric(&name, &docs, &crates) {
                wrong.push(format!("docs/metrics.md: `{old}` renamed to `{name}`"));
            }
        }
    }
    for (page, text) in pages() {
        for name in metric_like(&text) {
            let listed_rename = page == "docs/metrics.md" && docs.renamed.contains_key(&name);
            if unknown_metric(&name, &docs, &crates) && !listed_rename {
                wrong.push(format!("{page}: `{name}`"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "metrics the gateway does not register (docs/metrics.md lists those it does):\n{}",
        wrong.join("\n")
    );
}

// ---------------------------------------------------------------------------
// CLI flags
// ---------------------------------------------------------------------------

/// `tollgate PATH… --help`, run once per path.
fn help(path: &[String]) -> String {
    static CACHE: Mutex<BTreeMap<Vec<String>, String>> = Mutex::new(BTreeMap::new());
    let mut cache = CACHE.lock().unwrap();
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = Command::new(tollgate_bin()).args(path).arg("--help").output().unwrap();
            assert!(out.status.success(), "tollgate {path:?} --help failed");
            String::from_utf8(out.stdout).unwrap()
        })
        .clone()
}

/// The subcommands `tollgate PATH…` takes.
fn subcommands(path: &[String]) -> BTreeSet<String> {
    let text = help(path);
    let Some((_, commands)) = text.split_once("Commands:\n") else {
        return BTreeSet::new();
    };
    commands
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The long options of `tollgate PATH…`.
fn long_options(path: &[String]) -> BTreeSet<String> {
    let text = help(path);
    let options = text.split_once("Options:\n").map_or("", |(_, o)| o);
    options
        .split_whitespace()
        .filter_map(flag_of)
        .chain(["--help".to_owned()])
        .collect()
}

/// `--name` at the start of `token`, without `=value`, `[…]` or
/// punctuation after it.
fn flag_of(token: &str) -> Option<String> {
    let rest = token.strip_prefix("--")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect();
    let name = name.trim_end_matches('-');
    (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_lowercase())).then(|| format!("--{name}"))
}

/// Command lines of a page: code block lines (continuations joined) and
/// code spans.
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (_, body) in fenced(text) {
        let mut joined = String::new();
        for line in body.lines() {
            match line.trim_end().strip_suffix('\\') {
                Some(head) => {
                    joined.push_str(head);
                    joined.push(' ');
                }
                None => {
                    joined.push_str(line);
                    out.push(std::mem::take(&mut joined));
                }
            }
        }
    }
    out.extend(spans(text));
    out
}

/// Every `(tollgate SUBCOMMAND…, --flag)` a command line uses, a
/// `a|b|c` subcommand giving each alternative.
fn invocations(line: &str) -> Vec<(Vec<String>, String)> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (at, token) in tokens.iter().enumerate() {
        if !(*token == "tollgate" || token.ends_with("/tollgate")) {
            continue;
        }
        let mut paths: Vec<Vec<String>> = vec![Vec::new()];
        let mut next = at + 1;
        while let Some(word) = tokens.get(next) {
            let alternatives: Vec<&str> = word.split('|').collect();
            let known = paths
                .iter()
                .all(|p| alternatives.iter().all(|a| subcommands(p).contains(*a)));
            if !known {
                break;
            }
            paths = paths
                .iter()
                .flat_map(|p| {
                    alternatives.iter().map(move |a| {
                        let mut longer = p.clone();
                        longer.push((*a).to_owned());
                        longer
                    })
                })
                .collect();
            next += 1;
        }
        if paths[0].is_empty() {
            continue;
        }
        for word in &tokens[next..] {
            if ["|", "||", "&&", ";"].contains(word) || word.starts_with('#') || word.starts_with('>') {
                break;
            }
            if let Some(flag) = flag_of(word) {
                out.extend(paths.iter().map(|p| (p.clone(), flag.clone())));
            }
        }
    }
    out
}

#[test]
fn every_flag_the_docs_give_a_subcommand_is_in_its_help() {
    let mut checked = 0;
    let mut wrong = BTreeSet::new();
    for (page, text) in pages() {
        for line in command_lines(&text) {
            for (path, flag) in invocations(&line) {
                checked += 1;
                if !long_options(&path).contains(&flag) {
                    wrong.insert(format!("{page}: tollgate {} {flag}", path.join(" ")));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} flags found in the docs");
    assert!(
        wrong.is_empty(),
        "flags the subcommand does not take (`tollgate SUBCOMMAND --help`):\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

// ---------------------------------------------------------------------------
// Configuration keys
// ---------------------------------------------------------------------------

/// `tollgate schema`.
fn schema() -> Value {
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
fn has_key(root: &Value, path: &[&str]) -> bool {
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
fn config_reference(span: &str) -> Option<(String, Option<String>)> {
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

/// Each check finds a wrong name of its kind, and passes its right one.
#[test]
fn the_checks_catch_a_wrong_name_of_each_kind() {
    let docs = metric_docs(
        "| metric | type | labels | label values | meaning |\n| --- | --- | --- | --- | --- |\n\
         | `tollgate_x_seconds` | histogram | `route` | a | m |\n",
    );
    let crates = crate_names();
    let unknown: Vec<String> = metric_like(
        "`tollgate_x_seconds_bucket`, tollgate_x_seconds_sum, RUST_LOG=tollgate_server=debug, \
         TOLLGATE_ADMIN_TOKEN, `tollgate_x_total`, tollgate_y",
    )
    .into_iter()
    .filter(|n| unknown_metric(n, &docs, &crates))
    .collect();
    assert_eq!(unknown, ["tollgate_x_total", "tollgate_y"]);

    let found = invocations("$ tollgate audit verify|query --since 7d --no-such-flag=1 | grep --count x");
    let flags: Vec<String> = found.iter().map(|(p, f)| format!("{} {f}", p.join(" "))).collect();
    assert_eq!(
        flags,
        [
            "audit verify --since",
            "audit query --since",
            "audit verify --no-such-flag",
            "audit query --no-such-flag"
        ]
    );
    assert!(long_options(&found[1].0).contains("--since"));
    assert!(!long_options(&found[3].0).contains("--no-such-flag"));
    assert!(invocations("helm install tollgate deploy/helm/tollgate --namespace mcp").is_empty());

    let root = schema();
    for (span, expected) in [
        ("[store] replica", Some(true)),
        ("[audit] enabled = false", Some(true)),
        ("[[servers]] url", Some(true)),
        ("[limits.redis] url", Some(true)),
        ("[store] postgres.pool_size", Some(true)),
        ("[store] replicas", Some(false)),
        ("[stores]", Some(false)),
        ("[redacted", None),
        ("\"[redacted]\"", None),
        ("[rows] is a list", None),
    ] {
        let found = config_reference(span).map(|(section, key)| {
            let mut path: Vec<&str> = section.split('.').collect();
            path.extend(key.iter().flat_map(|k| k.split('.')));
            has_key(&root, &path)
        });
        assert_eq!(found, expected, "{span}");
    }
}
