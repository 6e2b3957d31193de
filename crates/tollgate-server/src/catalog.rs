//! The catalog of each route as the request path sees it: what the
//! upstream lists (the latest [`Snapshot`], kept fresh by the sync service
//! in `governance::service`) and what `catalog.lock` and the fleet store
//! approve ([`Approvals`], shared by every route, replaced on change).
//!
//! The catalog gate (`phase::gate`) judges each call's definition against
//! both; list filtering (`lists`) judges each listed entry; policies read
//! the approved definition's annotations; the audit record names the
//! approved revision. A list answer that shows a definition other than the
//! snapshot's, or a `notifications/*/list_changed` passing through, asks
//! for a new sync ([`RouteCatalog::wake`]).
//!
//! A route with the gate off is not synced (the gateway does not talk to
//! its upstream on its own): its snapshot is learned from the list answers
//! that pass through ([`RouteCatalog::learn`]), once per change, so that
//! records still name the listed revision and policies the listed
//! annotations — the upstream's word, which is what governance is off for.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::SystemTime;

use arc_swap::ArcSwap;
use memchr::memmem::Finder;
use tokio::sync::Notify;
use tollgate_catalog::{Definition, Kind, Lock, Mode, Outcome, Snapshot};
use tollgate_policy::ToolAnnotations;

/// The state of one route's sync.
#[derive(Debug, Clone, Default)]
pub(crate) struct SyncStatus {
    /// When the last sync started.
    pub(crate) last_attempt: Option<SystemTime>,
    /// When a sync last succeeded.
    pub(crate) last_success: Option<SystemTime>,
    /// Why the last sync failed, if it did.
    pub(crate) last_error: Option<String>,
    /// Syncs that succeeded, and failed.
    pub(crate) successes: u64,
    /// Syncs that failed.
    pub(crate) failures: u64,
    /// Poisoning findings of the last good snapshot.
    pub(crate) findings: Arc<[tollgate_catalog::Finding]>,
}

/// One route's catalog.
#[derive(Debug)]
pub(crate) struct RouteCatalog {
    /// How the route applies the gate.
    pub(crate) mode: Mode,
    /// What was learned of the upstream; kept by a configuration reload
    /// that leaves the upstream's URL alone.
    state: Arc<CatalogState>,
}

/// What a route's catalog learned of its upstream, and its counts.
#[derive(Debug)]
struct CatalogState {
    snapshot: ArcSwap<Snapshot>,
    status: Mutex<SyncStatus>,
    wake: Notify,
    /// Set when the route trusts headers (`header_trust = "upstream"`)
    /// but its upstream does not speak 2026-07-28: the route then verifies.
    trust_refused: AtomicBool,
    /// Gate verdicts other than approved, by where (calls, list entries)
    /// and outcome.
    counts: [[AtomicU64; 4]; 2],
    /// The last list answer learned, per kind (routes with the gate off).
    pages: Mutex<[Option<bytes::Bytes>; 4]>,
}

/// Where a list answer's result starts.
static RESULT_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"result\""));

/// Where a gate verdict was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Judged {
    /// A call.
    Call,
    /// An entry of a list answer.
    Listed,
}

impl Judged {
    pub(crate) const ALL: [Judged; 2] = [Judged::Call, Judged::Listed];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Judged::Call => "call",
            Judged::Listed => "list",
        }
    }
}

/// The gate's outcomes, in counter order.
pub(crate) const OUTCOMES: [Outcome; 4] = [
    Outcome::Approved,
    Outcome::Quarantined,
    Outcome::Blocked,
    Outcome::Unlisted,
];

impl RouteCatalog {
    /// The catalog of `server`, nothing synced yet.
    pub(crate) fn new(server: &str, mode: Mode) -> RouteCatalog {
        RouteCatalog {
            mode,
            state: Arc::new(CatalogState {
                snapshot: ArcSwap::from_pointee(Snapshot::empty(server)),
                status: Mutex::new(SyncStatus::default()),
                wake: Notify::new(),
                trust_refused: AtomicBool::new(false),
                counts: Default::default(),
                pages: Mutex::default(),
            }),
        }
    }

    /// This catalog under `mode`, for the route that replaces this one in
    /// a reloaded configuration with the same upstream: the snapshot, the
    /// sync status and the counts carry on.
    pub(crate) fn continued(&self, mode: Mode) -> RouteCatalog {
        RouteCatalog {
            mode,
            state: Arc::clone(&self.state),
        }
    }

