//! Reloading `catalog.lock` while the gateway runs: on SIGHUP and when the
//! file changes (polled: it also sees a ConfigMap's symlink swap). A new
//! lock is parsed whole and put in force atomically; an invalid one is
//! refused with its file:line errors in the log, counted, and the lock in
//! force keeps serving. The text in force is kept, so that a writer (the
//! console's approvals) can tell whether the file still holds it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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
    /// The text of the lock in force (`None`: there was no file).
    loaded: Mutex<Option<String>>,
}

impl LockFile {
    /// The lock file at `path`, whose text in force is `loaded`.
    pub(crate) fn new(path: PathBuf, loaded: Option<String>) -> LockFile {
        let status = LockStatus::default();
        status.last_ok.store(true, Ordering::Relaxed);
        LockFile {
            path,
            status,
            loaded: Mutex::new(loaded),
        }
    }

    /// Read the lock at `path` at start: the file and the lock to put in
    /// force.
    ///
    /// # Errors
    ///
    /// As [`read`].
    pub(crate) fn open(path: PathBuf) -> Result<(LockFile, Lock), String> {
        let (text, lock) = read(&path)?;
        Ok((LockFile::new(path, text), lock))
    }

    /// Whether `text` (as just read; `None`: no file) is the text in force.
    pub(crate) fn is_in_force(&self, text: Option<&str>) -> bool {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner).as_deref() == text
    }
}

/// The text of the lock at `path` (`None`: no file, which approves
/// nothing) and the lock it holds.
///
/// # Errors
///
/// The file cannot be read, or its errors, one per line.
pub(crate) fn read(path: &Path) -> Result<(Option<String>, Lock), String> {
    let text = tollgate_config::read_lock_text(path).map_err(|e| e.to_string())?;
    let lock = match &text {
        None => Lock::default(),
        Some(text) => Lock::parse(path, text).map_err(|e| e.to_string())?,
    };
    Ok((text, lock))
}

/// Reload the lock now.
pub(crate) fn reload(approvals: &Approvals, file: &LockFile) {
    match read(&file.path) {
        Ok((text, lock)) => {
            let count = lock.iter().count();
            // The text first: a writer that then finds it on disk sees the
            // lock it will put in force.
            *file.loaded.lock().unwrap_or_else(PoisonError::into_inner) = text;
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
