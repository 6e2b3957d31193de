//! A route, `/mcp/{name}`: one upstream MCP server with its settings, and
//! the state every route shares ([`Shared`]).
//!
//! Built once from configuration at start; read by every phase. The
//! phases that run before a call is resolved to a route — authenticate and
//! identify — read the addressed [`Endpoint`]: a route, or a virtual
//! server.

use std::sync::Arc;

use arc_swap::ArcSwap;
use serde::Deserialize;
use tollgate_auth::{Authenticator, CredentialBroker, ProtectedResource};
use tollgate_config::HeaderTrust;
use tollgate_core::{CallObserver, ErrorKind, McpMethod, Principal};
use tollgate_mcp::{Call, McpError, ProtocolVersion, Versions, answer_messages, unsupported_version};
use tollgate_meter::TokenEstimator;
use tollgate_policy::PolicyEngine;
use tollgate_telemetry::Spans;

use crate::catalog::{Approvals, RouteCatalog};
use crate::upstream::Upstream;
use tollgate_session::Sealer;

/// State shared by every route.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Token validation; `None` when no route requires it.
    pub(crate) authn: Option<Arc<Authenticator>>,
    /// Upstream credentials.
    pub(crate) broker: Arc<CredentialBroker>,
    /// Legacy session ids.
    pub(crate) sealer: Arc<Sealer>,
    /// Cedar policies; `None` when `[policy] dir` is unset.
    pub(crate) policy: Option<Arc<PolicyEngine>>,
    /// Who calls on an open route, for policies.
    pub(crate) anonymous: Arc<Principal>,
    /// The approved definitions (`catalog.lock`).
    pub(crate) approvals: Arc<Approvals>,
    /// OpenTelemetry spans (record nothing unless `[tracing]` is on).
    pub(crate) spans: Spans,
    /// Tokens from response bytes.
    pub(crate) estimator: TokenEstimator,
    /// The rate limits and their counters.
    pub(crate) limiter: Arc<tollgate_limit::Limiter>,
    /// Each user's upstream grants (`user_oauth` servers), when any.
    pub(crate) vault: Option<Arc<tollgate_vault::Vault>>,
}

/// One route.
pub(crate) struct Route {
    /// The server name (also the metrics label).
    pub(crate) name: Arc<str>,
    /// What every route shares.
    pub(crate) shared: Arc<Shared>,
    /// The upstream server (its connections and breaker carry over a
    /// configuration reload that leaves its settings alone).
    pub(crate) upstream: Arc<Upstream>,
    /// How far 2026-07-28 headers are trusted (as configured).
    pub(crate) trust: HeaderTrust,
    /// What the upstream lists, and how the catalog gate applies.
    pub(crate) catalog: RouteCatalog,
    /// The versions configured for the route (all, or 2026-07-28 only).
    configured: Versions,
    /// What the upstream announced of its versions.
    announced: ArcSwap<Announced>,
    /// The OAuth protected resource, when callers must authenticate.
    pub(crate) resource: Option<ProtectedResource>,
    /// Whether the upstream gets a brokered credential.
    pub(crate) brokered: bool,
    /// The route's audit trail.
    pub(crate) audit: Arc<tollgate_audit::AuditObserver>,
    /// Whether a call's record must be durable before it is forwarded.
    pub(crate) strict_audit: bool,
    /// Who reads the route's finished calls.
    pub(crate) observers: Vec<Arc<dyn CallObserver>>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The parts of a route.
pub(crate) struct RouteParts {
    pub(crate) name: Arc<str>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) upstream: Arc<Upstream>,
    /// The route this one replaces in a reloaded configuration, when its
    /// upstream URL is the same: its catalog and what the upstream
    /// announced carry on.
    pub(crate) previous: Option<Arc<Route>>,
    pub(crate) trust: HeaderTrust,
    pub(crate) catalog: tollgate_catalog::Mode,
    pub(crate) legacy: bool,
    pub(crate) resource: Option<ProtectedResource>,
    pub(crate) audit: Arc<tollgate_audit::AuditObserver>,
    pub(crate) strict_audit: bool,
    pub(crate) observers: Vec<Arc<dyn CallObserver>>,
}

impl Route {
    /// A route from its parts.
    pub(crate) fn new(p: RouteParts) -> Route {
        let brokered = p.shared.broker.kind(&p.name) != "none";
        let (catalog, announced) = match &p.previous {
            Some(old) => (old.catalog.continued(p.catalog), old.announced.load_full()),
            None => (RouteCatalog::new(&p.name, p.catalog), Arc::default()),
        };
        Route {
            name: p.name,
            shared: p.shared,
            upstream: p.upstream,
            trust: p.trust,
            catalog,
            configured: if p.legacy {
                Versions::all()
            } else {
                Versions::modern_only()
            },
            announced: ArcSwap::new(announced),
            brokered,
            resource: p.resource,
            audit: p.audit,
            strict_audit: p.strict_audit,
            observers: p.observers,
        }
    }

    /// Whether 2026-07-28 calls are identified from their headers alone:
    /// `header_trust = "upstream"`, unless the upstream turned out not to
    /// speak 2026-07-28.
    pub(crate) fn trusts_headers(&self) -> bool {
        self.trust == HeaderTrust::Upstream && !self.catalog.trust_refused()
    }

    /// Learn the versions a sync found the upstream announcing.
    pub(crate) fn learn_announced(&self, versions: &[String], discovered: bool) {
        let set = Versions::from_announced(versions);
        let now = **self.announced.load();
        let next = if discovered {
            Announced {
                discovered: Some(set),
                ..now
            }
        } else {
            Announced {
                initialized: set.iter().fold(now.initialized, Versions::with),
                ..now
            }
        };
        if next != now {
            self.announced.store(Arc::new(next));
        }
    }

