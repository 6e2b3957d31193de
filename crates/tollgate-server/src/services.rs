//! What runs beside the listeners: the audit writer (opened at start,
//! closed after the drain so the last records reach the disk), the trace
//! exporter (flushed after the drain), the policy directory watcher, the
//! catalog sync of every route and the lock's reload, and the SIGHUP
//! handler that reloads the policies and the lock.

use std::sync::Arc;

use prometheus::{HistogramOpts, HistogramVec, Registry};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tollgate_audit::{AuditHandle, AuditSink, AuditWorker, Commit, CommitObserver, SinkSettings};
use tollgate_config::Loaded;
use tollgate_policy::{PolicyEngine, PolicyWatcher};
use tollgate_telemetry::TracingGuard;

use crate::catalog::Approvals;
use crate::catalog::reload::{self, LockFile};
use crate::catalog::service::{self, SyncSettings};
use crate::gateway::GatewayError;
use crate::route::Route;

/// Buckets for audit write latencies, in seconds: 50 µs to 5 s.
const AUDIT_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
];

/// The audit write latency histogram (`tollgate_audit_write_seconds`), by
/// `stage`: `sync` or `record`.
pub(crate) fn audit_write_seconds() -> prometheus::Result<HistogramVec> {
    HistogramVec::new(
        HistogramOpts::new(
            "tollgate_audit_write_seconds",
            "Audit writes: `sync` is each fdatasync, `record` the time from queueing a record to durable.",
        )
        .buckets(AUDIT_BUCKETS.to_vec()),
        &["stage"],
    )
}

/// Open the audit trail of `[audit]` (a disabled handle when `enabled =
/// false`), with its commit latencies observed on `registry`.
///
/// # Errors
///
/// The directory or first file cannot be created.
pub(crate) fn audit_sink(
    loaded: &Loaded,
    registry: &Registry,
) -> Result<(AuditHandle, Option<AuditWorker>), GatewayError> {
    let audit = &loaded.config.audit;
    if !audit.enabled {
        tracing::warn!("[audit] enabled = false: no audit trail is written");
        return Ok((AuditHandle::disabled(), None));
    }
    let latency = audit_write_seconds()?;
    registry.register(Box::new(latency.clone()))?;
    let observer: CommitObserver = Arc::new(move |c: &Commit| {
        latency.with_label_values(&["sync"]).observe(c.sync.as_secs_f64());
        latency.with_label_values(&["record"]).observe(c.oldest.as_secs_f64());
    });
    let mut settings = SinkSettings::from_config(audit, &loaded.path);
    settings.observer = Some(observer);
    let dir = settings.directory.clone();
    let (handle, worker) = AuditSink::start(settings).map_err(|e| GatewayError::Audit(e.to_string()))?;
    tracing::info!(dir = %dir.display(), durability = ?handle.durability(), "audit trail open");
    Ok((handle, Some(worker)))
}

/// The catalog's background work: syncing every route, and reloading the
/// lock.
#[derive(Debug)]
pub(crate) struct CatalogWork {
    /// The routes to sync (the gate not off).
    pub(crate) routes: Vec<Arc<Route>>,
    /// Every route.
    pub(crate) peers: Arc<[Arc<Route>]>,
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) lock: Arc<LockFile>,
    pub(crate) settings: SyncSettings,
    pub(crate) watch_lock: bool,
}

/// The background services, before the gateway runs.
#[derive(Debug)]
pub(crate) struct Background {
    pub(crate) policy: Option<Arc<PolicyEngine>>,
    pub(crate) watch_policies: bool,
    pub(crate) audit_worker: Option<AuditWorker>,
    pub(crate) tracing: Option<TracingGuard>,
    pub(crate) catalog: CatalogWork,
}

/// The background services while the gateway runs.
pub(crate) struct Running {
    _watcher: Option<PolicyWatcher>,
    tasks: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
    audit_worker: Option<AuditWorker>,
    tracing: Option<TracingGuard>,
}

impl Background {
    /// Start watching the policies and the lock, syncing the catalogs and
    /// listening for SIGHUP.
    pub(crate) fn start(self) -> Running {
        let watcher = self.policy.as_ref().filter(|_| self.watch_policies).and_then(|p| {
            p.watch()
                .map_err(|e| tracing::error!(error = %e, "policy directory not watched; reload with SIGHUP"))
                .ok()
        });
        let (stop, stopped) = watch::channel(false);
        let c = self.catalog;
        let mut tasks = service::start(c.routes, &c.peers, c.settings, stopped);
        if c.watch_lock {
            tasks.push(tokio::spawn(reload::watch(c.approvals.clone(), c.lock.clone())));
        }
        tasks.push(tokio::spawn(reload_on_sighup(self.policy, c.approvals, c.lock)));
        Running {
            _watcher: watcher,
            tasks,
            stop,
            audit_worker: self.audit_worker,
            tracing: self.tracing,
        }
    }
}

impl Running {
    /// Stop the services; the audit writer drains and syncs first.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            task.abort();
        }
        if let Some(worker) = self.audit_worker
            && let Err(e) = worker.close().await
        {
            tracing::error!(error = %e, "audit trail not closed cleanly");
        }
        if let Some(guard) = self.tracing {
            // The exporter runs on its own runtime; shutting it down blocks.
            let _ = tokio::task::spawn_blocking(move || {
                if let Err(e) = guard.shutdown() {
                    tracing::warn!(error = %e, "trace exporter not flushed");
                }
            })
            .await;
        }
    }
}

/// Reload the policies and the catalog lock on each SIGHUP (the outcome is
/// logged and counted).
async fn reload_on_sighup(policy: Option<Arc<PolicyEngine>>, approvals: Arc<Approvals>, lock: Arc<LockFile>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            tracing::warn!("SIGHUP handler not installed");
            return;
        };
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading policies and the catalog lock");
            if let Some(p) = policy.clone() {
                let _ = tokio::task::spawn_blocking(move || p.reload_configured()).await;
            }
            reload::reload(&approvals, &lock);
        }
    }
    #[cfg(not(unix))]
    drop((policy, approvals, lock));
}
