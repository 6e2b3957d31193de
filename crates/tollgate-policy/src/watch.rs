//! Watching the policy directory: a change to a policy or schema file
//! reloads the set, after a short quiet period so an editor's or a
//! Kubernetes ConfigMap's several writes make one reload.
//!
//! Runs on its own thread, off the request path; dropping the
//! [`PolicyWatcher`] stops it. The server also reloads on SIGHUP through
//! [`PolicyEngine::reload_configured`].

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::engine::PolicyEngine;
use crate::error::Error;

/// How long the directory must be quiet before a reload.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// A running watch of the policy directory; dropping it stops the watch.
pub struct PolicyWatcher {
    watcher: Option<RecommendedWatcher>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PolicyWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyWatcher").finish_non_exhaustive()
    }
}

impl Drop for PolicyWatcher {
    fn drop(&mut self) {
        // Dropping the watcher closes the channel, which ends the thread.
        self.watcher.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl PolicyEngine {
    /// Watch the configured policy directory (and the directory of its
    /// schema) and reload on change, logging the outcome.
    ///
    /// # Errors
    ///
    /// [`Error::Watch`] when the directory cannot be watched.
    pub fn watch(self: &Arc<Self>) -> Result<PolicyWatcher, Error> {
        let dir = self.settings.dir.clone();
        let (tx, rx) = mpsc::channel::<()>();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|e| !matches!(e.kind, EventKind::Access(_))) {
                let _ = tx.send(());
            }
        })
        .map_err(|source| watch_error(&dir, source))?;
        for path in watched(&dir) {
            watcher
                .watch(&path, RecursiveMode::NonRecursive)
                .map_err(|source| watch_error(&path, source))?;
        }
        let engine = Arc::downgrade(self);
        let thread = std::thread::Builder::new()
            .name("tollgate-policy-watch".into())
            .spawn(move || debounce(&rx, &engine))
            .map_err(|e| watch_error(&dir, notify::Error::io(e)))?;
        Ok(PolicyWatcher {
            watcher: Some(watcher),
            thread: Some(thread),
        })
    }
}

/// The directory, and its parent when the schema comes from there.
fn watched(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_owned()];
    if !dir.join(tollgate_config::SCHEMA_FILE).exists()
        && let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty())
    {
        out.push(parent.to_owned());
    }
    out
}

fn watch_error(path: &Path, source: notify::Error) -> Error {
    Error::Watch {
        path: path.to_owned(),
        source,
    }
}

/// Reload after each burst of events, until the watcher is dropped.
fn debounce(rx: &mpsc::Receiver<()>, engine: &Weak<PolicyEngine>) {
    while rx.recv().is_ok() {
        loop {
            match rx.recv_timeout(DEBOUNCE) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let Some(engine) = engine.upgrade() else { return };
        // `reload` logs the outcome and counts failures.
        let _ = engine.reload_configured();
    }
}
