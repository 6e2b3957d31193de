//! What runs beside the listeners: the audit writer (opened at start,
//! closed after the drain so the last records reach the disk), its index
//! and its shipping to the fleet store, its signed checkpoints, the trace
//! exporter (flushed after the drain), the policy directory watcher, the
//! lock's reload, and the fleet store's catalog approvals kept in force.
//! The catalog sync, the issuers' key refresh and SIGHUP belong to the
//! configuration in force (see `reload`).

use std::path::PathBuf;
use std::sync::Arc;

use prometheus::{HistogramOpts, HistogramVec, Registry};
use tokio::task::JoinHandle;
use tollgate_audit::{AuditHandle, AuditSink, AuditWorker, Commit, CommitObserver};
use tollgate_config::Loaded;
use tollgate_policy::{PolicyEngine, PolicyWatcher};
use tollgate_telemetry::TracingGuard;

use crate::audit_index::{IndexMetrics, Indexer};
use crate::catalog::Approvals;
use crate::checkpoint::{Checkpointer, RunningCheckpointer};
use crate::error::GatewayError;
use crate::governance::reload::{self, LockFile};
use crate::governance::shared::SharedApprovals;
use crate::shipping::{RunningShipper, Shipping};

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
    let mut settings = crate::settings::sink(audit, &loaded.path);
    settings.observer = Some(observer);
    let dir = settings.directory.clone();
    let (handle, worker) = AuditSink::start(settings).map_err(|e| GatewayError::Audit(e.to_string()))?;
    tracing::info!(dir = %dir.display(), durability = ?handle.durability(), "audit trail open");
    Ok((handle, Some(worker)))
}

/// The background services, before the gateway runs.
#[derive(Debug)]
pub(crate) struct Background {
    pub(crate) policy: Option<Arc<PolicyEngine>>,
    pub(crate) watch_policies: bool,
    pub(crate) audit_worker: Option<AuditWorker>,
    pub(crate) tracing: Option<TracingGuard>,
    /// The approved definitions and their file, reloaded when it changes
    /// with `watch_lock`.
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) lock: Arc<LockFile>,
    pub(crate) watch_lock: bool,
    /// The audit directory whose index is kept up to date, and the
    /// indexer's metrics.
    pub(crate) audit_index: Option<(PathBuf, IndexMetrics)>,
    /// Shipping of the audit directory to the fleet store.
    pub(crate) shipping: Option<Shipping>,
    /// Catalog approvals shared through the fleet store, kept in force.
    pub(crate) shared: Option<Arc<SharedApprovals>>,
    /// Signed checkpoints of the trail's head.
    pub(crate) checkpointer: Option<Checkpointer>,
}

/// The background services while the gateway runs.
pub(crate) struct Running {
    _watcher: Option<PolicyWatcher>,
    tasks: Vec<JoinHandle<()>>,
    audit_worker: Option<AuditWorker>,
    indexer: Option<Indexer>,
    shipper: Option<RunningShipper>,
    checkpointer: Option<RunningCheckpointer>,
    tracing: Option<TracingGuard>,
}

impl Background {
    /// Start watching the policies and the lock.
    pub(crate) fn start(self) -> Running {
        let watcher = self.policy.as_ref().filter(|_| self.watch_policies).and_then(|p| {
            p.watch()
                .map_err(|e| tracing::error!(error = %e, "policy directory not watched; reload with SIGHUP"))
                .ok()
        });
        let mut tasks = Vec::new();
        if self.watch_lock {
            tasks.push(tokio::spawn(reload::watch(self.approvals, self.lock)));
        }
        if let Some(shared) = self.shared {
            tasks.push(tokio::spawn(shared.run()));
        }
        let indexer = self.audit_index.and_then(|(dir, metrics)| {
            Indexer::start(dir, metrics)
                .map_err(|e| tracing::error!(error = %e, "audit index not kept up to date"))
                .ok()
        });
        Running {
            _watcher: watcher,
            tasks,
            audit_worker: self.audit_worker,
            indexer,
            shipper: self.shipping.map(Shipping::start),
            checkpointer: self.checkpointer.map(Checkpointer::start),
            tracing: self.tracing,
        }
    }
}

impl Running {
    /// Stop the services; the audit writer drains and syncs first.
    pub(crate) async fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
        if let Some(worker) = self.audit_worker
            && let Err(e) = worker.close().await
        {
            tracing::error!(error = %e, "audit trail not closed cleanly");
        }
        if let Some(checkpointer) = self.checkpointer {
            checkpointer.stop().await;
        }
        if let Some(indexer) = self.indexer {
            indexer.stop().await;
        }
        if let Some(shipper) = self.shipper {
            shipper.stop().await;
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
