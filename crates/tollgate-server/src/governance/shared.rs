//! Catalog approvals shared by every replica through the fleet store
//! (`[store] postgres` with `[store] approvals`, the default): approvals
//! are rows of `catalog_approvals`, put in force beside the lock file's
//! (`catalog::Approvals`: each definition's newer approval wins).
//!
//! Before serving, the store's approvals are read whole (bounded: a store
//! that does not answer leaves the lock file's in force, and the gateway
//! serves). Then a task on the control runtime listens on a connection of
//! its own (`LISTEN`) and reads them again whenever one is announced, so a
//! new approval is in force on every replica within a second; every 30 s
//! it checks that connection and reads them whole anyway (a missed
//! announcement is caught up), and when the connection is lost it
//! reconnects, backing off to 30 s, and reads whole on reconnecting. A
//! console approval on this replica is written as a row and in force here
//! at once; while the store cannot be reached it is refused
//! (`ApprovalError::Store`, 503) and the approvals in force keep serving.
//! Off the request path: the gate only reads the union.

mod metrics;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwapOption;
use serde_json::{Value, json};
use tokio::time::{Instant, MissedTickBehavior};
use tollgate_catalog::{Approval, Definition};
use tollgate_config::Loaded;
use tollgate_store::{Store, StoreError, StoredApprovals};

pub(crate) use metrics::{ApprovalMetrics, Trigger};

use crate::catalog::Approvals;
use crate::error::GatewayError;

/// How often the store's approvals are read whole while listening.
const RECONCILE: Duration = Duration::from_secs(30);

/// The longest the listening connection may take to answer a check.
const PING: Duration = Duration::from_secs(5);

/// The longest the first read waits before the gateway serves without it.
const START_READ: Duration = Duration::from_secs(10);

/// The first wait before listening again; doubled up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);

/// The approvals of the fleet store, kept in force on this replica.
#[derive(Debug)]
pub(crate) struct SharedApprovals {
    store: Store,
    migrate: bool,
    approvals: Arc<Approvals>,
    metrics: ApprovalMetrics,
    listening: AtomicBool,
    last_read: ArcSwapOption<SystemTime>,
    last_error: ArcSwapOption<String>,
    /// The rows refused at the last read (logged when they change).
    refused: ArcSwapOption<Vec<String>>,
}

/// The shared approvals of `[store]`, when the store holds approvals;
/// their metrics registered on `registry`.
///
/// # Errors
///
/// The store's settings cannot describe a connection; a metric is
/// registered twice.
pub(crate) fn setup(
    loaded: &Loaded,
    approvals: Arc<Approvals>,
    registry: &prometheus::Registry,
) -> Result<Option<Arc<SharedApprovals>>, GatewayError> {
    let Some(pg) = loaded.store.as_ref().filter(|pg| pg.approvals) else {
        return Ok(None);
    };
    let mut settings = crate::settings::store(pg);
    // Approvals are few and rare: two connections are plenty.
    settings.pool_size = settings.pool_size.min(2);
    let store = Store::new(&settings).map_err(|e| GatewayError::Store(e.to_string()))?;
    let metrics = ApprovalMetrics::new()?;
    metrics.register(registry)?;
    Ok(Some(Arc::new(SharedApprovals {
        store,
        migrate: pg.migrate,
        approvals,
        metrics,
        listening: AtomicBool::new(false),
        last_read: ArcSwapOption::empty(),
        last_error: ArcSwapOption::empty(),
        refused: ArcSwapOption::empty(),
    })))
}

