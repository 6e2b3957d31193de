//! The writer thread: drains the queue, frames records into the chain,
//! writes them at once and syncs them by group commit.
//!
//! One loop turn takes every queued message (up to [`MAX_BATCH`]), writes
//! the batch with one `write`, and calls `fdatasync` when a strict record or
//! a flush waits, when `sync_records` records are unsynced, or when the
//! oldest unsynced record is `sync_interval` old. Strict callers are
//! answered only after that sync. In batch durability the writer then
//! sleeps for [`GATHER`] (at most half of `sync_interval`) so that records
//! arriving meanwhile are queued without waking it: under load one
//! wake-up, one `write` and one hash pass serve many records. Records
//! dropped by callers (queue full) or lost to a failed write are announced
//! by a `gap` line.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::oneshot;

use super::trail::Trail;
use super::{Commit, CommitObserver, Shared};
use crate::chain::{Gap, LineKind};
use crate::error::AuditError;
use crate::otlp::{OtlpFeed, OtlpItem};
use crate::record::CallRecord;

/// Most messages taken in one turn.
const MAX_BATCH: usize = 4096;
/// How long records gather between busy turns in batch durability.
pub(crate) const GATHER: Duration = Duration::from_millis(2);
/// Longest sleep when idle (to announce drops and rotate on time).
const IDLE_TICK: Duration = Duration::from_secs(1);

pub(crate) type Ack = oneshot::Sender<Result<(), AuditError>>;

/// A strict record's acknowledgement and its queue slot.
pub(crate) struct Durable {
    pub(crate) ack: Ack,
    pub(crate) _slot: tokio::sync::OwnedSemaphorePermit,
}

pub(crate) enum Msg {
    Record {
        rec: Box<CallRecord>,
        queued: Instant,
        durable: Option<Durable>,
    },
    Flush(Ack),
    Close(Ack),
}

pub(crate) struct Writer {
    pub(crate) rx: Receiver<Msg>,
    pub(crate) trail: Trail,
    pub(crate) shared: Arc<Shared>,
    pub(crate) sync_interval: Duration,
    pub(crate) sync_records: usize,
    pub(crate) otlp: Option<OtlpFeed>,
    pub(crate) observer: Option<CommitObserver>,
    /// Batch durability: after a busy turn, let records gather this long
    /// before the next one (zero in strict durability).
    pub(crate) gather: Duration,
    pub(crate) state: State,
}

/// What waits for the next sync.
#[derive(Default)]
pub(crate) struct State {
    waiters: Vec<Ack>,
    unsynced: usize,
    oldest: Option<Instant>,
    lost: u64,
    exports: Vec<OtlpItem>,
}

impl Writer {
    pub(crate) fn run(mut self) {
        loop {
            let (closing, busy) = match self.rx.recv_timeout(self.timeout()) {
                Ok(first) => (self.take_batch(first), true),
                Err(RecvTimeoutError::Timeout) => {
                    self.announce_gap();
                    (None, false)
                }
                Err(RecvTimeoutError::Disconnected) => (Some(None), false),
            };
            self.write();
            if closing.is_some() || self.sync_due() {
                self.commit();
            }
            if let Some(ack) = closing {
                self.close(ack);
                return;
            }
            if self.trail.rotation_due() {
                self.rotate();
            }
            if busy && !self.gather.is_zero() {
                // While the writer sleeps, callers queue without waking it:
                // one wake-up and one `write` serve many records.
                std::thread::sleep(self.gather);
            }
        }
    }

    fn rotate(&mut self) {
        self.seal("rotate");
        // Open the next file now; a failure is retried on the next record.
        let _ = self.trail.ensure_open();
    }

    fn timeout(&self) -> Duration {
        let sync = self
            .state
            .oldest
            .map(|t| self.sync_interval.saturating_sub(t.elapsed()));
        let rotate = self.trail.until_rotation();
        [Some(IDLE_TICK), sync, rotate]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(IDLE_TICK)
    }

    /// Handle `first` and everything queued behind it; `Some` when a close
    /// was requested (with its acknowledgement).
    fn take_batch(&mut self, first: Msg) -> Option<Option<Ack>> {
        self.announce_gap();
        let mut next = Some(first);
        let mut taken = 0;
        while let Some(msg) = next.take() {
            taken += 1;
            match msg {
                Msg::Record { rec, queued, durable } => self.push_record(&rec, queued, durable),
                Msg::Flush(ack) => {
                    self.state.waiters.push(ack);
                    self.state.oldest.get_or_insert_with(Instant::now);
                }
                Msg::Close(ack) => return Some(Some(ack)),
            }
            if self.trail.rotation_due() {
                // Keep files near `rotate_bytes` even under a long batch.
                self.write();
                self.rotate();
            }
            if taken < MAX_BATCH {
                next = self.rx.try_recv().ok();
            }
        }
        None
    }

