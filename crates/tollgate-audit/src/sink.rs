//! The file sink: the handle the request path records with, and the
//! dedicated writer thread behind it (request path step 13).
//!
//! [`AuditHandle::record`] never blocks: it moves the record into an
//! unbounded channel guarded by a counter of `queue_capacity`; when the
//! writer falls that far behind, the record is **dropped**, counted in
//! [`AuditStats::dropped`], and announced in the trail by a `gap` line. We
//! drop rather than push back because batch mode promises that the audit
//! trail never slows a call; operators alert on the drop counter, and
//! deployments that cannot lose records use strict mode.
//!
//! [`AuditHandle::record_durable`] (strict mode) waits for a queue slot
//! (backpressure, never a drop) and then for the `fdatasync` covering its
//! record; an error means the record is not known to be on disk and the
//! call must be refused.

mod stats;
mod trail;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Sender, channel};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::checkpoint::ChainHead;
use crate::error::AuditError;
use crate::otlp::{OtlpExporter, OtlpSettings};
use crate::record::CallRecord;
pub(crate) use stats::Shared;
pub use stats::{AuditStats, Commit};
use trail::{Trail, TrailConfig};
use writer::{Durable, Msg, State, Writer};

/// Called by the writer after each `fdatasync` (e.g. to feed a histogram).
pub type CommitObserver = Arc<dyn Fn(&Commit) + Send + Sync>;

/// When a call's audit record must be on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Group commit: records are written at once and synced every
    /// `sync_interval` or `sync_records`; a call never waits for the disk.
    Batch,
    /// A call is forwarded only after its record is synced; when the audit
    /// files cannot be written, calls are refused (fail closed).
    Strict,
}

/// Everything the sink needs (the server maps it from `[audit]`).
#[derive(Clone)]
pub struct SinkSettings {
    /// Directory of the audit files.
    pub directory: PathBuf,
    /// File name prefix.
    pub file_prefix: String,
    /// Batch or strict.
    pub durability: Durability,
    /// Longest wait for `fdatasync` in batch mode.
    pub sync_interval: Duration,
    /// Unsynced records that force an `fdatasync`.
    pub sync_records: usize,
    /// Records waiting for the writer before batch records are dropped.
    pub queue_capacity: usize,
    /// Rotate at this file size.
    pub rotate_bytes: u64,
    /// Rotate at this file age.
    pub rotate_interval: Duration,
    /// OTLP export, when enabled.
    pub otlp: Option<OtlpSettings>,
    /// Observer of each commit.
    pub observer: Option<CommitObserver>,
}

/// What [`AuditHandle::record`] did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a dropped record should be counted or logged"]
pub enum Recorded {
    /// Queued for the writer.
    Queued,
    /// Dropped: the queue was full or the writer has stopped.
    Dropped,
    /// Audit is disabled.
    Disabled,
}

/// Records audit records; cheap to clone, shared by every request.
#[derive(Clone)]
pub struct AuditHandle {
    tx: Option<Sender<Msg>>,
    shared: Arc<Shared>,
    durability: Durability,
}

impl std::fmt::Debug for AuditHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditHandle")
            .field("enabled", &self.tx.is_some())
            .field("durability", &self.durability)
            .field("stats", &self.stats())
            .finish()
    }
}

impl AuditHandle {
    /// A handle that records nothing (`[audit] enabled = false`).
    pub fn disabled() -> AuditHandle {
        AuditHandle {
            tx: None,
            shared: Arc::new(Shared::new(0)),
            durability: Durability::Batch,
        }
    }

    /// Whether records are written at all (`false` for
    /// [`AuditHandle::disabled`]): observers skip building them otherwise.
    pub fn is_enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// The configured durability: in strict mode the server calls
    /// [`AuditHandle::record_durable`] before forwarding a call.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Queue a record without waiting. Never blocks; drops the record (and
    /// counts it) when `queue_capacity` records are already waiting.
    pub fn record(&self, rec: CallRecord) -> Recorded {
        let Some(tx) = &self.tx else { return Recorded::Disabled };
        let s = &self.shared;
        if s.closed.load(Relaxed) {
            s.dropped.fetch_add(1, Relaxed);
            return Recorded::Dropped;
        }
        if s.depth.fetch_add(1, Relaxed) >= s.capacity {
            s.depth.fetch_sub(1, Relaxed);
            s.count_drop();
            return Recorded::Dropped;
        }
        let msg = Msg::Record {
            rec: Box::new(rec),
            queued: Instant::now(),
            durable: None,
        };
        if tx.send(msg).is_err() {
            s.depth.fetch_sub(1, Relaxed);
            s.dropped.fetch_add(1, Relaxed);
            return Recorded::Dropped;
        }
        Recorded::Queued
    }