    /// Count a gate verdict.
    pub(crate) fn count(&self, judged: Judged, outcome: Outcome) {
        let i = OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(0);
        self.state.counts[usize::from(judged == Judged::Listed)][i].fetch_add(1, Ordering::Relaxed);
    }

    /// The verdicts counted so far.
    pub(crate) fn counted(&self, judged: Judged, outcome: Outcome) -> u64 {
        let i = OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(0);
        self.state.counts[usize::from(judged == Judged::Listed)][i].load(Ordering::Relaxed)
    }

    /// The latest snapshot.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.state.snapshot.load_full()
    }

    /// Whether `snapshot` is the one in force (no reference counted).
    pub(crate) fn is_snapshot(&self, snapshot: &Arc<Snapshot>) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.state.snapshot.load()), Arc::as_ptr(snapshot))
    }

    /// The definition of `kind` named `key` the upstream lists today.
    pub(crate) fn live(&self, kind: Kind, key: &str) -> Option<Definition> {
        self.state.snapshot.load().get(kind, key).cloned()
    }

    /// Put a new snapshot in force.
    pub(crate) fn replace(&self, snapshot: Snapshot) {
        self.state.snapshot.store(Arc::new(snapshot));
    }

    /// Learn one page of a list answer that passed through (routes with
    /// the gate off): its definitions are added to the snapshot or replace
    /// the ones of the same name.
    pub(crate) fn learn(&self, definitions: Vec<Definition>) {
        if definitions.is_empty() {
            return;
        }
        self.state.snapshot.rcu(|current| {
            let mut next = Snapshot::clone(current);
            for d in &definitions {
                next.insert(d.clone());
            }
            next.synced_at = SystemTime::now();
            next
        });
    }

    /// Whether a page of a list answer differs from the last one learned
    /// for its kind; remembers it when it does. Compares the answer from
    /// its result on, byte for byte (the id before it differs per call).
    pub(crate) fn page_changed(&self, kind: Kind, answer: &bytes::Bytes) -> bool {
        let result = RESULT_KEY
            .find(answer)
            .map_or_else(|| answer.clone(), |at| answer.slice(at..));
        let Ok(mut pages) = self.state.pages.lock() else {
            return true;
        };
        let slot = &mut pages[Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0)];
        if slot.as_ref() == Some(&result) {
            return false;
        }
        *slot = Some(result);
        true
    }

    /// The sync state.
    pub(crate) fn status(&self) -> SyncStatus {
        self.state.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Change the sync state.
    pub(crate) fn update_status(&self, f: impl FnOnce(&mut SyncStatus)) {
        if let Ok(mut s) = self.state.status.lock() {
            f(&mut s);
        }
    }

    /// Ask for a sync now (the upstream announced a change, or answered a
    /// list differently from the snapshot).
    pub(crate) fn wake(&self) {
        self.state.wake.notify_one();
    }

    /// Wait until a sync is asked for.
    pub(crate) async fn woken(&self) {
        self.state.wake.notified().await;
    }

    /// Whether `header_trust = "upstream"` was refused for this route.
    pub(crate) fn trust_refused(&self) -> bool {
        self.state.trust_refused.load(Ordering::Relaxed)
    }

    /// Refuse (or restore) `header_trust = "upstream"`.
    pub(crate) fn refuse_trust(&self, refused: bool) {
        self.state.trust_refused.store(refused, Ordering::Relaxed);
    }
}

/// The approvals in force, shared by every route: the lock file's and,
/// with approvals in the fleet store, the store's, put together by
/// [`Lock::union_newest`] (each definition's newer approval; the store's
/// on a tie) whenever either changes. The gate reads the union, once per
/// call, without waiting.
#[derive(Debug)]
pub(crate) struct Approvals {
    /// The union, as the gate reads it.
    lock: ArcSwap<Lock>,
    /// Its two sources, under one lock so that two replacements cannot
    /// put an older union in force after a newer one.
    sources: Mutex<Sources>,
}

/// Where the approvals in force come from.
#[derive(Debug, Default)]
struct Sources {
    /// The lock file's (none: no file, or nothing approved).
    file: Arc<Lock>,
    /// The fleet store's, once read (`None`: no store, or not read yet).
    store: Option<Arc<Lock>>,
}

impl Approvals {
    /// Approvals from `lock` (the lock file's).
    pub(crate) fn new(lock: Lock) -> Approvals {
        let file = Arc::new(lock);
        Approvals {
            lock: ArcSwap::new(file.clone()),
            sources: Mutex::new(Sources { file, store: None }),
        }
    }

