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

use super::totals::Totals;
use crate::catalog::{Approvals, Judged, OUTCOMES};
use crate::governance::findings;
use crate::governance::reload::LockFile;
use crate::governance::report::{outcome_counts, sync_age};
use crate::live::Live;

/// Collects the catalog gauges and totals at scrape time.
pub(crate) struct CatalogCollector {
    live: Arc<Live>,
    approvals: Arc<Approvals>,
    lock: Arc<LockFile>,
    synced: IntGaugeVec,
    last_ok: IntGaugeVec,
    age: GaugeVec,
    syncs: Totals,
    definitions: IntGaugeVec,
    verdicts: Totals,
    findings: IntGaugeVec,
    trust_refused: IntGaugeVec,
    lock_gauges: [IntGauge; 2],
    lock_totals: [Totals; 2],
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
            syncs: Totals::new(
                "tollgate_catalog_syncs_total",
                "Catalog syncs, by result: ok, failed.",
                &["route", "result"],
            )?,
            definitions: vec(
                "tollgate_catalog_definitions",
                "Definitions the upstream lists or the lock approves, by the gate's verdict: approved, quarantined, blocked, unlisted.",
                &["route", "outcome"],
            )?,
            verdicts: Totals::new(
                "tollgate_catalog_gate_verdicts_total",
                "Gate verdicts on calls and list entries (judged: call, list), by outcome.",
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
                    "tollgate_catalog_lock_last_reload_success",
                    "1 unless the last lock reload was refused.",
                )?,
            ],
            lock_totals: [
                Totals::new(
                    "tollgate_catalog_lock_reloads_total",
                    "Lock reloads that put a new lock in force.",
                    &[],
                )?,
                Totals::new(
                    "tollgate_catalog_lock_reload_failures_total",
                    "Refused lock reloads (invalid locks).",
                    &[],
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
        out.extend(self.lock_totals.iter().map(|t| t as &dyn Collector));
        out
    }

    fn refresh(&self) {
        let lock = self.approvals.current();
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        // Only the routes in force: a route a reload removed leaves.
        let vecs = [
            &self.synced,
            &self.last_ok,
            &self.definitions,
            &self.findings,
            &self.trust_refused,
        ];
        vecs.iter().for_each(|v| v.reset());
        self.age.reset();
        let routes = self.live.current().routes();
        let mut syncs = Vec::new();
        let mut verdicts = Vec::new();
        for route in &routes {
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
            syncs.push((vec![name, "ok"], s.successes));
            syncs.push((vec![name, "failed"], s.failures));
            for (outcome, count) in outcome_counts(route, &lock) {
                let count = i64::try_from(count).unwrap_or(i64::MAX);
                self.definitions.with_label_values(&[name, outcome.as_str()]).set(count);
            }
            for judged in Judged::ALL {
                for outcome in OUTCOMES {
                    let v = route.catalog.counted(judged, outcome);
                    verdicts.push((vec![name, judged.as_str(), outcome.as_str()], v));
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
        self.syncs.update(syncs);
        self.verdicts.update(verdicts);
        let status = &self.lock.status;
        let [approved, last_ok] = &self.lock_gauges;
        approved.set(n(lock.iter().count() as u64));
        last_ok.set(i64::from(status.last_ok.load(Ordering::Relaxed)));
        let [reloads, failures] = &self.lock_totals;
        reloads.set(status.reloads.load(Ordering::Relaxed));
        failures.set(status.failures.load(Ordering::Relaxed));
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
