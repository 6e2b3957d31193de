//! Audit shipping to the fleet store (`[store] postgres`), beside the
//! trail.
//!
//! At start the gateway makes the store's schema its own (migrating when
//! `[store] migrate`), refusing to start on a schema it does not know;
//! a store that cannot be reached then is waited for in the background.
//! A task on the control runtime then ships the audit directory's lines
//! with `tollgate_store::Shipper` every second, and once more after the
//! audit writer has sealed its file at shutdown. Off the request path: the
//! shipper only reads the files the writer wrote, so a store that is down
//! or slow never fails or slows a call; its lag is a metric
//! (`metrics::ShipCollector`) and in `/readyz?detail`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tollgate_config::Loaded;
use tollgate_store::{ShipSettings, ShipStats, Shipper, Store, StoreError};

use crate::error::GatewayError;

/// The longest shutdown waits for the last pass: a store that is down
/// must not hold the process (the next start resumes from the files).
const LAST_PASS: Duration = Duration::from_secs(10);

/// The longest the schema check at start waits for the store before the
/// gateway starts anyway and keeps trying in the background.
const START_CHECK: Duration = Duration::from_secs(10);

/// How shipping stands, for metrics and readiness.
#[derive(Debug)]
pub(crate) struct ShipStatus {
    /// This replica's name in the store.
    pub(crate) replica: String,
    /// The shipper's counts and lag.
    pub(crate) stats: Arc<ShipStats>,
    /// Why shipping has not started: the schema not checked yet (the
    /// store unreachable) or refused.
    blocked: ArcSwapOption<String>,
}

impl ShipStatus {
    /// A status for `replica` before anything ran.
    pub(crate) fn new(replica: impl Into<String>, stats: Arc<ShipStats>) -> ShipStatus {
        ShipStatus {
            replica: replica.into(),
            stats,
            blocked: ArcSwapOption::empty(),
        }
    }

    /// Whether lines are being shipped: the schema is usable and the last
    /// pass succeeded.
    pub(crate) fn healthy(&self) -> bool {
        self.blocked.load().is_none() && !self.stats.failing()
    }

    /// `/readyz?detail`'s view: reported, never required (a store that is
    /// down must not take replicas out of service).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let stats = &self.stats;
        let state = match (self.blocked.load_full(), stats.failing()) {
            (Some(_), _) => "waiting",
            (None, true) => "failing",
            (None, false) => "ok",
        };
        let error = self.blocked.load_full().or_else(|| stats.last_error());
        serde_json::json!({
            "replica": self.replica,
            "shipping": state,
            "lag_seconds": stats.lag(SystemTime::now()).as_secs_f64(),
            "shipped_lines": stats.lines(),
            "pending_bytes": stats.pending_bytes(),
            "failures": stats.failures(),
            "last_error": error.as_deref(),
        })
    }
}

/// Shipping, set up but not started.
#[derive(Debug)]
pub(crate) struct Shipping {
    store: Store,
    migrate: bool,
    shipper: Shipper,
    status: Arc<ShipStatus>,
}

/// Shipping of `[audit] directory` to `[store] postgres`, when both are
/// configured.
///
/// # Errors
///
/// The store's settings cannot describe a connection.
pub(crate) fn setup(loaded: &Loaded) -> Result<Option<Shipping>, GatewayError> {
    let Some(pg) = &loaded.store else { return Ok(None) };
    let audit = &loaded.config.audit;
    if !audit.enabled {
        tracing::warn!("[store] postgres is set but [audit] enabled = false: no audit lines to ship");
        return Ok(None);
    }
    let store = Store::new(&crate::settings::store(pg)).map_err(store_err)?;
    let dir: PathBuf = audit.directory_for(&loaded.path);
    let shipper = Shipper::new(store.clone(), ShipSettings::new(pg.replica.clone(), dir));
    let status = Arc::new(ShipStatus::new(pg.replica.clone(), shipper.stats()));
    Ok(Some(Shipping {
        store,
        migrate: pg.migrate,
        shipper,
        status,
    }))
}

fn store_err(e: StoreError) -> GatewayError {
    GatewayError::Store(e.to_string())
}