    /// Whether legacy clients are served.
    pub(crate) fn legacy(&self) -> bool {
        self.configured.legacy_allowed()
    }

    /// The versions this route serves: those configured. What the
    /// upstream announced never narrows them: `server/discover` lists the
    /// revisions of 2026-07-28 negotiation, and a dual-era upstream (the
    /// Python SDK's) omits the legacy ones it still serves through
    /// `initialize`. A revision the upstream does not speak is refused by
    /// the upstream's own answer, which the client then negotiates with.
    pub(crate) fn served_versions(&self) -> Versions {
        self.configured
    }

    /// The versions named in a `-32022` answer: those served, narrowed to
    /// what the upstream announced (`server/discover` or `initialize`)
    /// when it announced any of them.
    pub(crate) fn named_versions(&self) -> Versions {
        let served = self.served_versions();
        let announced = self.announced.load();
        let seen = announced.discovered.unwrap_or_else(Versions::empty);
        let seen = announced.initialized.iter().fold(seen, Versions::with);
        match served.intersect(seen) {
            named if named.is_empty() => served,
            named => named,
        }
    }

    /// An unsupported-version error names the versions of this route.
    pub(crate) fn version_error(&self, e: McpError) -> McpError {
        if e.kind != ErrorKind::UnsupportedProtocolVersion {
            return e;
        }
        let requested = e
            .data
            .as_ref()
            .and_then(|d| d.get("requested"))
            .and_then(|r| r.as_str())
            .unwrap_or("unknown")
            .to_owned();
        unsupported_version(&requested, self.named_versions()).with_id(e.id)
    }

    /// Learn the versions an upstream announced in a `server/discover` or
    /// `initialize` answer.
    pub(crate) fn learn_versions(&self, answer: &[u8], sse: bool) {
        for msg in answer_messages(answer, sse) {
            let Ok(reply) = serde_json::from_slice::<Reply<'_>>(&msg) else {
                continue;
            };
            let Some(result) = reply.result else { continue };
            let now = self.announced.load();
            let next = Announced {
                discovered: result
                    .supported_versions
                    .map(Versions::from_announced)
                    .or(now.discovered),
                initialized: result
                    .protocol_version
                    .and_then(ProtocolVersion::parse)
                    .map_or(now.initialized, |v| now.initialized.with(v)),
            };
            if next != **now {
                self.announced.store(Arc::new(next));
            }
        }
    }

    /// Whether the route captures this call's arguments or results.
    pub(crate) fn captures_call(&self, call: &Call) -> bool {
        let capture = &self.audit.route().capture;
        let single_call = matches!(
            call.messages.as_slice(),
            [m] if matches!(McpMethod::from_name(&m.method), McpMethod::ToolsCall | McpMethod::PromptsGet | McpMethod::ResourcesRead)
        );
        single_call && (capture.captures_arguments() || capture.captures_results())
    }

    /// Whether the route captures results.
    pub(crate) fn captures_results(&self) -> bool {
        self.audit.route().capture.captures_results()
    }

    /// How much of a result is kept for capture.
    pub(crate) fn capture_limit(&self) -> usize {
        self.audit.route().capture.tee_limit()
    }
}

/// What an upstream announced of its protocol versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Announced {
    /// Its `server/discover` answer's `supportedVersions`.
    discovered: Option<Versions>,
    /// The versions it answered `initialize` with.
    initialized: Versions,
}

impl Default for Announced {
    fn default() -> Announced {
        Announced {
            discovered: None,
            initialized: Versions::empty(),
        }
    }
}

/// A `server/discover` or `initialize` answer, as far as versions go.
#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow, default)]
    result: Option<ReplyResult<'a>>,
}

#[derive(Deserialize)]
struct ReplyResult<'a> {
    #[serde(borrow, default, rename = "supportedVersions")]
    supported_versions: Option<Vec<&'a str>>,
    #[serde(borrow, default, rename = "protocolVersion")]
    protocol_version: Option<&'a str>,
}

/// What authenticate and identify read of the endpoint a request
/// addressed, before the call is resolved to a route: a route, or a
/// virtual server (which resolves it to one of its members).
pub(crate) trait Endpoint {
    /// Its name, served at `/mcp/{name}`.
    fn name(&self) -> &Arc<str>;
    /// What every route shares.
    fn shared(&self) -> &Shared;
    /// Who may call it, when callers must authenticate.
    fn resource(&self) -> Option<&ProtectedResource>;
    /// Whether 2026-07-28 calls are identified from their headers alone.
    fn trusts_headers(&self) -> bool;
    /// Whether legacy clients are served.
    fn serves_legacy(&self) -> bool;
    /// The protocol versions served.
    fn versions(&self) -> Versions;
    /// An unsupported-version error naming the versions served.
    fn version_refusal(&self, e: McpError) -> McpError;
    /// Whether the call's arguments are captured for the audit trail.
    fn captures(&self, call: &Call) -> bool;
}

impl Endpoint for Route {
    fn name(&self) -> &Arc<str> {
        &self.name
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn resource(&self) -> Option<&ProtectedResource> {
        self.resource.as_ref()
    }

    fn trusts_headers(&self) -> bool {
        Route::trusts_headers(self)
    }

    fn serves_legacy(&self) -> bool {
        self.legacy()
    }

    fn versions(&self) -> Versions {
        self.served_versions()
    }

    fn version_refusal(&self, e: McpError) -> McpError {
        self.version_error(e)
    }

    fn captures(&self, call: &Call) -> bool {
        self.captures_call(call)
    }
}
