//! Assembling a gateway from configuration and running it: the parts bound
//! at start (listeners, workers, the audit writer, the policy engine, the
//! lock, the metrics registry) and the first [`Generation`] of the
//! configuration, which reloads replace (see `reload`).
//!
//! [`Generation`]: crate::live::Generation

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use prometheus::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tollgate_auth::DevIssuer;
use tollgate_config::{Config, Loaded, read_or_create_file};
use tollgate_core::CallObserver;
use tollgate_meter::CallMetrics;
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::{Spans, TracingGuard};

use crate::admin::{self, Readiness};
use crate::audit_index::{self, IndexMetrics};
use crate::catalog::Approvals;
use crate::error::auth_err;
use crate::generation::{self, Base};
use crate::governance::reload::LockFile;
use crate::live::Live;
use crate::metrics::{
    CatalogCollector, LimitCollector, Metrics, ShipCollector, StatusCollector, UpstreamCollector, VaultCollector,
    VirtualCollector,
};
use crate::reload::Reloader;
use crate::runtime::Workers;
use crate::serve::{ServeOptions, serve};
use crate::services::{self, Background};
use crate::stack::{self, Public};
use crate::tls::ListenerTls;

pub use crate::error::GatewayError;

/// A gateway built from configuration, ready to serve.
#[derive(Debug)]
pub struct Gateway {
    /// The configuration in force, replaced by reloads.
    live: Arc<Live>,
    /// What every generation is built on.
    base: Arc<Base>,
    lock: Arc<LockFile>,
    /// The file reloads read; `None` for an embedded configuration.
    file: Option<PathBuf>,
    public: Public,
    admin: Router,
    ready: Readiness,
    options: ServeOptions,
    workers: usize,
    background: Background,
    /// TLS of the public and admin listeners, when configured.
    tls: (Option<ListenerTls>, Option<ListenerTls>),
}

impl Gateway {
    /// Build the routes, upstream clients and listeners' services from a
    /// loaded configuration, registering metrics on `registry`. The
    /// configuration is reloaded from `loaded.path` on SIGHUP and when the
    /// file changes (see [`Gateway::without_config_reload`]).
    ///
    /// # Errors
    ///
    /// [`GatewayError`] when an upstream, the metrics, the policies, the
    /// audit trail or the session keys cannot be set up.
    pub fn new(loaded: &Loaded, registry: Registry) -> Result<Gateway, GatewayError> {
        Gateway::with_observers(loaded, registry, Vec::new())
    }

    /// [`Gateway::new`], with `extra` observers reading every finished
    /// call's summary beside the audit trail and the metrics (an embedder's
    /// own sink, or a test's recorder).
    ///
    /// # Errors
    ///
    /// As [`Gateway::new`].
    pub fn with_observers(
        loaded: &Loaded,
        registry: Registry,
        extra: Vec<Arc<dyn CallObserver>>,
    ) -> Result<Gateway, GatewayError> {
        let config = &loaded.config;
        crate::reload::log_warnings(loaded);
        let workers = worker_count(config);
        let policy = policy_engine(loaded)?;
        let (audit, worker) = services::audit_sink(loaded, &registry)?;
        let tracing = TracingGuard::new(&crate::settings::tracing(&config.tracing))
            .map_err(|e| GatewayError::Tracing(e.to_string()))?;
        let lock_path = config.catalog.resolved_lock(&loaded.path);
        let (lock, approved) = LockFile::open(lock_path).map_err(GatewayError::Catalog)?;
        let (approvals, lock) = (Approvals::new(approved), Arc::new(lock));
        let issuer = crate::front_door::issuer(loaded)?;
        let base = Arc::new(Base {
            audit: audit.clone(),
            policy: policy.clone(),
            approvals: Arc::new(approvals),
            spans: tracing.as_ref().map_or_else(Spans::disabled, TracingGuard::spans),
            call_metrics: Arc::new(CallMetrics::register(&registry)?),
            extra,
            dev: dev_issuer(loaded)?.map(Arc::new),
            vault: crate::front_door::vault(loaded, issuer.as_ref())?,
            issuer,
            workers,
        });
        let live = Arc::new(Live::new(generation::build(loaded.clone(), &base, None, 1)?));
        let spans = tracing.as_ref().map(TracingGuard::span_counts);
        registry.register(Box::new(StatusCollector::new(
            audit.clone(),
            policy.clone(),
            live.clone(),
            spans,
        )?))?;
        registry.register(Box::new(CatalogCollector::new(
            live.clone(),
            base.approvals.clone(),
            lock.clone(),
        )?))?;
        registry.register(Box::new(LimitCollector::new(live.clone())?))?;
        registry.register(Box::new(UpstreamCollector::new(live.clone())?))?;
        registry.register(Box::new(VirtualCollector::new(live.clone())?))?;
        registry.register(Box::new(VaultCollector::new(live.clone())?))?;
        let shared = crate::governance::shared::setup(loaded, base.approvals.clone(), &registry)?;
        let shipping = crate::shipping::setup(loaded)?;
        let ship_status = shipping.as_ref().map(crate::shipping::Shipping::status);
        let store = shipping.as_ref().map(crate::shipping::Shipping::store);
        let fleet = store.clone();
        let checkpointer = crate::checkpoint::setup(loaded, &audit, store, &registry)?;
        if let Some(status) = &ship_status {
            registry.register(Box::new(ShipCollector::new(status.clone())?))?;
        }
        let ready = Readiness::default();
        let admin_state = admin::AdminState {
            ready: ready.clone(),
            registry: registry.clone(),
            audit,
            live: live.clone(),
            approvals: base.approvals.clone(),
            lock: lock.clone(),
            issuer: base.issuer.clone(),
            shipping: ship_status,
            fleet,
            shared: shared.clone(),
        };
        Ok(Gateway {
            public: stack::build(live.clone(), Metrics::register(&registry)?, &config.limits),
            admin: admin_router(loaded, admin_state, base.dev.clone())?,
            background: Background {
                policy,
                watch_policies: config.policy.watch,
                audit_worker: worker,
                tracing,
                approvals: base.approvals.clone(),
                lock: lock.clone(),
                watch_lock: config.catalog.watch,
                audit_index: match audit_index::directory(loaded) {
                    Some(dir) => Some((dir, IndexMetrics::register(&registry)?)),
                    None => None,
                },
                shipping,
                shared,
                checkpointer,
            },
            live,
            base,
            lock,
            file: Some(loaded.path.clone()),
            ready,
            options: ServeOptions {
                max_header_bytes: config.limits.max_header_bytes,
                header_read_timeout: config.limits.header_read_timeout,
                grace: config.shutdown.grace,
            },
            workers,
            tls: listener_tls(loaded, &registry)?,
        })
    }

