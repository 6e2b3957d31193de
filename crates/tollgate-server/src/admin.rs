//! The admin listener: `/healthz`, `/readyz` (serving, issuer keys loaded,
//! and in strict audit mode a healthy audit sink; `?detail` adds each
//! check, each route's catalog sync and audit shipping as JSON), `/metrics`, and
//! `/catalog` (per route: the gate, the sync, and every definition with
//! its verdict).
//!
//! Kept off the public listener so that operations endpoints are never
//! exposed with MCP traffic. `/healthz`, `/readyz` and `/metrics` are open
//! to probes and scrapers; the detail (`/readyz?detail`, `/catalog`) wants
//! the `[admin] token` when one is configured ([`gate`]). Upstream URLs are
//! shown without credentials or query.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use http::StatusCode;
use http::header::CONTENT_TYPE;
use prometheus::{Encoder, Registry, TextEncoder};
use tollgate_auth::DevIssuer;

mod clients;
mod gate;

use crate::catalog::Approvals;
use crate::governance::reload::LockFile;
use crate::governance::report;
use crate::live::{Generation, Live};

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
pub(crate) struct AdminState {
    pub(crate) ready: Readiness,
    pub(crate) registry: Registry,
    /// In strict durability, ready also requires a healthy audit sink
    /// (calls would be refused otherwise).
    pub(crate) audit: tollgate_audit::AuditHandle,
    /// The configuration in force: ready also requires every issuer's keys
    /// to have loaded once; its routes' catalogs and upstreams, virtual
    /// servers and limit store are reported.
    pub(crate) live: Arc<Live>,
    /// The approved definitions and their file.
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) lock: Arc<LockFile>,
    /// The authorization server, when enabled: its clients and grants.
    pub(crate) issuer: Option<Arc<tollgate_issuer::Issuer>>,
    /// Audit shipping to the fleet store, when `[store] postgres` is set.
    pub(crate) shipping: Option<Arc<crate::shipping::ShipStatus>>,
    /// The fleet store audit lines are shipped to: the console reads
    /// every replica's records there.
    pub(crate) fleet: Option<tollgate_store::Store>,
    /// Catalog approvals shared through the fleet store, when it holds
    /// them.
    pub(crate) shared: Option<Arc<crate::governance::shared::SharedApprovals>>,
}

/// The admin router. With the development issuer enabled, it also serves
/// that issuer's discovery document and JWKS under `/dev-issuer` (naming
/// its sign-in endpoints when `signin`: see `dev_signin`).
pub(crate) fn router(state: AdminState, dev: Option<&DevIssuer>, signin: bool) -> Router {
    let mut router = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/catalog", get(catalog))
        .merge(clients::routes());
    if let Some(dev) = dev {
        let jwks = Json(dev.jwks());
        let base = dev.issuer().trim_end_matches('/');
        let mut doc = serde_json::json!({
            "issuer": dev.issuer(),
            "jwks_uri": format!("{base}/jwks.json"),
            "id_token_signing_alg_values_supported": ["ES256"],
            // Required by OpenID Connect Discovery (the console's client reads them).
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
        });
        if signin {
            doc["authorization_endpoint"] = format!("{base}/authorize").into();
            doc["token_endpoint"] = format!("{base}/token").into();
            doc["code_challenge_methods_supported"] = serde_json::json!(["S256"]);
            doc["grant_types_supported"] = serde_json::json!(["authorization_code"]);
        }
        let discovery = Json(doc);
        router = router
            .route("/dev-issuer/jwks.json", get(move || async move { jwks }))
            .route(
                "/dev-issuer/.well-known/openid-configuration",
                get(move || async move { discovery }),
            );
    }
    router.with_state(state)
}

