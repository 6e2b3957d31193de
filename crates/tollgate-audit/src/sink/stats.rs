//! Counters shared by the handles and the writer thread, for metrics and
//! readiness.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::checkpoint::ChainHead;

/// One group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    /// Lines made durable.
    pub records: usize,
    /// Time `fdatasync` took.
    pub sync: Duration,
    /// Time from queueing the oldest of them to durable.
    pub oldest: Duration,
}

/// Counters shared by the handles and the writer.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) depth: AtomicUsize,
    pub(super) capacity: usize,
    pub(super) strict_slots: Arc<Semaphore>,
    pub(crate) dropped_pending: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(crate) written: AtomicU64,
    pub(crate) write_errors: AtomicU64,
    pub(super) commits: AtomicU64,
    pub(super) last_sync_ns: AtomicU64,
    pub(crate) healthy: AtomicBool,
    pub(crate) closed: AtomicBool,
    pub(crate) otlp_exported: AtomicU64,
    pub(crate) otlp_dropped: AtomicU64,
    /// The last durable line, published after each group commit.
    pub(super) head: Mutex<Option<ChainHead>>,
}

impl Shared {
    pub(super) fn count_drop(&self) {
        self.dropped.fetch_add(1, Relaxed);
        self.dropped_pending.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_drop_after_close(&self) {
        self.depth.fetch_sub(1, Relaxed);
        self.dropped.fetch_add(1, Relaxed);
    }

    pub(super) fn publish_head(&self, head: Option<ChainHead>) {
        if head.is_some() {
            *self.head.lock().unwrap_or_else(PoisonError::into_inner) = head;
        }
    }

    pub(crate) fn head(&self) -> Option<ChainHead> {
        self.head.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn record_commit(&self, c: &Commit) {
        self.commits.fetch_add(1, Relaxed);
        self.last_sync_ns
            .store(u64::try_from(c.sync.as_nanos()).unwrap_or(u64::MAX), Relaxed);
        self.healthy.store(true, Relaxed);
    }
}

/// A snapshot of the sink's counters, for metrics and `/readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditStats {
    /// Records queued for the writer (batch and strict).
    pub queue_depth: usize,
    /// The batch queue's bound.
    pub queue_capacity: usize,
    /// Call records written to a file.
    pub written: u64,
    /// Batch records dropped because the queue was full (or after close).
    pub dropped: u64,
    /// Failed writes, syncs or file opens.
    pub write_errors: u64,
    /// Group commits (`fdatasync` calls).
    pub commits: u64,
    /// Duration of the last `fdatasync`.
    pub last_sync: Duration,
    /// The last write or sync succeeded.
    pub healthy: bool,
    /// Records exported over OTLP.
    pub otlp_exported: u64,
    /// Records not exported over OTLP (queue full, collector down).
    pub otlp_dropped: u64,
}

impl Shared {
    pub(super) fn new(capacity: usize) -> Shared {
        Shared {
            depth: AtomicUsize::new(0),
            capacity,
            strict_slots: Arc::new(Semaphore::new(capacity)),
            dropped_pending: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            last_sync_ns: AtomicU64::new(0),
            healthy: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            otlp_exported: AtomicU64::new(0),
            otlp_dropped: AtomicU64::new(0),
            head: Mutex::new(None),
        }
    }
}