    fn push_record(&mut self, rec: &CallRecord, queued: Instant, durable: Option<Durable>) {
        if durable.is_none() {
            self.shared.depth.fetch_sub(1, Relaxed);
        }
        match self.trail.push(LineKind::Call, rec) {
            Ok((seq, hash, line)) => {
                if let Some(feed) = &self.otlp {
                    self.state.exports.push(feed.item(rec, seq, &hash, line));
                }
                self.state.unsynced += 1;
                let oldest = self.state.oldest.get_or_insert(queued);
                *oldest = (*oldest).min(queued);
                if let Some(d) = durable {
                    self.state.waiters.push(d.ack);
                }
            }
            Err(e) => {
                self.state.lost += 1;
                self.shared.write_errors.fetch_add(1, Relaxed);
                self.shared.healthy.store(false, Relaxed);
                if let Some(d) = durable {
                    let _ = d.ack.send(Err(e));
                }
            }
        }
    }

    /// Write a `gap` line for records dropped or lost since the last one.
    fn announce_gap(&mut self) {
        let dropped = self.shared.dropped_pending.swap(0, Relaxed);
        let lost = std::mem::take(&mut self.state.lost);
        if dropped + lost == 0 {
            return;
        }
        let reason = match (dropped > 0, lost > 0) {
            (true, true) => "queue_full,write_failed",
            (true, false) => "queue_full",
            _ => "write_failed",
        };
        let gap = Gap {
            time: SystemTime::now(),
            dropped: dropped + lost,
            reason,
        };
        if self.trail.push(LineKind::Gap, &gap).is_err() {
            self.shared.dropped_pending.fetch_add(dropped, Relaxed);
            self.state.lost += lost;
        } else {
            self.state.unsynced += 1;
            self.state.oldest.get_or_insert_with(Instant::now);
        }
    }

    fn write(&mut self) {
        match self.trail.write() {
            Ok(calls) => {
                self.shared.written.fetch_add(calls, Relaxed);
                if let Some(feed) = &self.otlp {
                    feed.send(std::mem::take(&mut self.state.exports), &self.shared);
                }
            }
            Err(failure) => {
                self.shared.written.fetch_add(failure.written_calls, Relaxed);
                self.state.lost += failure.lost_calls;
                self.state.exports.clear();
                self.fail_waiters(&failure.error);
            }
        }
    }

    fn sync_due(&self) -> bool {
        !self.state.waiters.is_empty()
            || self.state.unsynced >= self.sync_records
            || self.state.oldest.is_some_and(|t| t.elapsed() >= self.sync_interval)
    }

    /// `fdatasync`, then answer everyone waiting for it.
    fn commit(&mut self) {
        if self.state.unsynced == 0 && self.state.waiters.is_empty() {
            self.state.oldest = None;
            return;
        }
        let started = Instant::now();
        let result = if self.trail.is_open() {
            self.trail.sync()
        } else {
            // Nothing could be written since the last failure.
            self.trail.ensure_open()
        };
        match result {
            Ok(()) => {
                let commit = Commit {
                    records: self.state.unsynced,
                    sync: started.elapsed(),
                    oldest: self.state.oldest.map_or(Duration::ZERO, |t| t.elapsed()),
                };
                self.shared.record_commit(&commit);
                self.shared.publish_head(self.trail.head());
                if let Some(observe) = &self.observer {
                    observe(&commit);
                }
                for ack in self.state.waiters.drain(..) {
                    let _ = ack.send(Ok(()));
                }
            }
            Err(e) => self.fail_waiters(&e),
        }
        self.state.unsynced = 0;
        self.state.oldest = None;
    }

    fn fail_waiters(&mut self, error: &AuditError) {
        self.shared.write_errors.fetch_add(1, Relaxed);
        self.shared.healthy.store(false, Relaxed);
        tracing::error!(%error, "audit write failed");
        for ack in self.state.waiters.drain(..) {
            let _ = ack.send(Err(error.clone()));
        }
    }

    /// Seal the open file: seal line, write, sync.
    fn seal(&mut self, reason: &'static str) {
        if !self.trail.is_open() {
            return;
        }
        if self.trail.push_seal(reason).is_ok() {
            self.write();
            self.state.unsynced += 1;
            self.commit();
            self.trail.finish_file();
        }
    }

    fn close(mut self, ack: Option<Ack>) {
        self.shared.closed.store(true, Relaxed);
        self.announce_gap();
        self.write();
        self.commit();
        self.seal("shutdown");
        let result = if self.shared.healthy.load(Relaxed) {
            Ok(())
        } else {
            Err(AuditError::Write {
                path: std::path::PathBuf::new(),
                source: Arc::new(std::io::Error::other("the audit trail had write failures")),
            })
        };
        // Answer records that raced with the close.
        while let Ok(msg) = self.rx.try_recv() {
            if let Msg::Record { durable, .. } = msg {
                match durable {
                    Some(d) => {
                        let _ = d.ack.send(Err(AuditError::Closed));
                    }
                    None => self.shared.count_drop_after_close(),
                }
            }
        }
        if let Some(ack) = ack {
            let _ = ack.send(result);
        }
    }
}