impl Shipping {
    /// Its status, to read while it runs.
    pub(crate) fn status(&self) -> Arc<ShipStatus> {
        self.status.clone()
    }

    /// The store it ships to (the pool is shared).
    pub(crate) fn store(&self) -> Store {
        self.store.clone()
    }

    /// Make the store's schema this binary's before serving.
    ///
    /// # Errors
    ///
    /// The schema is newer than this binary, or older and `[store]
    /// migrate = false`. A store that cannot be reached is not an error:
    /// the gateway serves and shipping waits for it.
    pub(crate) async fn prepare(&self) -> Result<(), GatewayError> {
        match tokio::time::timeout(START_CHECK, self.store.prepare(self.migrate)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if e.is_schema() => Err(store_err(e)),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the fleet store is not reachable: serving; audit shipping waits for it");
                Ok(())
            }
            Err(_) => {
                tracing::warn!("the fleet store did not answer in time: serving; audit shipping waits for it");
                Ok(())
            }
        }
    }

    /// Start shipping on the current runtime.
    pub(crate) fn start(self) -> RunningShipper {
        RunningShipper(LastPassTask::spawn(|stopped| self.run(stopped)))
    }

    /// Wait for a usable schema, then ship until told to stop.
    async fn run(self, stop: watch::Receiver<bool>) {
        let Shipping {
            store,
            migrate,
            shipper,
            status,
        } = self;
        if !schema(&store, migrate, &status, stop.clone()).await {
            return;
        }
        tracing::info!(replica = %status.replica, "shipping the audit trail to the fleet store");
        shipper.run(stopped(stop)).await;
    }
}

/// Make the schema usable, retrying while the store cannot be reached;
/// false when stopped first or the schema is refused (then shipping waits
/// for a restart with a binary that knows it).
async fn schema(store: &Store, migrate: bool, status: &ShipStatus, stop: watch::Receiver<bool>) -> bool {
    let mut wait = Duration::from_secs(1);
    let stopping = stopped(stop);
    tokio::pin!(stopping);
    loop {
        let error = match store.prepare(migrate).await {
            Ok(()) => {
                status.blocked.store(None);
                return true;
            }
            Err(e) => e,
        };
        status.blocked.store(Some(Arc::new(error.to_string())));
        if error.is_schema() {
            tracing::error!(%error, "audit shipping stopped");
            stopping.await;
            return false;
        }
        tracing::warn!(%error, "the fleet store's schema cannot be checked; retrying");
        tokio::select! {
            () = &mut stopping => return false,
            () = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// A task beside the trail that makes a last pass when told to stop (the
/// writer has closed its file), waited for within a bound.
#[derive(Debug)]
pub(crate) struct LastPassTask {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl LastPassTask {
    /// Run `run` on the current runtime with the receiver it stops by.
    pub(crate) fn spawn<F>(run: impl FnOnce(watch::Receiver<bool>) -> F) -> LastPassTask
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let (stop, stopped) = watch::channel(false);
        LastPassTask {
            stop,
            task: tokio::spawn(run(stopped)),
        }
    }

    /// Tell it to stop and wait at most `within` for its last pass; past
    /// that, log `late` and abort it.
    pub(crate) async fn stop(self, within: Duration, late: &str) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(within, &mut task).await.is_err() {
            tracing::warn!("{late}");
            task.abort();
        }
    }
}

/// The running shipper.
#[derive(Debug)]
pub(crate) struct RunningShipper(LastPassTask);

impl RunningShipper {
    /// Ship a last time (the writer has closed its file) and stop; waits
    /// at most [`LAST_PASS`].
    pub(crate) async fn stop(self) {
        let late = "audit shipping's last pass did not finish in time; the next start resumes";
        self.0.stop(LAST_PASS, late).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_says_why_nothing_ships() {
        let status = ShipStatus::new("r1", Arc::default());
        assert!(status.healthy());
        assert_eq!(status.to_json()["shipping"], "ok");
        status.blocked.store(Some(Arc::new("cannot reach the store".into())));
        assert!(!status.healthy());
        let json = status.to_json();
        assert_eq!(json["shipping"], "waiting");
        assert_eq!(json["last_error"], "cannot reach the store");
        assert_eq!(json["replica"], "r1");
    }
}
