//! The configuration in force, one [`Generation`] at a time.
//!
//! Where it sits: the public service loads the current generation once per
//! request and keeps it for the whole call, so a reload (see `reload`)
//! never changes the routes, limits or issuers under a call or an open SSE
//! stream; the admin listener and the metrics read the latest one. A
//! generation is immutable: a reload builds a whole new one and swaps it in
//! atomically.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use tollgate_auth::Authenticator;
use tollgate_config::Loaded;

use crate::front::Front;
use crate::governance::service::SyncSettings;
use crate::route::{Route, Shared};

/// One configuration in force: what it was loaded from and everything
/// built from it.
#[derive(Debug)]
pub(crate) struct Generation {
    /// 1 for the configuration loaded at start, then one more per reload.
    pub(crate) number: u64,
    /// The configuration and its resolved secrets.
    pub(crate) loaded: Loaded,
    /// Admission and the routes.
    pub(crate) front: Arc<Front>,
    /// The token validator, also when no route requires tokens (its
    /// issuers name the routes' authorization servers).
    pub(crate) authenticator: Arc<Authenticator>,
    /// What every route of this generation shares.
    pub(crate) shared: Arc<Shared>,
    /// The routes whose catalogs are kept synced.
    pub(crate) synced: Vec<Arc<Route>>,
    /// How often, and with what deadline.
    pub(crate) sync: SyncSettings,
}

impl Generation {
    /// Every route, in no particular order.
    pub(crate) fn routes(&self) -> Vec<Arc<Route>> {
        self.front.routes.values().cloned().collect()
    }
}

/// The generation in force, and how reloads went.
#[derive(Debug)]
pub(crate) struct Live {
    current: ArcSwap<Generation>,
    /// The outcome of reloads, for the metrics and `/readyz?detail`.
    pub(crate) status: ReloadStatus,
}

impl Live {
    /// `first` in force.
    pub(crate) fn new(first: Generation) -> Live {
        Live {
            current: ArcSwap::from_pointee(first),
            status: ReloadStatus::default(),
        }
    }

    /// The generation in force now.
    pub(crate) fn current(&self) -> Arc<Generation> {
        self.current.load_full()
    }

    /// The front of the generation in force, for one request.
    pub(crate) fn front(&self) -> Arc<Front> {
        Arc::clone(&self.current.load().front)
    }

    /// Put `next` in force; calls already running keep theirs.
    pub(crate) fn replace(&self, next: Arc<Generation>) {
        self.current.store(next);
    }
}

/// How configuration reloads went since start.
#[derive(Debug, Default)]
pub(crate) struct ReloadStatus {
    /// Reloads that put a new generation in force.
    pub(crate) reloads: AtomicU64,
    /// Reloads refused (an invalid file, or one that could not be built).
    pub(crate) failures: AtomicU64,
    /// The details of the last attempt.
    last: Mutex<LastReload>,
}

/// The last reload attempt.
#[derive(Debug, Default, Clone)]
pub(crate) struct LastReload {
    /// When it ended.
    pub(crate) at: Option<SystemTime>,
    /// Why it was refused, if it was.
    pub(crate) error: Option<String>,
    /// Changed settings the running process keeps until a restart.
    pub(crate) restart_required: Vec<&'static str>,
}

impl ReloadStatus {
    /// Record a reload that put a new generation in force.
    pub(crate) fn succeeded(&self, restart_required: Vec<&'static str>) {
        self.reloads.fetch_add(1, Ordering::Relaxed);
        self.set(LastReload {
            at: Some(SystemTime::now()),
            error: None,
            restart_required,
        });
    }

    /// Record a refused reload; what a restart would change stays as it was.
    pub(crate) fn failed(&self, error: String) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let pending = self.last().restart_required;
        self.set(LastReload {
            at: Some(SystemTime::now()),
            error: Some(error),
            restart_required: pending,
        });
    }

    /// The last attempt.
    pub(crate) fn last(&self) -> LastReload {
        self.last.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn set(&self, last: LastReload) {
        if let Ok(mut l) = self.last.lock() {
            *l = last;
        }
    }
}
