//! Assembling a gateway from configuration and running it.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use prometheus::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tollgate_audit::{RouteAudit, TokenEstimator};
use tollgate_auth::{Authenticator, CredentialBroker, DevIssuer, ProtectedResource};
use tollgate_config::{Config, Loaded, read_or_create_file};
use tollgate_core::{Principal, PrincipalKind};
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::{Spans, TracingGuard};

use crate::admin::{self, Readiness};
use crate::metrics::{CallMetrics, StatusCollector};
use crate::serve::{ServeOptions, serve};
use crate::services::{self, Background};
use crate::upstream::{Upstream, UpstreamError};
use crate::{Metrics, Sealer, Shared, stack};

/// Why a gateway could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// An upstream could not be set up.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// Metrics could not be registered.
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// The session sealer could not be set up.
    #[error("session key setup failed")]
    Sessions,
    /// Authentication or the credential broker could not be set up.
    #[error("authentication setup: {0}")]
    Auth(String),
    /// The policy directory is invalid.
    #[error("policies: {0}")]
    Policy(String),
    /// The audit trail could not be opened.
    #[error("audit: {0}")]
    Audit(String),
    /// The trace exporter could not be set up.
    #[error("tracing: {0}")]
    Tracing(String),
}

/// A gateway built from configuration, ready to serve.
#[derive(Debug)]
pub struct Gateway {
    public: Router,
    admin: Router,
    ready: Readiness,
    authn: Option<Arc<Authenticator>>,
    options: ServeOptions,
    background: Background,
}

/// One upstream per `[[servers]]` entry, with its protected-resource and
/// audit settings.
fn upstreams(config: &Config, issuers: &[String]) -> Result<Vec<Arc<Upstream>>, GatewayError> {
    let mut upstreams = Vec::with_capacity(config.servers.len());
    for server in &config.servers {
        let mut up = Upstream::from_config(server, &config.timeouts)?;
        up.resource = ProtectedResource::from_config(config, server, issuers).map_err(auth_err)?;
        up.audit = RouteAudit::from_config(server, &config.audit);
        upstreams.push(Arc::new(up));
    }
    Ok(upstreams)
}

/// The legacy-session sealing keys: the current key first.
fn session_keys(loaded: &Loaded) -> Vec<&[u8]> {
    let keys: Vec<&[u8]> = loaded.session_keys.iter().map(|k| k.expose()).collect();
    if keys.is_empty() {
        tracing::warn!("no [sessions] key configured: legacy sessions will not survive a restart or cross replicas");
    }
    keys
}

impl Gateway {
    /// Build the routers and upstream clients from a loaded configuration,
    /// registering metrics on `registry`.
    ///
    /// # Errors
    ///
    /// [`GatewayError`] when an upstream, the metrics or the session keys
    /// cannot be set up.
    pub fn new(loaded: &Loaded, registry: Registry) -> Result<Gateway, GatewayError> {
        let config = &loaded.config;
        let dev = dev_issuer(loaded)?;
        let authn = Arc::new(Authenticator::from_loaded(loaded, dev.as_ref()).map_err(auth_err)?);
        let upstreams = upstreams(config, &authn.issuers())?;
        let keys = session_keys(loaded);
        let authenticated = upstreams.iter().any(|u| u.resource.is_some());
        let authn = authenticated.then_some(authn);
        let policy = policy_engine(loaded)?;
        let (audit, worker) = services::audit_sink(loaded, &registry)?;
        let tracing = TracingGuard::new(&config.tracing).map_err(|e| GatewayError::Tracing(e.to_string()))?;
        registry.register(Box::new(StatusCollector::new(
            audit.clone(),
            policy.clone(),
            authn.clone(),
            tracing.as_ref().map(TracingGuard::span_counts),
        )?))?;
        let shared = Arc::new(Shared {
            limits: config.limits.clone(),
            authn: authn.clone(),
            broker: CredentialBroker::new(config, &loaded.auth_secrets).map_err(auth_err)?,
            sealer: Sealer::new(&keys, config.sessions.ttl).map_err(|_| GatewayError::Sessions)?,
            metrics: Metrics::register(&registry)?,
            calls: CallMetrics::register(&registry)?,
            policy: policy.clone(),
            anonymous: Arc::new(anonymous()),
            catalog: crate::catalog::Catalog::default(),
            audit: audit.clone(),
            estimator: TokenEstimator::from_config(&config.audit),
            spans: tracing.as_ref().map_or_else(Spans::disabled, TracingGuard::spans),
        });
        let origins: Arc<[String]> = config.security.allowed_origins.clone().into();
        let ready = Readiness::default();
        let admin_state = admin::AdminState {
            ready: ready.clone(),
            registry,
            authn: authn.clone(),
            audit,
        };
        Ok(Gateway {
            public: stack::build(shared, &upstreams, origins),
            admin: admin::router(admin_state, dev.as_ref()),
            ready,
            authn,
            options: ServeOptions {
                max_header_bytes: config.limits.max_header_bytes,
                header_read_timeout: config.limits.header_read_timeout,
                grace: config.shutdown.grace,
            },
            background: Background {
                policy,
                watch_policies: config.policy.watch,
                audit_worker: worker,
                tracing,
            },
        })
    }

