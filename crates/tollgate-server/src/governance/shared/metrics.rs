//! Metrics of the approvals shared through the fleet store: reads and
//! writes by result, what was read, and whether this replica listens.
//! Updated as things happen, off the request path.

use std::time::SystemTime;

#[cfg(test)]
use prometheus::core::Collector;
use prometheus::{Gauge, IntCounterVec, IntGauge, Opts, Registry};

/// Why the store's approvals were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// Before serving.
    Start,
    /// The listening connection was (re)made: whatever was announced
    /// while there was none is read.
    Connect,
    /// An approval was announced.
    Notify,
    /// The periodic reconcile.
    Reconcile,
}

impl Trigger {
    const ALL: [Trigger; 4] = [Trigger::Start, Trigger::Connect, Trigger::Notify, Trigger::Reconcile];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Trigger::Start => "start",
            Trigger::Connect => "connect",
            Trigger::Notify => "notify",
            Trigger::Reconcile => "reconcile",
        }
    }
}

const RESULTS: [&str; 2] = ["ok", "failed"];

/// The metrics (`docs/metrics.md`, "Fleet store").
#[derive(Debug, Clone)]
pub(crate) struct ApprovalMetrics {
    reads: IntCounterVec,
    writes: IntCounterVec,
    approvals: IntGauge,
    refused: IntGauge,
    listening: IntGauge,
    last_read: Gauge,
}

impl ApprovalMetrics {
    /// The metrics, every label pair present from the start (at 0).
    ///
    /// # Errors
    ///
    /// A metric's options are invalid (a bug).
    pub(crate) fn new() -> prometheus::Result<ApprovalMetrics> {
        let reads = IntCounterVec::new(
            Opts::new(
                "tollgate_catalog_store_reads_total",
                "Reads of the fleet store's catalog approvals, by trigger and result.",
            ),
            &["trigger", "result"],
        )?;
        let writes = IntCounterVec::new(
            Opts::new(
                "tollgate_catalog_store_writes_total",
                "Console approvals written to the fleet store by this replica, by result.",
            ),
            &["result"],
        )?;
        for t in Trigger::ALL {
            for r in RESULTS {
                reads.with_label_values(&[t.as_str(), r]);
            }
        }
        for r in RESULTS {
            writes.with_label_values(&[r]);
        }
        Ok(ApprovalMetrics {
            reads,
            writes,
            approvals: IntGauge::new(
                "tollgate_catalog_store_approvals",
                "Approvals in force in the fleet store, as this replica last read them.",
            )?,
            refused: IntGauge::new(
                "tollgate_catalog_store_refused_rows",
                "Approval rows in force in the fleet store refused at the last read (they approve nothing).",
            )?,
            listening: IntGauge::new(
                "tollgate_catalog_store_listening",
                "1 while this replica listens for new approvals in the fleet store.",
            )?,
            last_read: Gauge::new(
                "tollgate_catalog_store_last_read_timestamp_seconds",
                "When the fleet store's approvals were last read whole (Unix time).",
            )?,
        })
    }

    /// Every metric, to describe.
    #[cfg(test)]
    pub(crate) fn collectors(&self) -> [&dyn Collector; 6] {
        [
            &self.reads,
            &self.writes,
            &self.approvals,
            &self.refused,
            &self.listening,
            &self.last_read,
        ]
    }

    /// Register every metric on `registry`.
    ///
    /// # Errors
    ///
    /// A metric of the same name is registered already.
    pub(crate) fn register(&self, registry: &Registry) -> prometheus::Result<()> {
        registry.register(Box::new(self.reads.clone()))?;
        registry.register(Box::new(self.writes.clone()))?;
        for gauge in [&self.approvals, &self.refused, &self.listening] {
            registry.register(Box::new(gauge.clone()))?;
        }
        registry.register(Box::new(self.last_read.clone()))
    }

    pub(crate) fn read_ok(&self, trigger: Trigger, approvals: usize, refused: usize) {
        self.reads.with_label_values(&[trigger.as_str(), "ok"]).inc();
        self.approvals.set(i64::try_from(approvals).unwrap_or(i64::MAX));
        self.refused.set(i64::try_from(refused).unwrap_or(i64::MAX));
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_read.set(now);
    }

    pub(crate) fn read_failed(&self, trigger: Trigger) {
        self.reads.with_label_values(&[trigger.as_str(), "failed"]).inc();
    }

    pub(crate) fn written(&self, ok: bool) {
        self.writes.with_label_values(&[RESULTS[usize::from(!ok)]]).inc();
    }

    pub(crate) fn listening(&self, on: bool) {
        self.listening.set(i64::from(on));
    }
}