    /// This gateway without configuration reloads: for a configuration
    /// that has no file of its own (the embedded demo). SIGHUP still
    /// reloads the policies and the catalog lock.
    #[must_use]
    pub fn without_config_reload(mut self) -> Gateway {
        self.file = None;
        self
    }

    /// Make the fleet store's schema this binary's (`[store] postgres`,
    /// migrating when `[store] migrate`) and read its catalog approvals,
    /// before serving. Without a store, nothing to do.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Store`] when the store's schema is newer than this
    /// binary, or older and not to be migrated. A store that cannot be
    /// reached is not an error: the gateway serves, shipping waits, and
    /// the lock file's approvals serve until the store's are read.
    pub async fn prepare_store(&self) -> Result<(), GatewayError> {
        // Side by side: a store that does not answer is waited for once.
        let shipping = async {
            match &self.background.shipping {
                Some(shipping) => shipping.prepare().await,
                None => Ok(()),
            }
        };
        let shared = async {
            match &self.background.shared {
                Some(shared) => shared.prepare().await,
                None => Ok(()),
            }
        };
        let (shipping, shared) = tokio::join!(shipping, shared);
        shipping.and(shared)
    }

    /// Learn the address the public listener is bound to (its own origins
    /// are admitted without configuration).
    pub(crate) fn bound(&self, addr: std::net::SocketAddr) {
        self.live.front().admission.bound(addr);
    }

    /// The configuration in force (for in-process tests).
    #[cfg(test)]
    pub(crate) fn live(&self) -> Arc<Live> {
        self.live.clone()
    }

    /// The public listener's service (for in-process tests).
    #[cfg(test)]
    pub(crate) fn public_service(&self) -> Public {
        self.public.clone()
    }

    /// Serve on bound listeners until `shutdown` completes, then drain.
    /// The public listener is served by the worker threads; the admin
    /// listener, reloads and the background services by the calling
    /// runtime. Readiness turns true once serving starts and false when
    /// draining starts.
    pub async fn run(self, public: TcpListener, admin: TcpListener, shutdown: impl Future<Output = ()>) {
        let bound = public.local_addr().ok();
        if let Some(addr) = bound {
            self.bound(addr);
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let (public_tls, admin_tls) = self.tls;
        let acceptors = (
            public_tls.as_ref().map(ListenerTls::acceptor),
            admin_tls.as_ref().map(ListenerTls::acceptor),
        );
        let _watch_tls: Vec<_> = [public_tls, admin_tls]
            .into_iter()
            .flatten()
            .map(|t| tokio::spawn(t.watch()))
            .map(AbortOnDrop)
            .collect();
        let admin_task = tokio::spawn(serve(
            admin,
            self.admin,
            self.options,
            acceptors.1,
            stopped(stop_rx.clone()),
        ));
        // The generation's background work (issuer keys are fetched in the
        // background: the gateway serves, and reports not ready, while an
        // issuer is unreachable; catalogs sync) and reloads.
        let reloader = Reloader {
            live: self.live,
            base: self.base,
            lock: self.lock,
            file: self.file,
            bound,
        };
        let reloads = AbortOnDrop(tokio::spawn(reloader.run()));
        let running = self.background.start();
        let (service, options) = (self.public, self.options);
        let workers = Workers::start(self.workers, public, &stop_rx, move |listener, stop| {
            serve(listener, service.clone(), options, acceptors.0.clone(), stopped(stop))
        });
        let workers = match workers {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "worker threads did not start");
                let _ = stop_tx.send(true);
                let _ = admin_task.await;
                drop(reloads);
                running.stop().await;
                return;
            }
        };
        self.ready.set(true);
        shutdown.await;
        tracing::info!("shutdown requested: draining");
        self.ready.set(false);
        let _ = stop_tx.send(true);
        workers.join().await;
        let _ = admin_task.await;
        drop(reloads);
        running.stop().await;
    }
}

