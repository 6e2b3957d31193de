//! Configuration reload: on SIGHUP and when the configuration file changes,
//! the file is loaded and validated in full, a new [`Generation`] is built
//! on the running process, warmed, and swapped in atomically.
//!
//! Where it sits: beside the listeners, on the control runtime. Calls and
//! SSE streams that started on the old generation finish on it (they hold
//! it); new requests get the new one. An invalid file is refused with its
//! file:line errors in the log and a counted failure, and the generation
//! in force keeps serving. Settings bound at start (listener addresses,
//! worker threads, the audit writer…) are named in the log when they
//! change and take effect at the next restart.
//!
//! One task runs every reload, so two never overlap. It also owns the
//! background work of the generation in force (catalog sync, issuer key
//! refresh) and restarts it for each new generation. SIGHUP also reloads
//! the Cedar policies and the catalog lock, as before.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tollgate_auth::RefreshTasks;
use tollgate_config::{ConfigErrors, ProcessEnvironment, file_stamp, restart_required};

use crate::generation::{self, Base};
use crate::governance::reload::{self as lock_reload, LockFile};
use crate::governance::service;
use crate::live::{Generation, Live};

/// How often the configuration file is looked at for a change.
const POLL: Duration = Duration::from_secs(1);
/// How long a changed file must stay unchanged before it is read (an
/// editor or `kubectl` may write it in steps).
const SETTLE: Duration = Duration::from_millis(200);
/// The longest a reload waits for new issuers' keys and new routes' first
/// catalog sync before swapping in.
const WARM_UP: Duration = Duration::from_secs(10);

/// What reloads work on.
#[derive(Debug)]
pub(crate) struct Reloader {
    pub(crate) live: Arc<Live>,
    pub(crate) base: Arc<Base>,
    pub(crate) lock: Arc<LockFile>,
    /// The configuration file; `None` for the embedded demo configuration,
    /// which has none to read again.
    pub(crate) file: Option<PathBuf>,
    /// The public listener's address, which every new front admits as its
    /// own origin.
    pub(crate) bound: Option<SocketAddr>,
}

/// The background work of the generation in force; dropping it stops it.
struct Tasks {
    stop: watch::Sender<bool>,
    sync: Vec<JoinHandle<()>>,
    refresh: Option<(Arc<tollgate_auth::Authenticator>, RefreshTasks)>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for task in &self.sync {
            task.abort();
        }
    }
}

impl Tasks {
    /// Start the work of `g`, keeping `previous`'s key refresh when `g`
    /// kept its authenticator.
    fn start(g: &Generation, previous: Option<Tasks>) -> Tasks {
        let (stop, stopped) = watch::channel(false);
        let peers: Arc<[_]> = g.routes().into();
        let sync = service::start(g.synced.clone(), &peers, g.sync, stopped);
        let kept = previous
            .and_then(|mut p| p.refresh.take())
            .filter(|(a, _)| g.shared.authn.as_ref().is_some_and(|n| Arc::ptr_eq(a, n)));
        let refresh = kept.or_else(|| g.shared.authn.as_ref().map(|a| (a.clone(), a.spawn_refresh())));
        Tasks { stop, sync, refresh }
    }
}

impl Reloader {
    /// Run until aborted: the generation's background work, and a reload
    /// on each SIGHUP and each change of the configuration file.
    pub(crate) async fn run(self) {
        let mut tasks = Tasks::start(&self.live.current(), None);
        let mut hup = hangups();
        let mut seen = self.file.as_deref().and_then(file_stamp);
        loop {
            let signalled = tokio::select! {
                _ = hup.recv() => true,
                () = tokio::time::sleep(POLL) => false,
            };
            if signalled {
                tracing::info!("SIGHUP: reloading the configuration, policies and the catalog lock");
                self.reload_policies_and_lock().await;
                seen = self.file.as_deref().and_then(file_stamp);
            } else {
                let Some(path) = self.file.as_deref() else { continue };
                if file_stamp(path) == seen {
                    continue;
                }
                let now = settled_stamp(path).await;
                if now.is_none() || now == seen {
                    continue;
                }
                seen = now;
                tracing::info!("the configuration file changed: reloading");
            }
            if let Some(next) = self.reload().await {
                tasks = Tasks::start(&next, Some(tasks));
            }
        }
    }

    async fn reload_policies_and_lock(&self) {
        if let Some(p) = self.base.policy.clone() {
            let _ = tokio::task::spawn_blocking(move || p.reload_configured()).await;
        }
        lock_reload::reload(&self.base.approvals, &self.lock);
    }

