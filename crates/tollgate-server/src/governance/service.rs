//! The sync service: every route's catalog is synced at start, every
//! `[catalog] sync_interval`, and soon after the upstream announces a
//! change (`notifications/*/list_changed`) or answers a list differently
//! from the snapshot. A failed sync keeps the last good snapshot; its
//! state shows in `/readyz` detail, `/catalog` and the metrics.
//!
//! A new snapshot is compared with the one it replaces: each definition
//! that became quarantined or blocked is logged once, when it changes. A
//! route that trusts headers (`header_trust = "upstream"`) while its
//! upstream does not announce 2026-07-28 has that trust refused: it
//! verifies every body instead, and says so in the log.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tollgate_catalog::{Lock, Mode, Outcome, Snapshot, judge_entry, sync};
use tollgate_config::HeaderTrust;

use crate::governance::findings;
use crate::governance::transport::UpstreamTransport;
use crate::route::Route;

/// The shortest time between two syncs of a route that were asked for.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// When and how long the syncs run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SyncSettings {
    /// Between two scheduled syncs of a route.
    pub(crate) interval: Duration,
    /// Deadline of each message of a sync.
    pub(crate) timeout: Duration,
}

/// Sync every route until `stop` turns true.
/// `peers` are every route of the gateway, synced or not: the poisoning
/// checks look for their names.
pub(crate) fn start(
    routes: Vec<Arc<Route>>,
    peers: &Arc<[Arc<Route>]>,
    settings: SyncSettings,
    stop: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    routes
        .into_iter()
        .map(|route| tokio::spawn(keep_synced(route, peers.clone(), settings, stop.clone())))
        .collect()
}

async fn keep_synced(
    route: Arc<Route>,
    peers: Arc<[Arc<Route>]>,
    settings: SyncSettings,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        sync_once(&route, &peers, settings.timeout).await;
        let woken = tokio::select! {
            () = tokio::time::sleep(settings.interval) => false,
            () = route.catalog.woken() => true,
            _ = stop.wait_for(|s| *s) => return,
        };
        if woken {
            tokio::time::sleep(DEBOUNCE).await;
        }
    }
}

/// Sync one route now; the outcome goes to its status and the log.
pub(crate) async fn sync_once(route: &Route, peers: &[Arc<Route>], timeout: Duration) {
    let started = SystemTime::now();
    route.catalog.update_status(|s| s.last_attempt = Some(started));
    let transport = UpstreamTransport::of(route, timeout);
    match sync(&route.name, &transport).await {
        Ok(snapshot) => adopt(route, peers, snapshot),
        Err(e) => {
            tracing::warn!(route = %route.name, error = %e, "catalog sync failed; the last good catalog stays");
            route.catalog.update_status(|s| {
                s.failures += 1;
                s.last_error = Some(e.to_string());
            });
        }
    }
}

/// Put a freshly synced snapshot in force.
fn adopt(route: &Route, peers: &[Arc<Route>], snapshot: Snapshot) {
    let previous = route.catalog.snapshot();
    let lock = route.shared.approvals.current();
    log_changes(route, &lock, &previous, &snapshot);
    let findings = findings::inspect(route, peers, &previous, &snapshot);
    let refuse = route.trust == HeaderTrust::Upstream && !snapshot.speaks_modern();
    if refuse && !route.catalog.trust_refused() {
        tracing::error!(
            route = %route.name,
            versions = ?snapshot.versions,
            "header_trust = \"upstream\" refused: the upstream does not announce 2026-07-28; every body is verified"
        );
    }
    route.catalog.refuse_trust(refuse);
    route.learn_announced(&snapshot.versions, snapshot.speaks_modern());
    route.catalog.update_status(|s| {
        s.successes += 1;
        s.last_success = Some(snapshot.synced_at);
        s.last_error = None;
        s.findings = findings.into();
    });
    route.catalog.replace(snapshot);
}

/// Log each definition that became quarantined or blocked.
fn log_changes(route: &Route, lock: &Lock, previous: &Snapshot, next: &Snapshot) {
    if route.catalog.mode == Mode::Off {
        return;
    }
    for definition in next.definitions.values() {
        let same = previous
            .get(definition.kind, &definition.key)
            .is_some_and(|p| p.revision == definition.revision);
        if same {
            continue;
        }
        let Some(verdict) = judge_entry(lock, &route.name, definition, route.catalog.mode) else {
            continue;
        };
        match verdict.outcome {
            Outcome::Quarantined => tracing::warn!(
                route = %route.name, kind = %definition.kind, name = %definition.key,
                revision = %definition.revision, "new definition quarantined until approved"
            ),
            Outcome::Blocked => tracing::warn!(
                route = %route.name, kind = %definition.kind, name = %definition.key,
                approved = ?verdict.approval.map(|a| a.revision.as_str()), live = %definition.revision,
                "definition changed since it was approved: blocked until re-approved"
            ),
            Outcome::Approved | Outcome::Unlisted => {}
        }
    }
}

/// Sync the live catalogs of the configured servers, or of `only`, without
/// a running gateway (`tollgate catalog diff` and `approve`): each result
/// in configuration order. A server acting for each user (`user_oauth`,
/// `id_jag`) is synced only when named.
///
/// # Errors
///
/// When an upstream or the credential broker cannot be set up.
pub async fn sync_configured(
    loaded: &tollgate_config::Loaded,
    only: Option<&str>,
) -> Result<Vec<(String, Result<Snapshot, tollgate_catalog::CatalogError>)>, crate::GatewayError> {
    let config = &loaded.config;
    let broker = tollgate_auth::CredentialBroker::new(&crate::settings::broker(loaded))
        .map_err(|e| crate::GatewayError::Auth(e.to_string()))?;
    let mut out = Vec::new();
    for server in config.servers.iter().filter(|s| match only {
        Some(o) => o == s.name.as_str(),
        // A server acting for each user lists per user: Tollgate has no
        // credential of its own to list it with, so only when named.
        None => s.credential.per_user().is_none(),
    }) {
        let name = server.name.as_str();
        let base = loaded.path.parent().unwrap_or(std::path::Path::new("."));
        let upstream = crate::upstream::Upstream::from_config(server, &config.timeouts, 1, base)?;
        let transport = UpstreamTransport {
            name,
            upstream: &upstream,
            broker: (broker.kind(name) != "none").then_some(&broker),
            timeout: config.catalog.sync_timeout,
        };
        out.push((name.to_owned(), sync(name, &transport).await));
    }
    Ok(out)
}
