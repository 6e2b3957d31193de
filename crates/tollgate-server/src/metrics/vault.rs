//! Users' upstream grant metrics (`user_oauth` servers), read when
//! Prometheus scrapes: what happened to grants since start, per server and
//! event — connects asked, completed and refused, refreshes and their
//! failures, grants forgotten (`invalid_grant`) and revoked.

use std::sync::Arc;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};

use crate::live::Live;

/// Collects the vault's event counts at scrape time.
pub(crate) struct VaultCollector {
    live: Arc<Live>,
    events: IntGaugeVec,
}

impl VaultCollector {
    pub(crate) fn new(live: Arc<Live>) -> prometheus::Result<Self> {
        let events = IntGaugeVec::new(
            Opts::new(
                "tollgate_upstream_grant_events",
                "Users' own upstream grants since start, by server and event: asked (a call answered with a connect link), connected, refused, refreshed, refresh_failed, forgotten (the upstream said invalid_grant), revoked.",
            ),
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
        self.events.reset();
        if let Some(vault) = &self.live.current().shared.vault {
            for (server, event, n) in vault.events() {
                self.events
                    .with_label_values(&[server.as_str(), event])
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
        self.events.collect()
    }
}
