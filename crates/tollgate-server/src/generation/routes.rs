//! Building the routes of a configuration: one [`Route`] per
//! `[[servers]]` entry (its upstream, audit observer and observers), one
//! [`VirtualRoute`] per `[[virtual_servers]]` entry over them, and the RFC
//! 9728 metadata document of each protected one.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use tollgate_audit::{AuditHandle, AuditObserver, RouteAudit};
use tollgate_config::Config;
use tollgate_core::CallObserver;

use super::same_upstream;
use crate::catalog::catalog_mode;
use crate::error::{GatewayError, auth_err};
use crate::front::Front;
use crate::live::Generation;
use crate::phase::admit::Admission;
use crate::route::{Route, RouteParts, Shared};
use crate::settings;
use crate::upstream::Upstream;
use crate::vserver::{self, VirtualRoute};

/// What every route is built with.
pub(super) struct RouteContext<'a> {
    pub(super) config: &'a Config,
    pub(super) issuers: &'a [String],
    pub(super) shared: &'a Arc<Shared>,
    pub(super) audit: &'a AuditHandle,
    /// The observers of every route (the call metrics, extra ones).
    pub(super) observers: &'a [Arc<dyn CallObserver>],
    pub(super) workers: usize,
    /// The configuration file's directory (relative paths).
    pub(super) base: &'a std::path::Path,
    /// The generation a reload replaces, whose state carries over.
    pub(super) previous: Option<&'a Generation>,
    /// The authorization server, when enabled.
    pub(super) issuer: Option<&'a Arc<tollgate_issuer::Issuer>>,
}

/// The front: admission, and one route per `[[servers]]` entry with its
/// RFC 9728 metadata document.
pub(super) fn front(config: &Config, cx: &RouteContext<'_>) -> Result<Front, GatewayError> {
    let mut routes = HashMap::new();
    let mut metadata = HashMap::new();
    for server in &config.servers {
        let route = route(server, cx)?;
        if let Some(resource) = &route.resource {
            let doc = Bytes::copy_from_slice(resource.metadata_json());
            metadata.insert(Box::from(resource.metadata_path()), doc);
        }
        routes.insert(
            format!("/mcp/{}", server.name.as_str()).into_boxed_str(),
            Arc::new(route),
        );
    }
    let virtuals = virtual_routes(config, cx, &routes, &mut metadata)?;
    let base = config.public_base_url();
    let admission = Admission::new(
        config.limits.max_header_bytes,
        config.security.allowed_origins.clone(),
        base.as_deref(),
    );
    let front_door = cx.issuer.map(|issuer| {
        issuer.serve(served(&routes, &virtuals));
        let door = tollgate_issuer::router(issuer.clone());
        match &cx.shared.vault {
            Some(vault) => door.merge(tollgate_vault::router(vault.clone())),
            None => door,
        }
    });
    Ok(Front {
        admission,
        routes,
        virtuals,
        metadata,
        front_door,
    })
}

/// Every protected route's resource URL and the scopes it offers: what
/// the authorization server issues tokens for.
fn served(
    routes: &HashMap<Box<str>, Arc<Route>>,
    virtuals: &HashMap<Box<str>, Arc<VirtualRoute>>,
) -> tollgate_issuer::Resources {
    let resources = routes
        .values()
        .filter_map(|r| r.resource.as_ref())
        .chain(virtuals.values().filter_map(|v| v.resource.as_ref()));
    resources
        .map(|r| (r.resource().to_owned(), r.scopes_supported().to_vec()))
        .collect()
}

/// One virtual route per `[[virtual_servers]]` entry over the routes of
/// its members, with its own RFC 9728 metadata document.
fn virtual_routes(
    config: &Config,
    cx: &RouteContext<'_>,
    routes: &HashMap<Box<str>, Arc<Route>>,
    metadata: &mut HashMap<Box<str>, Bytes>,
) -> Result<HashMap<Box<str>, Arc<VirtualRoute>>, GatewayError> {
    let mut out = HashMap::new();
    for v in &config.virtual_servers {
        let mut members = Vec::with_capacity(v.members.len());
        for m in &v.members {
            let route = routes
                .get(format!("/mcp/{}", m.server).as_str())
                .cloned()
                .ok_or_else(|| auth_err(format!("virtual server {}: no server {}", v.name.as_str(), m.server)))?;
            members.push(vserver::Member {
                route,
                config: m.clone(),
            });
        }
        let required = config.virtual_auth_required(v);
        let resource = settings::resource(required, config.virtual_resource_url(v), &v.auth, cx.issuers);
        let resource = resource.map_err(auth_err)?;
        if let Some(resource) = &resource {
            let doc = Bytes::copy_from_slice(resource.metadata_json());
            metadata.insert(Box::from(resource.metadata_path()), doc);
        }
        let route_audit = RouteAudit::new(&settings::virtual_route_audit(v, &config.audit));
        let audit = AuditObserver::new(cx.audit.clone(), route_audit);
        let mut observers: Vec<Arc<dyn CallObserver>> = vec![Arc::new(audit)];
        observers.extend(cx.observers.iter().cloned());
        let route = VirtualRoute::new(
            v,
            members,
            catalog_mode(config.catalog.mode),
            resource,
            cx.shared.clone(),
            observers,
        );
        out.insert(format!("/mcp/{}", v.name.as_str()).into_boxed_str(), Arc::new(route));
    }
    Ok(out)
}

fn route(server: &tollgate_config::Server, cx: &RouteContext<'_>) -> Result<Route, GatewayError> {
    let (old_route, old_server) = previous_route(server, cx).unzip();
    let upstream = match (&old_route, old_server) {
        (Some(r), Some(old)) if same_upstream(old, (server, &cx.config.timeouts)) => r.upstream.clone(),
        _ => Arc::new(Upstream::from_config(server, &cx.config.timeouts, cx.workers, cx.base)?),
    };
    let same_url = old_server.is_some_and(|(old, _)| old.url == server.url);
    let required = cx.config.auth_required(server);
    let resource = settings::resource(required, cx.config.resource_url(server), &server.auth, cx.issuers);
    let resource = resource.map_err(auth_err)?;
    let audit = Arc::new(AuditObserver::new(
        cx.audit.clone(),
        RouteAudit::new(&settings::route_audit(server, &cx.config.audit)),
    ));
    let mut observers: Vec<Arc<dyn CallObserver>> = vec![audit.clone()];
    observers.extend(cx.observers.iter().cloned());
    Ok(Route::new(RouteParts {
        name: Arc::from(server.name.as_str()),
        shared: cx.shared.clone(),
        upstream,
        previous: old_route.filter(|_| same_url),
        trust: server.header_trust,
        catalog: catalog_mode(cx.config.catalog_mode(server)),
        legacy: server.legacy,
        resource,
        audit,
        strict_audit: cx.audit.durability() == tollgate_audit::Durability::Strict,
        observers,
    }))
}

/// The route of the same name in the generation a reload replaces, with
/// its server's settings and the timeouts they were built with.
fn previous_route<'a>(
    server: &tollgate_config::Server,
    cx: &RouteContext<'a>,
) -> Option<(Arc<Route>, (&'a tollgate_config::Server, &'a tollgate_config::Timeouts))> {
    let previous = cx.previous?;
    let config = &previous.loaded.config;
    let old = config.servers.iter().find(|s| s.name == server.name)?;
    let route = previous
        .front
        .routes
        .get(format!("/mcp/{}", server.name.as_str()).as_str())?;
    Some((route.clone(), (old, &config.timeouts)))
}