    /// Queue a record and wait until it is on disk (`fdatasync` done).
    /// Waits for a queue slot when `queue_capacity` strict records are in
    /// flight. Ok at once when audit is disabled.
    ///
    /// # Errors
    ///
    /// [`AuditError::Write`] when it could not be written or synced,
    /// [`AuditError::Closed`] after shutdown: refuse the call (fail closed).
    pub async fn record_durable(&self, rec: CallRecord) -> Result<(), AuditError> {
        let Some(tx) = &self.tx else { return Ok(()) };
        if self.shared.closed.load(Relaxed) {
            return Err(AuditError::Closed);
        }
        let slot = self
            .shared
            .strict_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| AuditError::Closed)?;
        let (ack, done) = oneshot::channel();
        let msg = Msg::Record {
            rec: Box::new(rec),
            queued: Instant::now(),
            durable: Some(Durable { ack, _slot: slot }),
        };
        tx.send(msg).map_err(|_| AuditError::Closed)?;
        done.await.map_err(|_| AuditError::Closed)?
    }

    /// Wait until every record queued before this call is on disk.
    ///
    /// # Errors
    ///
    /// As for [`AuditHandle::record_durable`].
    pub async fn flush(&self) -> Result<(), AuditError> {
        let Some(tx) = &self.tx else { return Ok(()) };
        let (ack, done) = oneshot::channel();
        tx.send(Msg::Flush(ack)).map_err(|_| AuditError::Closed)?;
        done.await.map_err(|_| AuditError::Closed)?
    }

    /// Records waiting for the writer.
    pub fn queue_depth(&self) -> usize {
        let s = &self.shared;
        let strict = s.capacity.saturating_sub(s.strict_slots.available_permits());
        s.depth.load(Relaxed) + strict
    }

    /// Whether the last write succeeded and the writer runs (for `/readyz`
    /// in strict mode).
    pub fn is_healthy(&self) -> bool {
        self.tx.is_none() || (self.shared.healthy.load(Relaxed) && !self.shared.closed.load(Relaxed))
    }

    /// The last line of the trail known to be on disk (after the latest
    /// group commit), for signed checkpoints; `None` before the first
    /// commit and when audit is off.
    pub fn head(&self) -> Option<ChainHead> {
        self.shared.head()
    }

    /// The sink's counters.
    pub fn stats(&self) -> AuditStats {
        let s = &self.shared;
        AuditStats {
            queue_depth: self.queue_depth(),
            queue_capacity: s.capacity,
            written: s.written.load(Relaxed),
            dropped: s.dropped.load(Relaxed),
            write_errors: s.write_errors.load(Relaxed),
            commits: s.commits.load(Relaxed),
            last_sync: Duration::from_nanos(s.last_sync_ns.load(Relaxed)),
            healthy: self.is_healthy(),
            otlp_exported: s.otlp_exported.load(Relaxed),
            otlp_dropped: s.otlp_dropped.load(Relaxed),
        }
    }
}

/// Starts the file sink.
#[derive(Debug, Clone, Copy)]
pub struct AuditSink;

impl AuditSink {
    /// Open the trail (continuing the chain of the newest file in the
    /// directory), start the writer thread and, when configured, the OTLP
    /// exporter (which needs a Tokio runtime).
    ///
    /// # Errors
    ///
    /// [`AuditError::Setup`] when the directory or the first file cannot
    /// be created, or OTLP is on outside a Tokio runtime: do not serve.
    pub fn start(settings: SinkSettings) -> Result<(AuditHandle, AuditWorker), AuditError> {
        let trail = Trail::open(TrailConfig {
            dir: settings.directory.clone(),
            prefix: settings.file_prefix.clone(),
            rotate_bytes: settings.rotate_bytes,
            rotate_interval: settings.rotate_interval,
        })?;
        let shared = Arc::new(Shared::new(settings.queue_capacity));
        let (otlp_feed, otlp_task) = match &settings.otlp {
            Some(o) => {
                let (feed, task) = OtlpExporter::start(o.clone(), shared.clone())?;
                (Some(feed), Some(task))
            }
            None => (None, None),
        };
        let (tx, rx) = channel();
        let writer = Writer {
            rx,
            trail,
            shared: shared.clone(),
            sync_interval: settings.sync_interval,
            sync_records: settings.sync_records.max(1),
            otlp: otlp_feed,
            observer: settings.observer.clone(),
            gather: match settings.durability {
                Durability::Batch => writer::GATHER.min(settings.sync_interval / 2),
                Durability::Strict => Duration::ZERO,
            },
            state: State::default(),
        };
        let thread = std::thread::Builder::new()
            .name("tollgate-audit".into())
            .spawn(move || writer.run())
            .map_err(|e| AuditError::Setup {
                path: settings.directory.clone(),
                source: Arc::new(e),
            })?;
        let handle = AuditHandle {
            tx: Some(tx.clone()),
            shared,
            durability: settings.durability,
        };
        Ok((
            handle,
            AuditWorker {
                tx,
                thread,
                otlp: otlp_task,
            },
        ))
    }
}

/// The running writer (and exporter); close it on shutdown to seal the
/// last file.
#[derive(Debug)]
pub struct AuditWorker {
    tx: Sender<Msg>,
    thread: std::thread::JoinHandle<()>,
    otlp: Option<tokio::task::JoinHandle<()>>,
}

impl AuditWorker {
    /// Write everything queued, seal the file, stop the writer, then let
    /// the exporter send what it has (bounded by its timeout).
    ///
    /// # Errors
    ///
    /// The trail had a write failure that was not recovered.
    pub async fn close(self) -> Result<(), AuditError> {
        let (ack, done) = oneshot::channel();
        let result = match self.tx.send(Msg::Close(ack)) {
            Ok(()) => done.await.unwrap_or(Err(AuditError::Closed)),
            Err(_) => Err(AuditError::Closed),
        };
        drop(self.tx);
        if let Some(task) = self.otlp {
            let _ = task.await;
        }
        result
    }

    /// [`AuditWorker::close`] for code outside a runtime (tools, tests).
    /// With OTLP on, the exporter is left to finish on its runtime.
    ///
    /// # Errors
    ///
    /// As for [`AuditWorker::close`].
    pub fn close_blocking(self) -> Result<(), AuditError> {
        let (ack, done) = oneshot::channel();
        let result = match self.tx.send(Msg::Close(ack)) {
            Ok(()) => done.blocking_recv().unwrap_or(Err(AuditError::Closed)),
            Err(_) => Err(AuditError::Closed),
        };
        let _ = self.thread.join();
        result
    }
}
