//! Metrics read when Prometheus scrapes: the audit sink's queue and
//! totals, the policy set in force and its reloads, each token issuer's
//! signing keys and their fetches, the trace pipeline's span totals, and
//! the configuration in force and its reloads.
//! Nothing on the request path touches them.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, IntGaugeVec, Opts};
use std::sync::atomic::Ordering;
use tollgate_audit::AuditHandle;

use super::totals::Totals;
use crate::live::Live;
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::SpanCounts;

/// Collects the status gauges and totals at scrape time.
pub(crate) struct StatusCollector {
    audit: AuditHandle,
    policy: Option<Arc<PolicyEngine>>,
    live: Arc<Live>,
    spans: Option<Arc<SpanCounts>>,
    gauges: Vec<IntGauge>,
    /// Unlabelled totals, indexed like [`TOTALS`].
    totals: Vec<Totals>,
    audit_records: Totals,
    /// Per issuer: keys in force, fetches by result, last fetch ok.
    issuer_keys: IntGaugeVec,
    issuer_fetches: Totals,
    issuer_last_ok: IntGaugeVec,
    spans_total: Totals,
    spans_unexported: IntGauge,
    descs: Vec<Desc>,
}

/// Index of each gauge in [`StatusCollector::gauges`].
const QUEUE_DEPTH: usize = 0;
const QUEUE_CAPACITY: usize = 1;
const AUDIT_HEALTHY: usize = 2;
const POLICY_GENERATION: usize = 3;
const POLICY_COUNT: usize = 4;
const POLICY_LAST_OK: usize = 5;
const AUTH_KEYS_READY: usize = 6;
const CONFIG_GENERATION: usize = 7;
const CONFIG_LAST_OK: usize = 8;
const CONFIG_RESTART: usize = 9;

const GAUGES: [(&str, &str); 10] = [
    ("tollgate_audit_queue_depth", "Audit records waiting for the writer."),
    ("tollgate_audit_queue_capacity", "Bound of the audit queue."),
    (
        "tollgate_audit_healthy",
        "1 when the last audit write and sync succeeded.",
    ),
    (
        "tollgate_policy_generation",
        "Generation of the policy set in force (1 = loaded at start).",
    ),
    ("tollgate_policy_count", "Policies in force."),
    (
        "tollgate_policy_last_reload_success",
        "1 unless the last reload attempt was refused.",
    ),
    (
        "tollgate_auth_keys_ready",
        "1 when every configured token issuer's keys are loaded.",
    ),
    (
        "tollgate_config_generation",
        "Generation of the configuration in force (1 = loaded at start).",
    ),
    (
        "tollgate_config_last_reload_success",
        "1 unless the last configuration reload was refused.",
    ),
    (
        "tollgate_config_restart_required",
        "Changed settings of the file that take effect only after a restart (listeners, threads, the audit writer…).",
    ),
];

/// Index of each total in [`StatusCollector::totals`].
const POLICY_RELOADS: usize = 0;
const POLICY_FAILURES: usize = 1;
const CONFIG_RELOADS: usize = 2;
const CONFIG_FAILURES: usize = 3;

const TOTALS: [(&str, &str); 4] = [
    (
        "tollgate_policy_reloads_total",
        "Reloads that put a new policy set in force.",
    ),
    (
        "tollgate_policy_reload_failures_total",
        "Refused policy reloads (invalid sets).",
    ),
    (
        "tollgate_config_reloads_total",
        "Configuration reloads that put a new configuration in force.",
    ),
    (
        "tollgate_config_reload_failures_total",
        "Refused configuration reloads (invalid files).",
    ),
];

impl StatusCollector {
    pub(crate) fn new(
        audit: AuditHandle,
        policy: Option<Arc<PolicyEngine>>,
        live: Arc<Live>,
        spans: Option<Arc<SpanCounts>>,
    ) -> prometheus::Result<StatusCollector> {
        let gauges = GAUGES
            .iter()
            .map(|(name, help)| IntGauge::new(*name, *help))
            .collect::<prometheus::Result<Vec<_>>>()?;
        let totals = TOTALS
            .iter()
            .map(|(name, help)| Totals::new(name, help, &[]))
            .collect::<prometheus::Result<Vec<_>>>()?;
        let vec = |name: &str, help: &str, labels: &[&str]| IntGaugeVec::new(Opts::new(name, help), labels);
        let mut collector = StatusCollector {
            audit,
            policy,
            live,
            spans,
            gauges,
            totals,
            audit_records: Totals::new(
                "tollgate_audit_records_total",
                "Audit sink totals by kind: written, dropped (queue full), write_errors, commits, otlp_exported, otlp_dropped.",
                &["kind"],
            )?,
            issuer_keys: vec(
                "tollgate_auth_jwks_keys",
                "Signing keys in force per token issuer (0 until loaded).",
                &["issuer"],
            )?,
            issuer_fetches: Totals::new(
                "tollgate_auth_jwks_fetches_total",
                "Key-set fetches per token issuer, by result: ok, failed.",
                &["issuer", "result"],
            )?,
            issuer_last_ok: vec(
                "tollgate_auth_jwks_last_fetch_success",
                "1 unless the issuer's latest key-set fetch failed.",
                &["issuer"],
            )?,
            spans_total: Totals::new(
                "tollgate_trace_spans_total",
                "Trace spans by kind: ended (sampled), exported, export_failed.",
                &["kind"],
            )?,
            spans_unexported: IntGauge::new(
                "tollgate_trace_spans_unexported",
                "Sampled spans neither exported nor in a failed export: queued, or dropped on a full queue.",
            )?,
            descs: Vec::new(),
        };
        collector.descs = collector
            .collectors()
            .into_iter()
            .flat_map(|c| c.desc())
            .cloned()
            .collect();
        Ok(collector)
    }

