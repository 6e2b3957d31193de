//! Metrics read when Prometheus scrapes: the audit sink's queue and
//! counters, the policy set in force and its reloads, each token issuer's
//! signing keys and their fetches, the trace pipeline's span totals, and
//! the configuration in force and its reloads.
//! Nothing on the request path touches them.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, IntGaugeVec, Opts};
use std::sync::atomic::Ordering;
use tollgate_audit::AuditHandle;

use crate::live::Live;
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::SpanCounts;

/// Collects the status gauges at scrape time.
pub(crate) struct StatusCollector {
    audit: AuditHandle,
    policy: Option<Arc<PolicyEngine>>,
    live: Arc<Live>,
    spans: Option<Arc<SpanCounts>>,
    gauges: Vec<IntGauge>,
    audit_counters: IntGaugeVec,
    /// Per issuer: keys in force, fetches by result, last fetch ok.
    issuer_keys: IntGaugeVec,
    issuer_fetches: IntGaugeVec,
    issuer_last_ok: IntGaugeVec,
    span_counters: IntGaugeVec,
    descs: Vec<Desc>,
}

/// Index of each gauge in [`StatusCollector::gauges`].
const QUEUE_DEPTH: usize = 0;
const QUEUE_CAPACITY: usize = 1;
const AUDIT_HEALTHY: usize = 2;
const POLICY_GENERATION: usize = 3;
const POLICY_COUNT: usize = 4;
const POLICY_RELOADS: usize = 5;
const POLICY_FAILURES: usize = 6;
const POLICY_LAST_OK: usize = 7;
const AUTH_KEYS_READY: usize = 8;
const CONFIG_GENERATION: usize = 9;
const CONFIG_RELOADS: usize = 10;
const CONFIG_FAILURES: usize = 11;
const CONFIG_LAST_OK: usize = 12;
const CONFIG_RESTART: usize = 13;

const GAUGES: [(&str, &str); 14] = [
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
        "tollgate_policy_reloads",
        "Reloads that put a new policy set in force since start.",
    ),
    (
        "tollgate_policy_reload_failures",
        "Refused policy reloads (invalid sets) since start.",
    ),
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
        "tollgate_config_reloads",
        "Configuration reloads that put a new configuration in force since start.",
    ),
    (
        "tollgate_config_reload_failures",
        "Refused configuration reloads (invalid files) since start.",
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
        let audit_counters = IntGaugeVec::new(
            Opts::new(
                "tollgate_audit_records",
                "Audit sink totals since start, by kind: written, dropped (queue full), write_errors, commits, otlp_exported, otlp_dropped.",
            ),
            &["kind"],
        )?;
        let vec = |name: &str, help: &str, labels: &[&str]| IntGaugeVec::new(Opts::new(name, help), labels);
        let issuer_keys = vec(
            "tollgate_auth_jwks_keys",
            "Signing keys in force per token issuer (0 until loaded).",
            &["issuer"],
        )?;
        let issuer_fetches = vec(
            "tollgate_auth_jwks_fetches",
            "Key-set fetches per token issuer since start, by result: ok, failed.",
            &["issuer", "result"],
        )?;
        let issuer_last_ok = vec(
            "tollgate_auth_jwks_last_fetch_success",
            "1 unless the issuer's latest key-set fetch failed.",
            &["issuer"],
        )?;
        let span_counters = vec(
            "tollgate_trace_spans",
            "Trace spans since start, by kind: ended (sampled), exported, export_failed, unexported (queued or dropped).",
            &["kind"],
        )?;
        let mut collector = StatusCollector {
            audit,
            policy,
            live,
            spans,
            gauges,
            audit_counters,
            issuer_keys,
            issuer_fetches,
            issuer_last_ok,
            span_counters,
            descs: Vec::new(),
        };
        let gauges = collector.gauges.iter().flat_map(|g| g.desc());
        let vecs = collector.vecs().into_iter().flat_map(|v| v.desc());
        collector.descs = gauges.chain(vecs).cloned().collect();
        Ok(collector)
    }

    /// The labelled gauges, in the order they are collected.
    fn vecs(&self) -> [&IntGaugeVec; 5] {
        [
            &self.audit_counters,
            &self.issuer_keys,
            &self.issuer_fetches,
            &self.issuer_last_ok,
            &self.span_counters,
        ]
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
        set_kinds(
            &self.audit_counters,
            [
                ("written", a.written),
                ("dropped", a.dropped),
                ("write_errors", a.write_errors),
                ("commits", a.commits),
                ("otlp_exported", a.otlp_exported),
                ("otlp_dropped", a.otlp_dropped),
            ],
        );
        if let Some(p) = &self.policy {
            let s = p.status();
            self.set(POLICY_GENERATION, s.generation);
            self.set(POLICY_COUNT, s.policies);
            self.set(POLICY_RELOADS, s.reloads);
            self.set(POLICY_FAILURES, s.reload_failures);
            self.set(POLICY_LAST_OK, i64::from(s.last_error.is_none()));
        } else {
            self.set(POLICY_LAST_OK, 1);
        }
        let g = self.live.current();
        let ready = g.shared.authn.as_ref().is_none_or(|a| a.is_ready());
        self.set(AUTH_KEYS_READY, i64::from(ready));
        self.refresh_issuers(g.shared.authn.as_deref());
        let reloads = &self.live.status;
        self.set(CONFIG_GENERATION, g.number);
        self.set(CONFIG_RELOADS, reloads.reloads.load(Ordering::Relaxed));
        self.set(CONFIG_FAILURES, reloads.failures.load(Ordering::Relaxed));
        let last = reloads.last();
        self.set(CONFIG_LAST_OK, i64::from(last.error.is_none()));
        self.set(CONFIG_RESTART, last.restart_required.len());
        let spans = self.spans.as_ref().map(|c| c.stats()).unwrap_or_default();
        set_kinds(
            &self.span_counters,
            [
                ("ended", spans.ended),
                ("exported", spans.exported),
                ("export_failed", spans.failed),
                ("unexported", spans.unexported()),
            ],
        );
    }

    /// One series per configured issuer (a bounded set: the config's).
    fn refresh_issuers(&self, authn: Option<&tollgate_auth::Authenticator>) {
        for v in [&self.issuer_keys, &self.issuer_fetches, &self.issuer_last_ok] {
            v.reset();
        }
        let Some(authn) = authn else { return };
        for s in authn.issuer_status() {
            let issuer = s.issuer.as_str();
            self.issuer_keys.with_label_values(&[issuer]).set(saturating(s.keys));
            self.issuer_fetches
                .with_label_values(&[issuer, "ok"])
                .set(saturating(s.fetched));
            self.issuer_fetches
                .with_label_values(&[issuer, "failed"])
                .set(saturating(s.failed));
            self.issuer_last_ok
                .with_label_values(&[issuer])
                .set(i64::from(s.last_fetch_ok));
        }
    }
}

impl Collector for StatusCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.refresh();
        let mut out: Vec<MetricFamily> = self.gauges.iter().flat_map(Collector::collect).collect();
        out.extend(self.vecs().into_iter().flat_map(Collector::collect));
        out
    }
}

/// A gauge value: totals beyond `i64::MAX` show as `i64::MAX`.
fn saturating(v: impl TryInto<i64>) -> i64 {
    v.try_into().unwrap_or(i64::MAX)
}

/// Set one series of `vec` (labelled `kind`) per entry.
fn set_kinds<const N: usize>(vec: &IntGaugeVec, values: [(&str, u64); N]) {
    for (kind, v) in values {
        vec.with_label_values(&[kind]).set(saturating(v));
    }
}