/// Resolves once `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Worker threads: `[runtime] worker_threads`, else one per core.
fn worker_count(config: &Config) -> usize {
    config
        .runtime
        .worker_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1)
}

/// The TLS of the public and admin listeners (`[listen.tls]`,
/// `[listen.admin_tls]`), paths relative to the configuration file.
fn listener_tls(
    loaded: &Loaded,
    registry: &Registry,
) -> Result<(Option<ListenerTls>, Option<ListenerTls>), GatewayError> {
    let base = loaded.path.parent().unwrap_or(std::path::Path::new("."));
    let listen = &loaded.config.listen;
    let expiry = crate::tls::expiry_gauges()?;
    if listen.tls.is_some() || listen.admin_tls.is_some() {
        registry.register(Box::new(expiry.clone()))?;
    }
    let build = |t: &Option<tollgate_config::ListenerTls>, key: &str, listener: &str| {
        t.as_ref()
            .map(|t| ListenerTls::new(t, base, expiry.with_label_values(&[listener])))
            .transpose()
            .map_err(|e| GatewayError::Tls(format!("{key}: {e}")))
    };
    Ok((
        build(&listen.tls, "listen.tls", "public")?,
        build(&listen.admin_tls, "listen.admin_tls", "admin")?,
    ))
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The policy engine of `[policy]`, or `None` when no directory is set.
fn policy_engine(loaded: &Loaded) -> Result<Option<Arc<PolicyEngine>>, GatewayError> {
    let Some(settings) = crate::settings::policy(loaded) else {
        tracing::warn!("no [policy] dir configured: every authenticated call is allowed");
        return Ok(None);
    };
    let engine = PolicyEngine::load(settings).map_err(|e| GatewayError::Policy(e.to_string()))?;
    let status = engine.status();
    tracing::info!(dir = %status.dir.display(), policies = status.policies, "policies loaded");
    Ok(Some(Arc::new(engine)))
}

/// The development issuer, its key read or created on first use.
/// The admin router: operations endpoints, the development issuer, and the
/// console when `[console] enabled`.
fn admin_router(
    loaded: &Loaded,
    state: admin::AdminState,
    dev: Option<Arc<DevIssuer>>,
) -> Result<axum::Router, GatewayError> {
    let console = crate::settings::console(loaded);
    let signin = match (&dev, &console) {
        (Some(dev), Some(settings)) if settings.issuer == dev.issuer() => Some(crate::dev_signin::routes(
            dev.clone(),
            settings,
            &loaded.config.dev_issuer.users,
        )),
        _ => None,
    };
    let backend = Arc::new(crate::console::ConsoleBackend {
        live: state.live.clone(),
        audit: state.audit.clone(),
        approvals: state.approvals.clone(),
        lock: state.lock.clone(),
        shared: state.shared.clone(),
        fleet: state.fleet.clone(),
        writing: std::sync::Mutex::new(()),
        issuer: state.issuer.clone(),
    });
    let mut router = admin::router(state, dev.as_deref(), signin.is_some());
    if let Some(signin) = signin {
        router = router.merge(signin);
    }
    if let Some(settings) = console {
        let console = tollgate_console::router(settings, backend).map_err(|e| GatewayError::Console(e.to_string()))?;
        router = router.merge(console);
    }
    Ok(router)
}

fn dev_issuer(loaded: &Loaded) -> Result<Option<DevIssuer>, GatewayError> {
    let Some(settings) = &loaded.dev_issuer else {
        return Ok(None);
    };
    let pem = read_or_create_file(&settings.key_file, DevIssuer::generate_pem).map_err(GatewayError::Auth)?;
    let dev = DevIssuer::from_pem(&settings.issuer, pem.expose()).map_err(auth_err)?;
    tracing::warn!(issuer = %settings.issuer, "development token issuer enabled: not for production");
    Ok(Some(dev))
}
