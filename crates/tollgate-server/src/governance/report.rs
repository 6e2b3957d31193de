//! The catalog as operators read it: per route, the gate mode, the sync's
//! state and age, and every definition with its verdict — approved,
//! quarantined, blocked or unlisted — for `GET /catalog` on the admin
//! listener, `/readyz` detail and the metrics.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use serde_json::{Value, json};
use tollgate_catalog::{Kind, Lock, Outcome, Snapshot, judge};

use crate::governance::reload::LockFile;
use crate::route::Route;

/// How many definitions of a route have each outcome.
pub(crate) fn outcome_counts(route: &Route, lock: &Lock) -> [(Outcome, usize); 4] {
    let mut counts = [
        (Outcome::Approved, 0),
        (Outcome::Quarantined, 0),
        (Outcome::Blocked, 0),
        (Outcome::Unlisted, 0),
    ];
    for (_, outcome) in verdicts(route, lock, &route.catalog.snapshot()) {
        if let Some(c) = counts.iter_mut().find(|(o, _)| *o == outcome) {
            c.1 += 1;
        }
    }
    counts
}

/// Every definition the upstream lists or the lock approves, with its
/// outcome (judged as enforce would: the report says what the gate finds,
/// whatever the route's mode).
fn verdicts<'a>(route: &'a Route, lock: &'a Lock, snapshot: &'a Snapshot) -> Vec<((Kind, &'a str), Outcome)> {
    let server = &*route.name;
    let mode = tollgate_catalog::Mode::Enforce;
    let listed = snapshot.definitions.values().filter_map(|d| {
        let v = judge(lock, snapshot, server, d.kind, &d.key, mode)?;
        Some(((d.kind, d.key.as_str()), v.outcome))
    });
    let unlisted = lock
        .of_server(server)
        .filter(|a| snapshot.get(a.kind, &a.key).is_none())
        .map(|a| ((a.kind, a.key.as_str()), Outcome::Unlisted));
    listed.chain(unlisted).collect()
}

/// The sync state of a route: `ok`, `failed` (the last attempt failed) or
/// `pending` (not synced yet).
pub(crate) fn sync_state(route: &Route) -> &'static str {
    let s = route.catalog.status();
    match (s.last_success, &s.last_error) {
        (_, Some(_)) => "failed",
        (Some(_), None) => "ok",
        (None, None) => "pending",
    }
}

/// Seconds since the last good sync.
pub(crate) fn sync_age(route: &Route) -> Option<f64> {
    let last = route.catalog.status().last_success?;
    Some(SystemTime::now().duration_since(last).map_or(0.0, |d| d.as_secs_f64()))
}

/// One route's sync state, for `/readyz` detail.
pub(crate) fn sync_json(route: &Route) -> Value {
    let s = route.catalog.status();
    json!({
        "state": sync_state(route),
        "age_seconds": sync_age(route),
        "last_error": s.last_error,
        "successes": s.successes,
        "failures": s.failures,
        "header_trust_refused": route.catalog.trust_refused(),
    })
}

/// The whole report of `GET /catalog`.
pub(crate) fn catalog_json(routes: &[Arc<Route>], lock: &Lock, file: &LockFile) -> Value {
    let mut servers = serde_json::Map::new();
    for route in routes {
        servers.insert(route.name.to_string(), route_json(route, lock));
    }
    json!({
        "lock": {
            "path": file.path.display().to_string(),
            "approvals": lock.iter().count(),
            "reloads": file.status.reloads.load(Ordering::Relaxed),
            "reload_failures": file.status.failures.load(Ordering::Relaxed),
            "last_reload_ok": file.status.last_ok.load(Ordering::Relaxed),
        },
        "servers": servers,
    })
}

fn route_json(route: &Route, lock: &Lock) -> Value {
    let snapshot = route.catalog.snapshot();
    let mut sections: [(Outcome, Vec<Value>); 4] = [
        (Outcome::Approved, Vec::new()),
        (Outcome::Quarantined, Vec::new()),
        (Outcome::Blocked, Vec::new()),
        (Outcome::Unlisted, Vec::new()),
    ];
    for ((kind, key), outcome) in verdicts(route, lock, &snapshot) {
        let approval = lock.get(&route.name, kind, key);
        let entry = json!({
            "kind": kind.as_str(),
            "name": key,
            "live_revision": snapshot.get(kind, key).map(|d| d.revision.as_str()),
            "approved_revision": approval.map(|a| a.revision.as_str()),
            "approved_by": approval.map(|a| a.approved_by.as_str()),
            "approved_at": approval.map(|a| humantime::format_rfc3339_seconds(a.approved_at).to_string()),
        });
        if let Some((_, list)) = sections.iter_mut().find(|(o, _)| *o == outcome) {
            list.push(entry);
        }
    }
    let mut out = json!({
        "upstream": route.upstream.shown,
        "mode": mode_name(route.catalog.mode),
        "sync": sync_json(route),
        "versions": snapshot.versions,
        "findings": &*route.catalog.status().findings,
    });
    for (outcome, list) in sections {
        out[outcome.as_str()] = Value::from(list);
    }
    out
}

/// The name of a gate mode.
pub(crate) fn mode_name(mode: tollgate_catalog::Mode) -> &'static str {
    match mode {
        tollgate_catalog::Mode::Off => "off",
        tollgate_catalog::Mode::Observe => "observe",
        tollgate_catalog::Mode::Enforce => "enforce",
    }
}