    /// The approvals in force.
    pub(crate) fn current(&self) -> Arc<Lock> {
        self.lock.load_full()
    }

    /// Put a new lock file in force.
    pub(crate) fn replace(&self, lock: Lock) {
        self.update(|s| s.file = Arc::new(lock));
    }

    /// Put the fleet store's approvals in force beside the lock file's.
    pub(crate) fn replace_store(&self, lock: Lock) {
        self.update(|s| s.store = Some(Arc::new(lock)));
    }

    /// Add one approval just written to the fleet store (in force here
    /// before the store's announcement comes back).
    pub(crate) fn add_stored(&self, approval: tollgate_catalog::Approval) {
        self.update(|s| {
            let mut store = s.store.as_deref().cloned().unwrap_or_default();
            let mut one = Lock::default();
            one.insert(approval);
            store = store.union_newest(&one);
            s.store = Some(Arc::new(store));
        });
    }

    /// The fleet store's approvals as last read (`None`: none read).
    pub(crate) fn stored(&self) -> Option<Arc<Lock>> {
        self.sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .store
            .clone()
    }

    fn update(&self, change: impl FnOnce(&mut Sources)) {
        let mut sources = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut sources);
        let union = match &sources.store {
            None => sources.file.clone(),
            Some(store) => Arc::new(sources.file.union_newest(store)),
        };
        self.lock.store(union);
    }
}

/// The annotations a definition declares, with the MCP defaults for the
/// hints it leaves out.
pub(crate) fn annotations_of(definition: &serde_json::Value) -> ToolAnnotations {
    annotations_from(tollgate_catalog::Hints::of(definition))
}

/// The annotations of the hints `h`, with the MCP defaults for those left
/// out (the catalog reads hints; policies judge annotations).
pub(crate) fn annotations_from(h: tollgate_catalog::Hints) -> ToolAnnotations {
    ToolAnnotations::from_hints(h.read_only, h.destructive, h.idempotent, h.open_world)
}

/// The gate of a configured catalog mode.
pub(crate) fn catalog_mode(mode: tollgate_config::CatalogMode) -> tollgate_catalog::Mode {
    match mode {
        tollgate_config::CatalogMode::Off => tollgate_catalog::Mode::Off,
        tollgate_config::CatalogMode::Observe => tollgate_catalog::Mode::Observe,
        tollgate_config::CatalogMode::Enforce => tollgate_catalog::Mode::Enforce,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> Definition {
        Definition::new(Kind::Tool, json!({"name": name, "description": description})).unwrap()
    }

    fn lock(entries: &[(&Definition, &str, u64)]) -> Lock {
        let mut lock = Lock::default();
        for (d, by, secs) in entries {
            let at = SystemTime::UNIX_EPOCH + Duration::from_secs(*secs);
            lock.approve("demo", d, by, at, None);
        }
        lock
    }

    #[test]
    fn the_lock_file_and_the_store_are_in_force_together_newest_first() {
        let (echo, echo2, add) = (tool("echo", "a"), tool("echo", "b"), tool("add", "c"));
        let approvals = Approvals::new(lock(&[(&echo, "git", 100)]));
        assert_eq!(approvals.current().len(), 1);
        assert!(approvals.stored().is_none());

        approvals.replace_store(lock(&[(&echo2, "console", 200), (&add, "console", 50)]));
        let now = approvals.current();
        assert_eq!(now.get("demo", Kind::Tool, "echo").unwrap().revision, echo2.revision);
        assert_eq!(now.len(), 2);

        // A newer lock file wins over the store's older approval; the
        // store's stay in force beside it.
        approvals.replace(lock(&[(&echo, "git", 300)]));
        let now = approvals.current();
        assert_eq!(now.get("demo", Kind::Tool, "echo").unwrap().approved_by, "git");
        assert!(now.get("demo", Kind::Tool, "add").is_some());

        // One approval just written to the store joins the store's.
        let mut one = lock(&[(&echo2, "alice", 400)]);
        let written = one.remove("demo", Kind::Tool, "echo").unwrap();
        approvals.add_stored(written);
        assert_eq!(
            approvals.current().get("demo", Kind::Tool, "echo").unwrap().approved_by,
            "alice"
        );
        assert_eq!(approvals.stored().unwrap().len(), 2);
    }
}
