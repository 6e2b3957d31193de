//! Poisoning checks on each synced catalog: every definition a sync
//! brings is run through [`tollgate_catalog::check`] with what the gateway
//! knows around it (the route's other definitions, the other routes and
//! their tools). Findings are warnings for the reviewer, never a verdict:
//! they are logged once per new or changed definition (info ones at
//! debug), counted per check in
//! `tollgate_catalog_poisoning_findings`, and listed in `GET /catalog` and
//! `tollgate catalog diff`. Whether a definition may be called stays the
//! approval's business.

use std::sync::Arc;

use tollgate_catalog::{CheckContext, Finding, Kind, Severity, Snapshot, check};

use crate::route::Route;

/// The findings of `next`, the snapshot `route` is about to adopt; those of
/// definitions that are new or changed since `previous` are logged.
pub(crate) fn inspect(route: &Route, peers: &[Arc<Route>], previous: &Snapshot, next: &Snapshot) -> Vec<Finding> {
    let others: Vec<String> = peers
        .iter()
        .filter(|p| p.name != route.name)
        .map(|p| p.name.to_string())
        .collect();
    let other_tools: Vec<String> = peers
        .iter()
        .filter(|p| p.name != route.name)
        .flat_map(|p| tool_names(&p.catalog.snapshot()))
        .collect();
    let context = CheckContext::for_snapshot(next, &others).with_other_tools(other_tools);
    let mut findings = Vec::new();
    for definition in next.definitions.values() {
        let found = check(definition, &context);
        let seen = previous
            .get(definition.kind, &definition.key)
            .is_some_and(|p| p.revision == definition.revision);
        if !seen {
            found.iter().for_each(|f| log(route, f));
        }
        findings.extend(found);
    }
    findings
}

/// Log one finding of a new or changed definition: high and medium ones
/// as warnings for the reviewer, info ones (common in honest definitions:
/// a link, a long description) at debug, so that the log does not teach
/// reviewers to skip the warnings.
fn log(route: &Route, f: &Finding) {
    if f.severity == Severity::Info {
        tracing::debug!(
            route = %route.name, kind = %f.kind, name = %f.key, check = %f.check,
            field = %f.field, reason = %f.reason, "catalog definition note"
        );
        return;
    }
    tracing::warn!(
        route = %route.name, kind = %f.kind, name = %f.key, check = %f.check,
        severity = f.severity.as_str(), field = %f.field, reason = %f.reason, excerpt = %f.excerpt,
        "catalog definition looks poisoned; review it before approving"
    );
}

/// The tool names a snapshot lists.
fn tool_names(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .definitions
        .values()
        .filter(|d| d.kind == Kind::Tool)
        .map(|d| d.key.clone())
        .collect()
}

/// How many findings each check raised, every check named (zero included,
/// so a gauge falls back when a definition is fixed).
pub(crate) fn counts(findings: &[Finding]) -> [(&'static str, usize); tollgate_catalog::Check::ALL.len()] {
    tollgate_catalog::Check::ALL.map(|c| (c.as_str(), findings.iter().filter(|f| f.check == c).count()))
}