impl SharedApprovals {
    /// Before serving: make the schema this binary's and read the store's
    /// approvals, waiting at most [`START_READ`].
    ///
    /// # Errors
    ///
    /// The store's schema is refused ([`StoreError::is_schema`]). A store
    /// that cannot be reached is not an error: the lock file's approvals
    /// serve, and the store's are read once it answers.
    pub(crate) async fn prepare(&self) -> Result<(), GatewayError> {
        let first = async {
            self.store.prepare(self.migrate).await?;
            self.read(Trigger::Start).await
        };
        match tokio::time::timeout(START_READ, first).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if e.is_schema() => Err(GatewayError::Store(e.to_string())),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the fleet store is not reachable: serving with the lock file's approvals until it answers");
                Ok(())
            }
            Err(_) => {
                tracing::warn!(
                    "the fleet store did not answer in time: serving with the lock file's approvals until it does"
                );
                Ok(())
            }
        }
    }

    /// Approve `definition` of `server` as `by`: a row in the store, in
    /// force here at once and on the other replicas when they hear of it.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused the row: nothing was
    /// approved.
    pub(crate) async fn approve(
        &self,
        server: &str,
        definition: &Definition,
        by: &str,
        note: Option<&str>,
    ) -> Result<Approval, StoreError> {
        let written = self.store.approve(server, definition, by, note).await;
        self.metrics.written(written.is_ok());
        match &written {
            Ok(a) => {
                tracing::info!(server, kind = %a.kind, name = %a.key, revision = %a.revision, approved_by = by, "catalog approval written to the fleet store");
                self.approvals.add_stored(a.clone());
            }
            Err(e) => {
                tracing::warn!(server, name = %definition.key, error = %e, "catalog approval not written: the fleet store did not take it")
            }
        }
        written
    }

    /// Listen for approvals and keep them in force, until aborted.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut wait = FIRST_RETRY;
        loop {
            match self.listen().await {
                Ok(()) => wait = FIRST_RETRY,
                Err(e) if e.is_schema() => {
                    tracing::error!(error = %e, "approvals in the fleet store are not read: the schema is refused");
                    self.last_error.store(Some(Arc::new(e.to_string())));
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?wait, "cannot listen for catalog approvals in the fleet store; the approvals in force keep serving");
                    self.last_error.store(Some(Arc::new(e.to_string())));
                }
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_RETRY);
        }
    }

    /// Listen on a new connection, read whole, then read on every
    /// announcement and every [`RECONCILE`], until the connection ends.
    async fn listen(&self) -> Result<(), StoreError> {
        self.store.prepare(self.migrate).await?;
        let mut feed = self.store.listen_approvals().await?;
        self.set_listening(true);
        tracing::info!("listening for catalog approvals in the fleet store");
        let _ = self.read(Trigger::Connect).await;
        let mut reconcile = tokio::time::interval_at(Instant::now() + RECONCILE, RECONCILE);
        reconcile.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = feed.changed() => {
                    if changed.is_none() {
                        break;
                    }
                    let _ = self.read(Trigger::Notify).await;
                }
                _ = reconcile.tick() => {
                    if !matches!(tokio::time::timeout(PING, feed.ping()).await, Ok(Ok(()))) {
                        break;
                    }
                    let _ = self.read(Trigger::Reconcile).await;
                }
            }
        }
        self.set_listening(false);
        let ended = "the connection listening for approvals ended";
        self.last_error.store(Some(Arc::new(ended.to_owned())));
        tracing::warn!("the connection listening for catalog approvals in the fleet store ended; reconnecting");
        Ok(())
    }

    fn set_listening(&self, on: bool) {
        self.listening.store(on, Ordering::Relaxed);
        self.metrics.listening(on);
    }

    /// Read the store's approvals whole and put them in force.
    async fn read(&self, trigger: Trigger) -> Result<(), StoreError> {
        match self.store.approvals().await {
            Ok(stored) => {
                self.apply(trigger, stored);
                Ok(())
            }
            Err(e) => {
                self.metrics.read_failed(trigger);
                tracing::warn!(error = %e, trigger = trigger.as_str(), "catalog approvals not read from the fleet store; the approvals in force keep serving");
                self.last_error.store(Some(Arc::new(e.to_string())));
                Err(e)
            }
        }
    }

    fn apply(&self, trigger: Trigger, stored: StoredApprovals) {
        let StoredApprovals { lock, refused } = stored;
        if self.refused.load().as_deref() != Some(&refused) {
            for row in &refused {
                tracing::error!(row = %row, "an approval in the fleet store is refused: it approves nothing");
            }
            self.refused.store(Some(Arc::new(refused.clone())));
        }
        let before = self.approvals.stored();
        if let Some(before) = &before {
            for a in lock.iter().filter(|a| before.get(&a.server, a.kind, &a.key) != Some(a)) {
                tracing::info!(server = %a.server, kind = %a.kind, name = %a.key, revision = %a.revision, approved_by = %a.approved_by, "catalog approval read from the fleet store");
            }
        } else {
            tracing::info!(approvals = lock.len(), "catalog approvals read from the fleet store");
        }
        self.metrics.read_ok(trigger, lock.len(), refused.len());
        self.approvals.replace_store(lock);
        self.last_read.store(Some(Arc::new(SystemTime::now())));
        self.last_error.store(None);
    }

    /// `/readyz?detail`'s view: reported, never required (a replica keeps
    /// serving with the approvals it has while the store is down).
    pub(crate) fn to_json(&self) -> Value {
        let last_read = self.last_read.load_full();
        json!({
            "listening": self.listening.load(Ordering::Relaxed),
            "approvals": self.approvals.stored().map_or(0, |l| l.len()),
            "refused_rows": self.refused.load().as_ref().map_or(0, |r| r.len()),
            "last_read": last_read.map(|t| humantime::format_rfc3339_seconds(*t).to_string()),
            "last_error": self.last_error.load_full().as_deref(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tollgate_catalog::{Kind, Lock};
    use tollgate_store::StoreSettings;

    use super::*;

    /// Shared approvals over a store nobody answers at (port 1).
    fn unreachable(approvals: Arc<Approvals>) -> SharedApprovals {
        let mut settings = StoreSettings::new("postgres://tollgate@127.0.0.1:1/tollgate");
        settings.connect_timeout = Duration::from_millis(200);
        SharedApprovals {
            store: Store::new(&settings).unwrap(),
            migrate: true,
            approvals,
            metrics: ApprovalMetrics::new().unwrap(),
            listening: AtomicBool::new(false),
            last_read: ArcSwapOption::empty(),
            last_error: ArcSwapOption::empty(),
            refused: ArcSwapOption::empty(),
        }
    }

    #[tokio::test]
    async fn a_store_that_cannot_be_reached_leaves_the_lock_files_approvals_serving() {
        let approvals = Arc::new(Approvals::new(Lock::default()));
        let shared = unreachable(approvals.clone());
        shared.prepare().await.unwrap();
        let echo = Definition::new(Kind::Tool, json!({"name": "echo"})).unwrap();
        assert!(shared.approve("demo", &echo, "alice", None).await.is_err());
        assert!(approvals.current().is_empty(), "nothing was approved");
        assert!(approvals.stored().is_none());
        assert!(shared.read(Trigger::Reconcile).await.is_err());
        let status = shared.to_json();
        assert_eq!(status["listening"], false);
        assert!(
            status["last_error"]
                .as_str()
                .unwrap()
                .contains("cannot reach the store"),
            "{status}"
        );
        assert_eq!(status["last_read"], Value::Null);
    }

    #[test]
    fn a_read_puts_the_stores_approvals_in_force_and_says_so() {
        let approvals = Arc::new(Approvals::new(Lock::default()));
        let shared = unreachable(approvals.clone());
        shared.last_error.store(Some(Arc::new("down".into())));
        let mut lock = Lock::default();
        let echo = Definition::new(Kind::Tool, json!({"name": "echo"})).unwrap();
        lock.approve("demo", &echo, "alice", SystemTime::now(), None);
        let refused = vec!["catalog_approvals row 7 (demo tool \"add\"): bad".to_owned()];
        shared.apply(Trigger::Notify, StoredApprovals { lock, refused });
        assert!(approvals.current().get("demo", Kind::Tool, "echo").is_some());
        let status = shared.to_json();
        assert_eq!(
            (status["approvals"].as_u64(), status["refused_rows"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(status["last_error"], Value::Null);
        assert!(status["last_read"].is_string());
    }
}
