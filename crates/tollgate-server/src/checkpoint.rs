//! Signed checkpoints of this replica's audit trail (`[audit]
//! checkpoint_key`), beside the trail.
//!
//! Every `checkpoint_interval` a task on the control runtime takes the
//! head the audit writer last made durable, signs it, logs it (the
//! `tollgate::audit::checkpoint` event, which reaches a log pipeline or
//! OTLP with the other logs) and, with a fleet store, stores it there,
//! where no one who controls only this host can change it. Once the writer
//! has sealed its file at shutdown, the seal is signed too. Off the request
//! path: a store that is down only delays storing (the newest checkpoint
//! is retried, and covers every line before it).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use prometheus::{IntCounterVec, IntGauge, Opts, Registry};
use tokio::sync::watch;
use tollgate_audit::{AuditHandle, ChainHead, Checkpoint, CheckpointSigner};
use tollgate_config::Loaded;
use tollgate_store::Store;

use crate::error::GatewayError;
use crate::shipping::LastPassTask;

/// The longest shutdown waits to store the last checkpoint.
const LAST_PASS: Duration = Duration::from_secs(5);

/// Checkpoints, set up but not started.
pub(crate) struct Checkpointer {
    signer: CheckpointSigner,
    replica: String,
    audit: AuditHandle,
    store: Option<Store>,
    interval: Duration,
    metrics: CheckpointMetrics,
    /// The newest head signed, and its checkpoint when not stored yet.
    last: Option<ChainHead>,
    unstored: Option<Checkpoint>,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpointer")
            .field("replica", &self.replica)
            .field("key_id", &self.signer.key_id())
            .finish_non_exhaustive()
    }
}

/// `tollgate_audit_checkpoints_total{outcome}` and the time of the last
/// stored one.
#[derive(Clone)]
pub(crate) struct CheckpointMetrics {
    outcomes: IntCounterVec,
    last_stored: IntGauge,
}

impl CheckpointMetrics {
    pub(crate) fn new() -> prometheus::Result<CheckpointMetrics> {
        let outcomes = IntCounterVec::new(
            Opts::new(
                "tollgate_audit_checkpoints_total",
                "Signed checkpoints of the audit chain head, by outcome: `signed`, `stored` in the fleet store, `store_failed`.",
            ),
            &["outcome"],
        )?;
        let last_stored = IntGauge::new(
            "tollgate_audit_checkpoint_stored_timestamp_seconds",
            "When the newest checkpoint was stored in the fleet store (Unix time; 0 before the first).",
        )?;
        Ok(CheckpointMetrics { outcomes, last_stored })
    }

    /// Its collectors, to describe.
    #[cfg(test)]
    pub(crate) fn collectors(&self) -> [&dyn prometheus::core::Collector; 2] {
        [&self.outcomes, &self.last_stored]
    }

    fn register(registry: &Registry) -> prometheus::Result<CheckpointMetrics> {
        let metrics = CheckpointMetrics::new()?;
        registry.register(Box::new(metrics.outcomes.clone()))?;
        registry.register(Box::new(metrics.last_stored.clone()))?;
        Ok(metrics)
    }
}

/// The checkpointer of `[audit] checkpoint_key`, when it is set and the
/// trail is written; `store` is the fleet store, when configured.
///
/// # Errors
///
/// The key is not an Ed25519 PKCS#8 key, or the metrics cannot register.
pub(crate) fn setup(
    loaded: &Loaded,
    audit: &AuditHandle,
    store: Option<Store>,
    registry: &Registry,
) -> Result<Option<Checkpointer>, GatewayError> {
    let Some(settings) = &loaded.checkpoint else {
        return Ok(None);
    };
    let config = &loaded.config.audit;
    if !audit.is_enabled() {
        tracing::warn!("[audit] checkpoint_key is set but [audit] enabled = false: no trail to checkpoint");
        return Ok(None);
    }
    let signer = CheckpointSigner::from_pkcs8(settings.key.expose())
        .map_err(|e| GatewayError::Audit(format!("{}: audit.checkpoint_key: {e}", loaded.path.display())))?;
    if !config
        .checkpoint_public_keys
        .iter()
        .any(|k| k.trim() == signer.public_key())
    {
        tracing::warn!(
            public_key = %signer.public_key(),
            "[audit] checkpoint_public_keys does not list this replica's key: add it, or verify --checkpoints fails"
        );
    }
    Ok(Some(Checkpointer {
        signer,
        replica: settings.replica.clone(),
        audit: audit.clone(),
        store,
        interval: config.checkpoint_interval,
        metrics: CheckpointMetrics::register(registry)?,
        last: None,
        unstored: None,
    }))
}

impl Checkpointer {
    /// Start checkpointing on the current runtime.
    pub(crate) fn start(self) -> RunningCheckpointer {
        RunningCheckpointer(LastPassTask::spawn(|stopped| self.run(stopped)))
    }

    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        tracing::info!(replica = %self.replica, key_id = %self.signer.key_id(), "signing audit checkpoints");
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !*stop.borrow_and_update() {
            tokio::select! {
                _ = ticks.tick() => self.once().await,
                changed = stop.changed() => if changed.is_err() { break },
            }
        }
        // The writer has sealed its file: sign the seal.
        self.once().await;
    }

    /// Sign the head if it moved, and store what is not stored yet.
    async fn once(&mut self) {
        if let Some(head) = self.audit.head().filter(|h| self.last.as_ref() != Some(h)) {
            let checkpoint = self.signer.sign(&self.replica, head.clone(), SystemTime::now());
            log(&checkpoint);
            self.metrics.outcomes.with_label_values(&["signed"]).inc();
            self.last = Some(head);
            self.unstored = Some(checkpoint);
        }
        let (Some(store), Some(checkpoint)) = (&self.store, &self.unstored) else {
            return;
        };
        match store.put_checkpoint(checkpoint).await {
            Ok(()) => {
                self.metrics.outcomes.with_label_values(&["stored"]).inc();
                self.metrics.last_stored.set(unix_secs(checkpoint.time));
                self.unstored = None;
            }
            Err(error) => {
                self.metrics.outcomes.with_label_values(&["store_failed"]).inc();
                tracing::warn!(%error, "audit checkpoint not stored in the fleet store; retrying");
            }
        }
    }
}

/// The checkpoint as a log event: enough to verify it from the log alone.
fn log(c: &Checkpoint) {
    tracing::info!(
        target: "tollgate::audit::checkpoint",
        replica = %c.replica,
        file = %c.head.file,
        line = c.head.line,
        seq = c.head.seq,
        head = %c.head.hash,
        time = unix_secs(c.time),
        key_id = %c.key_id,
        signature = %STANDARD.encode(&c.signature),
        "audit checkpoint signed"
    );
}

fn unix_secs(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The running checkpointer.
#[derive(Debug)]
pub(crate) struct RunningCheckpointer(LastPassTask);

impl RunningCheckpointer {
    /// Sign the sealed head and stop; waits at most [`LAST_PASS`]. Call
    /// after the audit writer closed.
    pub(crate) async fn stop(self) {
        let late = "the last audit checkpoint was not stored in time; it is in the log";
        self.0.stop(LAST_PASS, late).await;
    }
}