    /// Load, validate, build and warm a new generation and put it in force;
    /// `None` (and the old one keeps serving) when any step fails.
    pub(crate) async fn reload(&self) -> Option<Arc<Generation>> {
        let Some(path) = self.file.clone() else {
            tracing::info!("the embedded configuration has no file to reload");
            return None;
        };
        let current = self.live.current();
        let loaded = tokio::task::spawn_blocking(move || tollgate_config::load(&path, &ProcessEnvironment)).await;
        let loaded = match loaded {
            Ok(Ok(loaded)) => loaded,
            Ok(Err(errors)) => return self.refused(&errors_text(&errors)),
            Err(e) => return self.refused(&format!("the loader stopped: {e}")),
        };
        let restart = restart_required(&current.loaded.config, &loaded.config);
        let next = match generation::build(loaded, &self.base, Some(&current), current.number + 1) {
            Ok(g) => Arc::new(g),
            Err(e) => return self.refused(&e.to_string()),
        };
        warm_up(&current, &next).await;
        if let Some(addr) = self.bound {
            next.front.admission.bound(addr);
        }
        self.live.replace(next.clone());
        if let Some(policy) = &self.base.policy {
            policy.set_route_modes(next.loaded.config.policy.route_modes(&next.loaded.config));
        }
        log_changes(&current, &next, &restart);
        log_warnings(&next.loaded);
        self.live.status.succeeded(restart);
        Some(next)
    }

    fn refused(&self, errors: &str) -> Option<Arc<Generation>> {
        tracing::error!(errors = %errors, "configuration reload refused; the configuration in force keeps serving");
        self.live.status.failed(errors.to_owned());
        None
    }
}

/// Each error on its own line, `file:line:column: key: message`.
fn errors_text(errors: &ConfigErrors) -> String {
    errors.0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// The file's stamp once it has stopped changing.
async fn settled_stamp(path: &std::path::Path) -> Option<(std::time::SystemTime, u64)> {
    let mut stamp = file_stamp(path);
    loop {
        tokio::time::sleep(SETTLE).await;
        let again = file_stamp(path);
        if again == stamp {
            return stamp;
        }
        stamp = again;
    }
}

/// Before `next` serves: load the keys of a new authenticator, and sync
/// the catalog of every route that did not carry one over (so that an
/// enforcing gate does not refuse a new server's calls until its first
/// scheduled sync). Bounded by [`WARM_UP`]; what is not ready by then is
/// reported as at start.
async fn warm_up(current: &Generation, next: &Generation) {
    let keys = async {
        if let Some(a) = &next.shared.authn
            && !Arc::ptr_eq(a, &current.authenticator)
            && !a.refresh_now().await
        {
            tracing::warn!("a reloaded issuer's keys did not load; its tokens are refused until they do");
        }
    };
    let peers = next.routes();
    let catalogs = futures_util::future::join_all(
        next.synced
            .iter()
            .filter(|r| r.catalog.status().last_attempt.is_none())
            .map(|r| service::sync_once(r, &peers, next.sync.timeout)),
    );
    if tokio::time::timeout(WARM_UP, futures_util::future::join(keys, catalogs))
        .await
        .is_err()
    {
        tracing::warn!("reload warm-up timed out; the new configuration serves while it completes");
    }
}

/// Log what the reload changed: servers and virtual servers added and
/// removed, and the settings left for a restart.
fn log_changes(current: &Generation, next: &Generation, restart: &[&'static str]) {
    let names = |g: &Generation| -> Vec<String> {
        let c = &g.loaded.config;
        let servers = c.servers.iter().map(|s| s.name.as_str().to_owned());
        servers
            .chain(c.virtual_servers.iter().map(|v| v.name.as_str().to_owned()))
            .collect()
    };
    let (old, new) = (names(current), names(next));
    let added: Vec<&String> = new.iter().filter(|n| !old.contains(n)).collect();
    let removed: Vec<&String> = old.iter().filter(|n| !new.contains(n)).collect();
    tracing::info!(generation = next.number, ?added, ?removed, "configuration reloaded");
    if !restart.is_empty() {
        tracing::warn!(settings = ?restart, "these changed settings take effect after a restart; the running values stay");
    }
}

/// Log what the configuration's checks warn about (at start and after
/// each reload), file, line and key first.
pub(crate) fn log_warnings(loaded: &tollgate_config::Loaded) {
    for w in &loaded.warnings {
        tracing::warn!(warning = %w, "configuration warning");
    }
}

/// SIGHUP deliveries; never resolves where there are none.
fn hangups() -> Hangups {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(s) => return Hangups(Some(s)),
            Err(e) => tracing::warn!(error = %e, "SIGHUP handler not installed"),
        }
    }
    Hangups(None)
}

#[cfg(unix)]
struct Hangups(Option<tokio::signal::unix::Signal>);
#[cfg(not(unix))]
struct Hangups(Option<()>);

impl Hangups {
    async fn recv(&mut self) -> Option<()> {
        #[cfg(unix)]
        if let Some(s) = &mut self.0 {
            return s.recv().await;
        }
        std::future::pending().await
    }
}
