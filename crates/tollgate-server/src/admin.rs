//! The admin listener: `/healthz`, `/readyz` and `/metrics`.
//!
//! Kept off the public listener so that operations endpoints are never
//! exposed with MCP traffic.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use http::StatusCode;
use http::header::CONTENT_TYPE;
use prometheus::{Encoder, Registry, TextEncoder};

/// Whether the gateway should receive traffic: set once the configuration
/// is loaded and the listeners are bound, cleared when draining starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Mark ready or not ready.
    pub(crate) fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }

    /// Whether ready.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

#[derive(Clone)]
struct AdminState {
    ready: Readiness,
    registry: Registry,
}

/// The admin router.
pub(crate) fn router(ready: Readiness, registry: Registry) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(AdminState { ready, registry })
}

async fn readyz(State(s): State<AdminState>) -> impl IntoResponse {
    if s.ready.get() {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

async fn metrics(State(s): State<AdminState>) -> impl IntoResponse {
    let encoder = TextEncoder::new();
    let mut buf = Vec::new();
    match encoder.encode(&s.registry.gather(), &mut buf) {
        Ok(()) => (StatusCode::OK, [(CONTENT_TYPE, encoder.format_type().to_owned())], buf).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "metrics encoding failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
