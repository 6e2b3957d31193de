//! Assembling a gateway from configuration and running it.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use prometheus::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tollgate_config::Loaded;

use crate::admin::{self, Readiness};
use crate::serve::{ServeOptions, serve};
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
}

/// A gateway built from configuration, ready to serve.
#[derive(Debug)]
pub struct Gateway {
    public: Router,
    admin: Router,
    ready: Readiness,
    options: ServeOptions,
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
        let upstreams = config
            .servers
            .iter()
            .map(|s| Upstream::from_config(s, &config.timeouts).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let keys: Vec<&[u8]> = loaded.session_keys.iter().map(|k| k.expose()).collect();
        if keys.is_empty() {
            tracing::warn!(
                "no [sessions] key configured: legacy sessions will not survive a restart or cross replicas"
            );
        }
        let sealer = Sealer::new(&keys, config.sessions.ttl).map_err(|_| GatewayError::Sessions)?;
        let shared = Arc::new(Shared {
            limits: config.limits.clone(),
            sealer,
            metrics: Metrics::register(&registry)?,
        });
        let origins: Arc<[String]> = config.security.allowed_origins.clone().into();
        let ready = Readiness::default();
        Ok(Gateway {
            public: stack::build(shared, &upstreams, origins),
            admin: admin::router(ready.clone(), registry),
            ready,
            options: ServeOptions {
                max_header_bytes: config.limits.max_header_bytes,
                header_read_timeout: config.limits.header_read_timeout,
                grace: config.shutdown.grace,
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
    }
}
