//! The audit index kept up to date beside the trail (`[audit] index =
//! true`).
//!
//! A thread of its own (SQLite blocks) catches `index.sqlite` up with the
//! audit files every second, and once more after the audit writer has
//! closed, so `tollgate audit query` and `tollgate usage`
//! find it current. Off the request path: the writer never waits for it;
//! a failure is logged once, shown by `tollgate_audit_index_healthy`, and
//! retried; the files stay the record.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use prometheus::{IntCounter, IntGauge, Registry};
use tollgate_config::Loaded;
use tollgate_index::Index;

/// How often the index catches up.
const INTERVAL: Duration = Duration::from_secs(1);

/// The indexer's metrics.
#[derive(Debug, Clone)]
pub(crate) struct IndexMetrics {
    records: IntCounter,
    healthy: IntGauge,
}

impl IndexMetrics {
    pub(crate) fn register(registry: &Registry) -> prometheus::Result<IndexMetrics> {
        let records = IntCounter::new(
            "tollgate_audit_index_records_total",
            "Call records added to the audit index (index.sqlite).",
        )?;
        let healthy = IntGauge::new(
            "tollgate_audit_index_healthy",
            "1 while the audit index keeps up with the trail, 0 after its last update failed.",
        )?;
        registry.register(Box::new(records.clone()))?;
        registry.register(Box::new(healthy.clone()))?;
        healthy.set(1);
        Ok(IndexMetrics { records, healthy })
    }
}

/// The audit directory to index, when `[audit]` writes one and indexes it.
pub(crate) fn directory(loaded: &Loaded) -> Option<PathBuf> {
    let audit = &loaded.config.audit;
    (audit.enabled && audit.index).then(|| audit.directory_for(&loaded.path))
}

/// The running indexer.
#[derive(Debug)]
pub(crate) struct Indexer {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Indexer {
    /// Start indexing `dir`.
    pub(crate) fn start(dir: PathBuf, metrics: IndexMetrics) -> std::io::Result<Indexer> {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tollgate-audit-index".into())
            .spawn(move || run(&dir, &stopped, &metrics))?;
        Ok(Indexer { stop, thread })
    }

    /// Catch up a last time (the writer has closed) and stop.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

fn run(dir: &PathBuf, stopped: &mpsc::Receiver<()>, metrics: &IndexMetrics) {
    let path = Index::path_for(dir);
    let mut index: Option<Index> = None;
    loop {
        let last = !matches!(stopped.recv_timeout(INTERVAL), Err(RecvTimeoutError::Timeout));
        // The open index, or a fresh open after a failure.
        let open = index.take().map_or_else(|| Index::open(&path), Ok);
        let result = open.and_then(|mut open| {
            let progress = open.update(std::slice::from_ref(dir));
            index = Some(open);
            progress
        });
        match result {
            Ok(progress) => {
                metrics.records.inc_by(progress.records);
                if metrics.healthy.get() == 0 {
                    tracing::info!(index = %path.display(), "audit index caught up again");
                }
                metrics.healthy.set(1);
            }
            Err(error) => {
                if metrics.healthy.get() == 1 {
                    tracing::warn!(index = %path.display(), %error, "audit index not updated; retrying every second");
                }
                metrics.healthy.set(0);
                // Reopen next time: the file may have been replaced.
                index = None;
            }
        }
        if last {
            return;
        }
    }
}