    /// The public router (for in-process tests).
    pub fn public_router(&self) -> Router {
        self.public.clone()
    }

    /// Serve on bound listeners until `shutdown` completes, then drain.
    /// Readiness turns true once serving starts and false when draining
    /// starts.
    pub async fn run(self, public: TcpListener, admin: TcpListener, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let admin_stop = {
            let mut rx = stop_rx.clone();
            async move {
                let _ = rx.wait_for(|stopped| *stopped).await;
            }
        };
        let admin_task = tokio::spawn(serve(admin, self.admin, self.options, admin_stop));
        // Keys are fetched in the background: the gateway serves (and
        // reports not ready) while an issuer is unreachable.
        let _refresh = self.authn.as_ref().map(|a| a.spawn_refresh());
        let running = self.background.start();
        let ready = self.ready.clone();
        ready.set(true);
        let public_stop = async move {
            shutdown.await;
            tracing::info!("shutdown requested: draining");
            ready.set(false);
        };
        serve(public, self.public, self.options, public_stop).await;
        let _ = stop_tx.send(true);
        let _ = admin_task.await;
        drop(stop_rx);
        running.stop().await;
    }
}

/// The policy engine of `[policy]`, or `None` when no directory is set.
fn policy_engine(loaded: &Loaded) -> Result<Option<Arc<PolicyEngine>>, GatewayError> {
    let Some(settings) = tollgate_policy::Settings::from_config(&loaded.config, &loaded.path) else {
        tracing::warn!("no [policy] dir configured: every authenticated call is allowed");
        return Ok(None);
    };
    let engine = PolicyEngine::load(settings).map_err(|e| GatewayError::Policy(e.to_string()))?;
    let status = engine.status();
    tracing::info!(dir = %status.dir.display(), policies = status.policies, "policies loaded");
    Ok(Some(Arc::new(engine)))
}

/// The principal of calls on routes without authentication, so that
/// policies can still decide them (`Tollgate::Service::"anonymous"`).
fn anonymous() -> Principal {
    Principal {
        issuer: String::new(),
        subject: "anonymous".into(),
        client_id: None,
        token_id: None,
        audience: Vec::new(),
        groups: Vec::new(),
        team: None,
        cost_center: None,
        scopes: Vec::new(),
        expires_at: u64::MAX,
        kind: PrincipalKind::Service,
    }
}

fn auth_err(e: impl std::fmt::Display) -> GatewayError {
    GatewayError::Auth(e.to_string())
}

/// The development issuer, its key read or created on first use.
fn dev_issuer(loaded: &Loaded) -> Result<Option<DevIssuer>, GatewayError> {
    let Some(settings) = &loaded.dev_issuer else {
        return Ok(None);
    };
    let pem = read_or_create_file(&settings.key_file, DevIssuer::generate_pem).map_err(GatewayError::Auth)?;
    let dev = DevIssuer::from_pem(&settings.issuer, pem.expose()).map_err(auth_err)?;
    tracing::warn!(issuer = %settings.issuer, "development token issuer enabled: not for production");
    Ok(Some(dev))
}
