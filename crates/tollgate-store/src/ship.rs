//! Audit shipping: each replica copies the lines of its hash-chained audit
//! files into `audit_records`, in batches, idempotently (a line is keyed by
//! replica, file and line number), resuming per file from the position
//! committed with the last batch. The files are the buffer: nothing is held
//! in memory beyond one batch, so PostgreSQL down for hours loses nothing
//! and slows no call; the shipper catches up when it is back. Off the
//! request path: the audit writer never waits for it.

mod partition;
mod read;
mod row;
mod write;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwapOption;
use partition::Month;
use write::Position;

use crate::Store;
use crate::error::{Result, StoreError};

/// What to ship, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShipSettings {
    /// This replica's name in the store.
    pub replica: String,
    /// The audit directory (its `*.jsonl` files).
    pub dir: PathBuf,
    /// Lines per transaction.
    pub batch_lines: usize,
    /// How often to look for new lines.
    pub interval: Duration,
}

impl ShipSettings {
    /// Ship `dir` as `replica`, 2,000 lines a batch, every second.
    pub fn new(replica: impl Into<String>, dir: impl Into<PathBuf>) -> ShipSettings {
        ShipSettings {
            replica: replica.into(),
            dir: dir.into(),
            batch_lines: 2000,
            interval: Duration::from_secs(1),
        }
    }
}

/// What the shipper has done and how far behind it is, for metrics and
/// readiness; shared with the shipper's task.
#[derive(Debug, Default)]
pub struct ShipStats {
    lines: AtomicU64,
    pending_bytes: AtomicU64,
    caught_up_ms: AtomicU64,
    failures: AtomicU64,
    failing: AtomicBool,
    last_error: ArcSwapOption<String>,
}

impl ShipStats {
    /// Lines shipped since start.
    pub fn lines(&self) -> u64 {
        self.lines.load(Ordering::Relaxed)
    }

    /// Bytes of complete and in-progress lines not shipped yet, at the last
    /// pass.
    pub fn pending_bytes(&self) -> u64 {
        self.pending_bytes.load(Ordering::Relaxed)
    }

    /// How long ago the store last held every line (zero when it does):
    /// the shipping lag.
    pub fn lag(&self, now: SystemTime) -> Duration {
        let at = self.caught_up_ms.load(Ordering::Relaxed);
        if at == 0 {
            return Duration::ZERO;
        }
        now.duration_since(UNIX_EPOCH + Duration::from_millis(at))
            .unwrap_or_default()
    }

    /// Passes that failed since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Whether the last pass failed.
    pub fn failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// Why the last failed pass failed (kept after later passes succeed).
    pub fn last_error(&self) -> Option<Arc<String>> {
        self.last_error.load_full()
    }

