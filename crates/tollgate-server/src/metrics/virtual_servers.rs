//! Virtual-server metrics, read when Prometheus scrapes: per virtual
//! server what it exposes by kind, the names left out because two members
//! claimed them, the renamed or re-described definitions awaiting
//! approval as exposed, and whether each member's latest catalog sync succeeded
//! (a member that is down keeps its tools listed from the catalog, and its
//! calls answer 502). Nothing on the request path touches them.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};
use tollgate_catalog::Kind;

use crate::live::Live;
use crate::vserver::health;

/// Collects the virtual-server gauges at scrape time.
pub(crate) struct VirtualCollector {
    live: Arc<Live>,
    exposed: IntGaugeVec,
    collisions: IntGaugeVec,
    awaiting: IntGaugeVec,
    member_up: IntGaugeVec,
    descs: Vec<Desc>,
}

impl VirtualCollector {
    pub(crate) fn new(live: Arc<Live>) -> prometheus::Result<Self> {
        let vec = |name: &str, help: &str, labels: &[&str]| IntGaugeVec::new(Opts::new(name, help), labels);
        let c = VirtualCollector {
            live,
            exposed: vec(
                "tollgate_virtual_server_exposed",
                "Definitions a virtual server exposes, by kind (tool, prompt, resource, resource_template).",
                &["virtual_server", "kind"],
            )?,
            collisions: vec(
                "tollgate_virtual_server_collisions",
                "Exposed names two members claimed; both are left out until the configuration or a catalog changes.",
                &["virtual_server"],
            )?,
            awaiting: vec(
                "tollgate_virtual_server_awaiting_approval",
                "Renamed or re-described definitions the lock does not approve as exposed (left out when the catalog gate enforces).",
                &["virtual_server"],
            )?,
            member_up: vec(
                "tollgate_virtual_server_member_up",
                "1 when the member's latest catalog sync succeeded, 0 when it failed or has not run.",
                &["virtual_server", "member"],
            )?,
            descs: Vec::new(),
        };
        let descs = [&c.exposed, &c.collisions, &c.awaiting, &c.member_up]
            .iter()
            .flat_map(|g| g.desc().into_iter().cloned())
            .collect();
        Ok(VirtualCollector { descs, ..c })
    }

    fn refresh(&self) {
        // Only the virtual servers in force: one a reload removed leaves.
        for g in [&self.exposed, &self.collisions, &self.awaiting, &self.member_up] {
            g.reset();
        }
        for v in self.live.current().front.virtuals.values() {
            let h = health(v);
            let name = &*v.name;
            for kind in [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::ResourceTemplate] {
                let n = h.exposed.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
                self.exposed
                    .with_label_values(&[name, kind.as_str()])
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
            self.collisions
                .with_label_values(&[name])
                .set(i64::try_from(h.collisions.len()).unwrap_or(i64::MAX));
            self.awaiting
                .with_label_values(&[name])
                .set(i64::try_from(h.awaiting.len()).unwrap_or(i64::MAX));
            for (member, up) in &h.members {
                self.member_up.with_label_values(&[name, member]).set(i64::from(*up));
            }
        }
    }
}

impl Collector for VirtualCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.refresh();
        [&self.exposed, &self.collisions, &self.awaiting, &self.member_up]
            .into_iter()
            .flat_map(Collector::collect)
            .collect()
    }
}
