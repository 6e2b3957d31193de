//! Users' upstream grant metrics (`user_oauth` servers), read when
//! Prometheus scrapes: what happened to grants since start, per server and
//! event — connects asked, completed and refused, refreshes and their
//! failures, grants forgotten (`invalid_grant`) and revoked.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;

use super::totals::Totals;
use crate::live::Live;

/// Collects the vault's event counts at scrape time.
pub(crate) struct VaultCollector {
    live: Arc<Live>,
    events: Totals,
}

impl VaultCollector {
    pub(crate) fn new(live: Arc<Live>) -> prometheus::Result<Self> {
        let events = Totals::new(
            "tollgate_upstream_grant_events_total",
            "Users' own upstream grants, by server and event: asked (a call answered with a connect link), connected, refused, refreshed, refresh_failed, forgotten (the upstream said invalid_grant), revoked.",
            &["server", "event"],
        )?;
        Ok(VaultCollector { live, events })
    }
}

impl Collector for VaultCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.events.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let events = self
            .live
            .current()
            .shared
            .vault
            .as_ref()
            .map(|v| v.events())
            .unwrap_or_default();
        self.events.update(
            events
                .iter()
                .map(|(server, event, n)| (vec![server.as_str(), *event], *n)),
        );
        self.events.collect()
    }
}
