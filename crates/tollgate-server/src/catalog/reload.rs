//! Reloading `catalog.lock` while the gateway runs: on SIGHUP and when the
//! file changes (polled: it also sees a ConfigMap's symlink swap). A new
//! lock is parsed whole and put in force atomically; an invalid one is
//! refused with its file:line errors in the log, counted, and the lock in
//! force keeps serving.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tollgate_catalog::Lock;

use crate::catalog::Approvals;

/// How often the lock file is looked at for a change.
const POLL: Duration = Duration::from_secs(1);

/// The reload state of the lock, for `/catalog` and the metrics.
#[derive(Debug, Default)]
pub(crate) struct LockStatus {
    /// Reloads that put a new lock in force.
    pub(crate) reloads: AtomicU64,
    /// Reloads refused (invalid locks).
    pub(crate) failures: AtomicU64,
    /// Whether the last attempt succeeded.
    pub(crate) last_ok: AtomicBool,
}

/// The lock file and its state.
#[derive(Debug)]
pub(crate) struct LockFile {
    pub(crate) path: PathBuf,
    pub(crate) status: LockStatus,
}

impl LockFile {
    /// The lock file at `path`, loaded at start.
    pub(crate) fn new(path: PathBuf) -> LockFile {
        let status = LockStatus::default();
        status.last_ok.store(true, Ordering::Relaxed);
        LockFile { path, status }
    }
}

/// Read and parse the lock at `path`; an absent file approves nothing.
///
/// # Errors
///
/// The file cannot be read, or its errors, one per line.
pub(crate) fn load(path: &Path) -> Result<Lock, String> {
    let text = tollgate_config::read_lock_text(path).map_err(|e| e.to_string())?;
    match text {
        None => Ok(Lock::default()),
        Some(text) => Lock::parse(path, &text).map_err(|e| e.to_string()),
    }
}

/// Reload the lock now.
pub(crate) fn reload(approvals: &Approvals, file: &LockFile) {
    match load(&file.path) {
        Ok(lock) => {
            let count = lock.iter().count();
            approvals.replace(lock);
            file.status.reloads.fetch_add(1, Ordering::Relaxed);
            file.status.last_ok.store(true, Ordering::Relaxed);
            tracing::info!(path = %file.path.display(), approvals = count, "catalog lock reloaded");
        }
        Err(errors) => {
            file.status.failures.fetch_add(1, Ordering::Relaxed);
            file.status.last_ok.store(false, Ordering::Relaxed);
            tracing::error!(path = %file.path.display(), errors = %errors, "catalog lock refused; the lock in force keeps serving");
        }
    }
}

/// Reload the lock whenever its file changes.
pub(crate) async fn watch(approvals: Arc<Approvals>, file: Arc<LockFile>) {
    let mut seen = tollgate_config::file_stamp(&file.path);
    loop {
        tokio::time::sleep(POLL).await;
        let now = tollgate_config::file_stamp(&file.path);
        if now != seen {
            seen = now;
            reload(&approvals, &file);
        }
    }
}