    fn record(&self, pass: &Result<Progress>, started: SystemTime) {
        match pass {
            Ok(p) => {
                self.lines.fetch_add(p.lines, Ordering::Relaxed);
                self.pending_bytes.store(p.pending_bytes, Ordering::Relaxed);
                self.failing.store(false, Ordering::Relaxed);
                if p.pending_bytes == 0 {
                    self.caught_up_ms.store(0, Ordering::Relaxed);
                    return;
                }
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                self.failing.store(true, Ordering::Relaxed);
                self.last_error.store(Some(Arc::new(e.to_string())));
            }
        }
        // Behind: keep the time it was last caught up (or start counting).
        let ms = started
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let _ = self
            .caught_up_ms
            .compare_exchange(0, ms, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// What one pass shipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Files with new lines.
    pub files: u64,
    /// Lines shipped.
    pub lines: u64,
    /// Bytes shipped.
    pub bytes: u64,
    /// Bytes not shipped yet (a line being written).
    pub pending_bytes: u64,
}

/// Ships one replica's audit files to the store.
#[derive(Debug)]
pub struct Shipper {
    store: Store,
    settings: ShipSettings,
    /// Per file name; `None` until read from the store (and again after an
    /// error, when a commit's outcome is unknown).
    positions: Option<HashMap<String, Position>>,
    months: HashSet<Month>,
    stats: Arc<ShipStats>,
}

impl Shipper {
    /// A shipper of `settings.dir` to `store`.
    pub fn new(store: Store, settings: ShipSettings) -> Shipper {
        Shipper {
            store,
            settings,
            positions: None,
            months: HashSet::new(),
            stats: Arc::default(),
        }
    }

    /// Its statistics, to read while it runs.
    pub fn stats(&self) -> Arc<ShipStats> {
        Arc::clone(&self.stats)
    }

    /// Ship every complete line not shipped yet.
    ///
    /// # Errors
    ///
    /// The store cannot be reached or refused a batch (what was committed
    /// stays; the next pass resumes there), an audit file cannot be read,
    /// or a file is shorter than what was shipped of it, or its shipped
    /// lines changed ([`StoreError::Conflict`]).
    pub async fn pass(&mut self) -> Result<Progress> {
        let started = SystemTime::now();
        let result = self.ship_all().await;
        if result.is_err() {
            self.positions = None;
        }
        self.stats.record(&result, started);
        result
    }

    /// Ship every `settings.interval` until `shutdown` resolves, then once
    /// more (the audit writer has sealed its file by then). Failures are
    /// logged and retried, backing off to 30 s.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut wait = self.settings.interval;
        loop {
            match self.pass().await {
                Ok(_) => wait = self.settings.interval,
                Err(e) => {
                    tracing::warn!(error = %e, "audit shipping failed; retrying");
                    wait = (wait * 2).min(Duration::from_secs(30));
                }
            }
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        if let Err(e) = self.pass().await {
            tracing::warn!(error = %e, "audit shipping at shutdown failed; the next start resumes");
        }
    }

    async fn ship_all(&mut self) -> Result<Progress> {
        let mut client = self.store.client().await?;
        let mut positions = match self.positions.take() {
            Some(p) => p,
            None => write::positions(&client, &self.settings.replica).await?,
        };
        let files = tollgate_audit::trail_files(std::slice::from_ref(&self.settings.dir))
            .map_err(|(path, source)| StoreError::Io { path, source })?;
        let mut progress = Progress::default();
        for (i, path) in files.iter().enumerate() {
            let newest = i + 1 == files.len();
            let file = self.ship_file(&mut client, path, newest, &mut positions).await?;
            progress.files += u64::from(file.lines > 0);
            progress.lines += file.lines;
            progress.bytes += file.bytes;
            progress.pending_bytes += file.pending_bytes;
        }
        self.positions = Some(positions);
        Ok(progress)
    }

    /// Ship the new lines of one file. The next batch is read while the
    /// last one is written, so parsing and hashing in the gateway and
    /// writing in PostgreSQL overlap.
    async fn ship_file(
        &mut self,
        client: &mut deadpool_postgres::Object,
        path: &Path,
        newest: bool,
        positions: &mut HashMap<String, Position>,
    ) -> Result<Progress> {
        let name = file_name(path);
        let size = std::fs::metadata(path)
            .map_err(|source| StoreError::Io {
                path: path.to_owned(),
                source,
            })?
            .len();
        let mut at = positions.get(&name).copied().unwrap_or_default();
        if at.bytes > size {
            return Err(StoreError::Shrunk {
                path: path.to_owned(),
                shipped: at.bytes,
            });
        }
        let mut progress = Progress::default();
        let fallback = tollgate_audit::file_opened_at(path).unwrap_or(UNIX_EPOCH);
        let mut next = (at.bytes < size).then(|| self.read(path, at, fallback));
        while let Some(reading) = next.take() {
            let batch = joined(reading, path).await?;
            if batch.columns.len() == 0 {
                // A partial line: being written in the newest file, or a
                // crash's torn tail in an older one (never completed).
                if newest {
                    progress.pending_bytes = size - at.bytes;
                }
                break;
            }
            let to = Position {
                bytes: at.bytes + batch.bytes,
                lines: at.lines + batch.columns.len() as u64,
            };
            if to.bytes < size {
                next = Some(self.read(path, to, batch.last_time.unwrap_or(fallback)));
            }
            self.ensure_months(client, &batch).await?;
            write::write_batch(client, &self.settings.replica, &name, &batch.columns, to).await?;
            positions.insert(name.clone(), to);
            progress.lines += to.lines - at.lines;
            progress.bytes += batch.bytes;
            at = to;
        }
        Ok(progress)
    }

    /// Create the partitions of the batch's months not seen yet.
    async fn ensure_months(&mut self, client: &mut deadpool_postgres::Object, batch: &read::Batch) -> Result<()> {
        for month in batch.columns.time.iter().map(|t| Month::of(*t)) {
            if self.months.insert(month) {
                partition::ensure(client, month).await?;
            }
        }
        Ok(())
    }

    /// Start reading the next batch of `path` after `at`, off the async
    /// threads.
    fn read(&self, path: &Path, at: Position, fallback: SystemTime) -> Reading {
        let (owned, max) = (path.to_owned(), self.settings.batch_lines.max(1));
        tokio::task::spawn_blocking(move || read::read_batch(&owned, at.bytes, at.lines, max, fallback))
    }
}

/// A batch being read.
type Reading = tokio::task::JoinHandle<std::io::Result<read::Batch>>;

/// The batch `reading` read from `path`.
async fn joined(reading: Reading, path: &Path) -> Result<read::Batch> {
    let io = |source| StoreError::Io {
        path: path.to_owned(),
        source,
    };
    reading.await.map_err(|e| io(std::io::Error::other(e)))?.map_err(io)
}

/// How a file is named in the store: its file name (unique per replica).
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
