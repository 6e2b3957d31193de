//! Catalog metrics, read when Prometheus scrapes: per route the sync's
//! state and age, the definitions by the gate's verdict, the verdicts
//! reached on calls and list entries, poisoning findings, a refused header
//! trust; and the lock's approvals and reloads. Nothing on the request
//! path touches them.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntGauge, IntGaugeVec, Opts};

use crate::catalog::{Approvals, Judged, OUTCOMES};
use crate::governance::findings;
use crate::governance::reload::LockFile;
use crate::governance::report::{outcome_counts, sync_age};
use crate::live::Live;

/// Collects the catalog gauges at scrape time.
pub(crate) struct CatalogCollector {
    live: Arc<Live>,
    approvals: Arc<Approvals>,
    lock: Arc<LockFile>,
    synced: IntGaugeVec,
    last_ok: IntGaugeVec,
    age: GaugeVec,
    syncs: IntGaugeVec,
    definitions: IntGaugeVec,
    verdicts: IntGaugeVec,
    findings: IntGaugeVec,
    trust_refused: IntGaugeVec,
    lock_gauges: [IntGauge; 4],
    descs: Vec<Desc>,
}

impl CatalogCollector {
    pub(crate) fn new(live: Arc<Live>, approvals: Arc<Approvals>, lock: Arc<LockFile>) -> prometheus::Result<Self> {
        let vec = |name: &str, help: &str, labels: &[&str]| IntGaugeVec::new(Opts::new(name, help), labels);
        let gauge = |name: &str, help: &str| IntGauge::new(name, help);
        let mut c = CatalogCollector {
            live,
            approvals,
            lock,
            synced: vec(
                "tollgate_catalog_synced",
                "1 once the route's catalog has been synced.",
                &["route"],
            )?,
            last_ok: vec(
                "tollgate_catalog_last_sync_success",
                "1 unless the route's latest catalog sync failed.",
                &["route"],
            )?,
            age: GaugeVec::new(
                Opts::new(
                    "tollgate_catalog_sync_age_seconds",
                    "Seconds since the route's last good catalog sync.",
                ),
                &["route"],
            )?,
            syncs: vec(
                "tollgate_catalog_syncs",
                "Catalog syncs since start, by result: ok, failed.",
                &["route", "result"],
            )?,
            definitions: vec(
                "tollgate_catalog_definitions",
                "Definitions the upstream lists or the lock approves, by the gate's verdict: approved, quarantined, blocked, unlisted.",
                &["route", "outcome"],
            )?,
            verdicts: vec(
                "tollgate_catalog_gate_verdicts",
                "Gate verdicts since start on calls and list entries (judged: call, list), by outcome.",
                &["route", "judged", "outcome"],
            )?,
            findings: vec(
                "tollgate_catalog_poisoning_findings",
                "Poisoning findings in the route's latest catalog, by check.",
                &["route", "check"],
            )?,
            trust_refused: vec(
                "tollgate_catalog_header_trust_refused",
                "1 when header_trust = \"upstream\" was refused: the upstream does not announce 2026-07-28.",
                &["route"],
            )?,
            lock_gauges: [
                gauge(
                    "tollgate_catalog_lock_approvals",
                    "Approvals in force (the lock file's and the fleet store's).",
                )?,
                gauge(
                    "tollgate_catalog_lock_reloads",
                    "Lock reloads that put a new lock in force since start.",
                )?,
                gauge(
                    "tollgate_catalog_lock_reload_failures",
                    "Refused lock reloads (invalid locks) since start.",
                )?,
                gauge(
                    "tollgate_catalog_lock_last_reload_success",
                    "1 unless the last lock reload was refused.",
                )?,
            ],
            descs: Vec::new(),
        };
        let descs: Vec<Desc> = c.collectors().into_iter().flat_map(|m| m.desc()).cloned().collect();
        c.descs = descs;
        Ok(c)
    }

    fn collectors(&self) -> Vec<&dyn Collector> {
        let mut out: Vec<&dyn Collector> = vec![
            &self.synced,
            &self.last_ok,
            &self.age,
            &self.syncs,
            &self.definitions,
            &self.verdicts,
            &self.findings,
            &self.trust_refused,
        ];
        out.extend(self.lock_gauges.iter().map(|g| g as &dyn Collector));
        out
    }

    fn refresh(&self) {
        let lock = self.approvals.current();
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        // Only the routes in force: a route a reload removed leaves.
        let vecs = [
            &self.synced,
            &self.last_ok,
            &self.syncs,
            &self.definitions,
            &self.verdicts,
            &self.findings,
            &self.trust_refused,
        ];
        vecs.iter().for_each(|v| v.reset());
        self.age.reset();
        for route in &self.live.current().routes() {
            let name = &*route.name;
            let s = route.catalog.status();
            self.synced
                .with_label_values(&[name])
                .set(i64::from(s.last_success.is_some()));
            self.last_ok
                .with_label_values(&[name])
                .set(i64::from(s.last_error.is_none()));
            if let Some(age) = sync_age(route) {
                self.age.with_label_values(&[name]).set(age);
            }
            self.syncs.with_label_values(&[name, "ok"]).set(n(s.successes));
            self.syncs.with_label_values(&[name, "failed"]).set(n(s.failures));
            for (outcome, count) in outcome_counts(route, &lock) {
                let count = i64::try_from(count).unwrap_or(i64::MAX);
                self.definitions.with_label_values(&[name, outcome.as_str()]).set(count);
            }
            for judged in Judged::ALL {
                for outcome in OUTCOMES {
                    let v = n(route.catalog.counted(judged, outcome));
                    self.verdicts
                        .with_label_values(&[name, judged.as_str(), outcome.as_str()])
                        .set(v);
                }
            }
            for (check, count) in findings::counts(&s.findings) {
                let count = i64::try_from(count).unwrap_or(i64::MAX);
                self.findings.with_label_values(&[name, check]).set(count);
            }
            self.trust_refused
                .with_label_values(&[name])
                .set(i64::from(route.catalog.trust_refused()));
        }
        let status = &self.lock.status;
        let values = [
            lock.iter().count() as u64,
            status.reloads.load(Ordering::Relaxed),
            status.failures.load(Ordering::Relaxed),
            u64::from(status.last_ok.load(Ordering::Relaxed)),
        ];
        for (g, v) in self.lock_gauges.iter().zip(values) {
            g.set(n(v));
        }
    }
}

impl Collector for CatalogCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.refresh();
        self.collectors().into_iter().flat_map(Collector::collect).collect()
    }
}
