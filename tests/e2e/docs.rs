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

use tollgate_e2e::repo_root;

#[path = "docs/flags.rs"]
mod flags;
#[path = "docs/keys.rs"]
mod keys;
#[path = "docs/metrics.rs"]
mod metrics;

use flags::{invocations, long_options};
use keys::{config_reference, has_key, schema};
use metrics::{crate_names, metric_docs, metric_like, unknown_metric};

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