    /// Everything collected, in order.
    fn collectors(&self) -> Vec<&dyn Collector> {
        let mut out: Vec<&dyn Collector> = self.gauges.iter().map(|g| g as &dyn Collector).collect();
        out.extend(self.totals.iter().map(|t| t as &dyn Collector));
        out.extend([
            &self.audit_records as &dyn Collector,
            &self.issuer_keys,
            &self.issuer_fetches,
            &self.issuer_last_ok,
            &self.spans_total,
            &self.spans_unexported,
        ]);
        out
    }

    fn total(&self, i: usize, v: u64) {
        if let Some(t) = self.totals.get(i) {
            t.set(v);
        }
    }

    fn set(&self, i: usize, v: impl TryInto<i64>) {
        if let Some(g) = self.gauges.get(i) {
            g.set(saturating(v));
        }
    }

    fn refresh(&self) {
        let a = self.audit.stats();
        self.set(QUEUE_DEPTH, a.queue_depth);
        self.set(QUEUE_CAPACITY, a.queue_capacity);
        self.set(AUDIT_HEALTHY, i64::from(a.healthy));
        self.audit_records.update(kinds([
            ("written", a.written),
            ("dropped", a.dropped),
            ("write_errors", a.write_errors),
            ("commits", a.commits),
            ("otlp_exported", a.otlp_exported),
            ("otlp_dropped", a.otlp_dropped),
        ]));
        let (reloads, failures) = match &self.policy {
            Some(p) => {
                let s = p.status();
                self.set(POLICY_GENERATION, s.generation);
                self.set(POLICY_COUNT, s.policies);
                self.set(POLICY_LAST_OK, i64::from(s.last_error.is_none()));
                (s.reloads, s.reload_failures)
            }
            None => {
                self.set(POLICY_LAST_OK, 1);
                (0, 0)
            }
        };
        self.total(POLICY_RELOADS, reloads);
        self.total(POLICY_FAILURES, failures);
        let g = self.live.current();
        let ready = g.shared.authn.as_ref().is_none_or(|a| a.is_ready());
        self.set(AUTH_KEYS_READY, i64::from(ready));
        self.refresh_issuers(g.shared.authn.as_deref());
        let reloads = &self.live.status;
        self.set(CONFIG_GENERATION, g.number);
        self.total(CONFIG_RELOADS, reloads.reloads.load(Ordering::Relaxed));
        self.total(CONFIG_FAILURES, reloads.failures.load(Ordering::Relaxed));
        let last = reloads.last();
        self.set(CONFIG_LAST_OK, i64::from(last.error.is_none()));
        self.set(CONFIG_RESTART, last.restart_required.len());
        let spans = self.spans.as_ref().map(|c| c.stats()).unwrap_or_default();
        self.spans_total.update(kinds([
            ("ended", spans.ended),
            ("exported", spans.exported),
            ("export_failed", spans.failed),
        ]));
        self.spans_unexported.set(saturating(spans.unexported()));
    }

    /// One series per configured issuer (a bounded set: the config's).
    fn refresh_issuers(&self, authn: Option<&tollgate_auth::Authenticator>) {
        for v in [&self.issuer_keys, &self.issuer_last_ok] {
            v.reset();
        }
        let status = authn.map(|a| a.issuer_status()).unwrap_or_default();
        for s in &status {
            let issuer = s.issuer.as_str();
            self.issuer_keys.with_label_values(&[issuer]).set(saturating(s.keys));
            self.issuer_last_ok
                .with_label_values(&[issuer])
                .set(i64::from(s.last_fetch_ok));
        }
        self.issuer_fetches.update(status.iter().flat_map(|s| {
            let issuer = s.issuer.as_str();
            [(vec![issuer, "ok"], s.fetched), (vec![issuer, "failed"], s.failed)]
        }));
    }
}

impl Collector for StatusCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.refresh();
        self.collectors().into_iter().flat_map(Collector::collect).collect()
    }
}

/// A gauge value: totals beyond `i64::MAX` show as `i64::MAX`.
fn saturating(v: impl TryInto<i64>) -> i64 {
    v.try_into().unwrap_or(i64::MAX)
}

/// Readings of a total labelled `kind`, one per entry.
fn kinds<const N: usize>(values: [(&'static str, u64); N]) -> impl Iterator<Item = (Vec<&'static str>, u64)> {
    values.into_iter().map(|(kind, v)| (vec![kind], v))
}