async fn readyz(State(s): State<AdminState>, uri: http::Uri, headers: http::HeaderMap) -> Response {
    let detail = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p.split('=').next() == Some("detail")));
    if detail && let Some(refused) = gate::refusal(&s.live, &headers) {
        return refused;
    }
    let g = s.live.current();
    let serving = s.ready.get();
    let audit_ok = s.audit.durability() != tollgate_audit::Durability::Strict || s.audit.is_healthy();
    let issuers_ok = g.shared.authn.as_ref().is_none_or(|a| a.is_ready());
    let ready = serving && audit_ok && issuers_ok;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if !detail {
        return (status, if ready { "ready\n" } else { "not ready\n" }).into_response();
    }
    // Catalog syncs, virtual servers, breakers and the limit store are
    // reported, not required: a gate with an old or no snapshot still only
    // lets approved definitions through, an open breaker answers its own
    // calls with 503, and a limit store that is down follows each rule's
    // `on_store_error`. So are audit shipping and the fleet store's
    // approvals: the files keep every record while the fleet store is
    // down, shipping catches up, and the approvals in force keep serving.
    let routes = g.routes();
    let catalogs: serde_json::Map<String, serde_json::Value> = routes
        .iter()
        .map(|r| (r.name.to_string(), report::sync_json(r)))
        .collect();
    let detail = serde_json::json!({
        "ready": ready,
        "checks": {"serving": serving, "issuer_keys": issuers_ok, "audit": audit_ok},
        "catalogs": catalogs,
        "virtual_servers": virtuals_json(&g),
        "limit_store": store_json(&g),
        "upstreams": upstreams_json(&routes),
        "config": config_json(&s.live, &g),
        "fleet_store": s.shipping.as_ref().map(|sh| sh.to_json()),
        "fleet_approvals": s.shared.as_ref().map(|sh| sh.to_json()),
    });
    (status, Json(detail)).into_response()
}

/// Each virtual server's members and their health.
pub(crate) fn virtuals_json(g: &Generation) -> serde_json::Map<String, serde_json::Value> {
    g.front
        .virtuals
        .values()
        .map(|v| (v.name.to_string(), crate::vserver::health(v).to_json()))
        .collect()
}

/// Each route's upstream (as shown: no credentials, no query), breaker
/// and concurrency.
pub(crate) fn upstreams_json(routes: &[Arc<crate::route::Route>]) -> serde_json::Map<String, serde_json::Value> {
    routes
        .iter()
        .map(|r| {
            let g = &r.upstream.guard;
            let (in_flight, max) = g.in_flight();
            let breaker = g.position().map(crate::upstream::Position::as_str);
            let v = serde_json::json!({
                "url": r.upstream.shown,
                "breaker": breaker,
                "in_flight": in_flight,
                "max_concurrent": max,
            });
            (r.name.to_string(), v)
        })
        .collect()
}

/// The limit store's health, when there is one.
pub(crate) fn store_json(g: &Generation) -> Option<serde_json::Value> {
    g.shared
        .limiter
        .store_health()
        .map(|h| serde_json::json!({"kind": "redis", "up": h.up, "errors": h.errors, "last_error": h.last_error}))
}

/// The configuration in force and how reloads went.
fn config_json(live: &Live, g: &Generation) -> serde_json::Value {
    let status = &live.status;
    let last = status.last();
    serde_json::json!({
        "path": g.loaded.path.display().to_string(),
        "generation": g.number,
        "reloads": status.reloads.load(Ordering::Relaxed),
        "reload_failures": status.failures.load(Ordering::Relaxed),
        "last_reload_ok": last.error.is_none(),
        "last_reload_at": last.at.map(|t| humantime::format_rfc3339_seconds(t).to_string()),
        "last_error": last.error,
        "restart_required": last.restart_required,
    })
}

async fn catalog(State(s): State<AdminState>, headers: http::HeaderMap) -> Response {
    if let Some(refused) = gate::refusal(&s.live, &headers) {
        return refused;
    }
    let lock = s.approvals.current();
    Json(report::catalog_json(&s.live.current().routes(), &lock, &s.lock)).into_response()
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
