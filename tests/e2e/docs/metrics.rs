//! Metric names in the docs: each is one of `docs/metrics.md`'s metrics,
//! a histogram's series, or one of their labels.

use std::collections::{BTreeMap, BTreeSet};

use tollgate_e2e::repo_root;

use super::{exempt, pages};

/// What docs/metrics.md's metric tables list.
#[derive(Default)]
pub(super) struct MetricDocs {
    names: BTreeSet<String>,
    histograms: BTreeSet<String>,
    labels: BTreeSet<String>,
    /// Old names of the "Renamed in this release" table (`| old name |
    /// new name |`), each with the cell naming what replaced it.
    renamed: BTreeMap<String, String>,
}

/// The rows of the tables whose first header cell is `metric`.
pub(super) fn metric_docs(doc: &str) -> MetricDocs {
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
pub(super) fn metric_like(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("tollgate_") || w.starts_with("mcp_"))
        .map(|w| w.trim_end_matches('_').to_owned())
        .collect()
}

/// The crates of the workspace, as Rust names them (`tollgate_server`).
pub(super) fn crate_names() -> BTreeSet<String> {
    std::fs::read_dir(repo_root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap().replace('-', "_"))
        .collect()
}

/// Why `name` is not a documented metric, if it is not.
pub(super) fn unknown_metric(name: &str, docs: &MetricDocs, crates: &BTreeSet<String>) -> bool {
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
