//! Totals since start exported as Prometheus counters (`…_total`).
//!
//! The gateway's parts count what happened in plain atomics (a rule's
//! refusals, a route's syncs, the audit sink's records…) and the
//! scrape-time collectors read them. Some of those atomics live in objects
//! a configuration reload rebuilds (a route whose upstream changed, a new
//! token validator), so a reading can fall back to zero. [`Totals`] turns
//! the readings into a counter that only goes up: each scrape adds what a
//! reading grew by since the previous scrape, or the whole reading when it
//! went down (its source was rebuilt and has counted that much since).
//! A series whose source is gone (a route or rule a reload removed) is
//! dropped, so the series stay those of the configuration in force.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounterVec, Opts};

/// A counter vector kept up to date from since-start readings.
pub(crate) struct Totals {
    counter: IntCounterVec,
    /// The reading of each series at the previous scrape.
    seen: Mutex<HashMap<Vec<String>, u64>>,
}

impl Totals {
    /// A counter `name` (ending `_total`) with `labels`.
    pub(crate) fn new(name: &str, help: &str, labels: &[&str]) -> prometheus::Result<Totals> {
        Ok(Totals {
            counter: IntCounterVec::new(Opts::new(name, help), labels)?,
            seen: Mutex::new(HashMap::new()),
        })
    }

    /// Bring the counter up to `readings`: each series' label values and
    /// its source's total since start. Series not read are dropped.
    pub(crate) fn update<'a>(&self, readings: impl IntoIterator<Item = (Vec<&'a str>, u64)>) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = HashMap::with_capacity(seen.len());
        for (labels, reading) in readings {
            let key: Vec<String> = labels.iter().map(|l| (*l).to_owned()).collect();
            let before = seen.remove(&key).unwrap_or(0);
            let grown = reading.checked_sub(before).unwrap_or(reading);
            self.counter.with_label_values(&labels).inc_by(grown);
            next.insert(key, reading);
        }
        for gone in seen.keys() {
            let labels: Vec<&str> = gone.iter().map(String::as_str).collect();
            let _ = self.counter.remove_label_values(&labels);
        }
        *seen = next;
    }

    /// [`Self::update`] for a counter without labels.
    pub(crate) fn set(&self, reading: u64) {
        self.update([(Vec::new(), reading)]);
    }
}

impl Collector for Totals {
    fn desc(&self) -> Vec<&Desc> {
        self.counter.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.counter.collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use prometheus::proto::MetricType;

    use super::*;

    fn values(t: &Totals) -> Vec<(Vec<String>, u64)> {
        let families = t.collect();
        assert_eq!(families[0].get_field_type(), MetricType::COUNTER);
        let mut out: Vec<_> = families[0]
            .get_metric()
            .iter()
            .map(|m| {
                let labels = m.get_label().iter().map(|l| l.value().to_owned()).collect();
                (labels, m.get_counter().get_value() as u64)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_reading_that_falls_back_keeps_the_counter_going_up() {
        let t = Totals::new("tollgate_x_total", "x", &["route"]).unwrap();
        t.update([(vec!["a"], 5)]);
        t.update([(vec!["a"], 8)]);
        assert_eq!(values(&t), [(vec!["a".to_owned()], 8)]);
        // A reload rebuilt the source: it counts from zero again.
        t.update([(vec!["a"], 2)]);
        assert_eq!(values(&t), [(vec!["a".to_owned()], 10)]);
        t.update([(vec!["a"], 3)]);
        assert_eq!(values(&t), [(vec!["a".to_owned()], 11)]);
    }

    #[test]
    fn a_series_whose_source_is_gone_is_dropped() {
        let t = Totals::new("tollgate_x_total", "x", &["route"]).unwrap();
        t.update([(vec!["a"], 1), (vec!["b"], 4)]);
        t.update([(vec!["b"], 4)]);
        assert_eq!(values(&t), [(vec!["b".to_owned()], 4)]);
        t.update([(vec!["a"], 2), (vec!["b"], 4)]);
        assert_eq!(values(&t), [(vec!["a".to_owned()], 2), (vec!["b".to_owned()], 4)]);
    }

    #[test]
    fn a_counter_without_labels() {
        let t = Totals::new("tollgate_y_total", "y", &[]).unwrap();
        t.set(0);
        t.set(7);
        assert_eq!(values(&t), [(Vec::new(), 7)]);
    }
}
