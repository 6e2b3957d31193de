//! The configuration model: what each key means and its default.
//!
//! Every struct rejects unknown keys. Defaults are safe for a single host:
//! loopback listeners, bounded bodies and headers, finite timeouts.

use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::SecretSource;
use crate::audit::{Audit, ServerAudit};
use crate::auth::{Auth, Credential, DevIssuer, ServerAuth};
use crate::catalog::{Catalog, CatalogMode};
use crate::policy::{Policy, ServerPolicy};
use crate::tracing::Tracing;
use crate::virtual_server::VirtualServer;

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Listener addresses.
    pub listen: Listen,
    /// Request size and concurrency limits.
    #[serde(default)]
    pub limits: Limits,
    /// Default upstream timeouts (each server may override them).
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Browser-facing protections.
    #[serde(default)]
    pub security: Security,
    /// Legacy session sealing.
    #[serde(default)]
    pub sessions: Sessions,
    /// Graceful shutdown.
    #[serde(default)]
    pub shutdown: Shutdown,
    /// Async runtime sizing.
    #[serde(default)]
    pub runtime: Runtime,
    /// Token validation: issuers and the public base URL.
    #[serde(default)]
    pub auth: Auth,
    /// A local token issuer for development (off by default).
    #[serde(default)]
    pub dev_issuer: DevIssuer,
    /// Tollgate as the OAuth authorization server of its routes (off by
    /// default).
    #[serde(default)]
    pub authorization_server: crate::AuthorizationServer,
    /// Where each user's upstream grants are kept (`user_oauth` servers).
    #[serde(default)]
    pub vault: crate::Vault,
    /// The audit trail: files, durability, spend estimation, OTLP export.
    #[serde(default)]
    pub audit: Audit,
    /// Authorization by Cedar policies (off unless `dir` is set).
    #[serde(default)]
    pub policy: Policy,
    /// OpenTelemetry traces over OTLP/HTTP (off by default).
    #[serde(default)]
    pub tracing: Tracing,
    /// Catalog governance: the lock of approved definitions and the gate
    /// (off by default).
    #[serde(default)]
    pub catalog: Catalog,
    /// The web console on the admin listener (off by default).
    #[serde(default)]
    pub console: crate::Console,
    /// Protection of the admin listener: its bearer token.
    #[serde(default)]
    pub admin: crate::Admin,
    /// The fleet store every replica shares (off by default).
    #[serde(default)]
    pub store: crate::Store,
    /// The upstream MCP servers, each routed at `/mcp/{name}`.
    #[serde(default)]
    pub servers: Vec<Server>,
    /// Routes composed of several servers' tools and prompts, each routed at
    /// `/mcp/{name}` beside the servers.
    #[serde(default)]
    pub virtual_servers: Vec<VirtualServer>,
}

impl Config {
    /// The canonical public base URL, without a trailing slash: `[auth]
    /// public_base_url`, else `http://` + `listen.public` unless that
    /// address is unspecified.
    pub fn public_base_url(&self) -> Option<String> {
        match &self.auth.public_base_url {
            Some(url) => Some(url.as_str().trim_end_matches('/').to_owned()),
            None if self.listen.public.ip().is_unspecified() => None,
            None => Some(format!("http://{}", self.listen.public)),
        }
    }

    /// The canonical URL of a route, its OAuth resource identifier.
    pub fn resource_url(&self, server: &Server) -> Option<String> {
        self.public_base_url()
            .map(|base| format!("{base}/mcp/{}", server.name.as_str()))
    }

    /// Whether calls on `server` need a token.
    pub fn auth_required(&self, server: &Server) -> bool {
        server.auth.required.unwrap_or(self.tokens_by_default())
    }

    /// Whether routes that do not say need a token: yes when any issuer
    /// (or the development issuer) is configured.
    pub(crate) fn tokens_by_default(&self) -> bool {
        !self.auth.issuers.is_empty() || self.dev_issuer.enabled || self.authorization_server.enabled
    }

    /// The catalog gate in force on `server`: its own `catalog`, else
    /// `[catalog] mode`.
    pub fn catalog_mode(&self, server: &Server) -> CatalogMode {
        server.catalog.unwrap_or(self.catalog.mode)
    }

    /// The console's public URL, without a trailing slash: `[console] url`,
    /// else `http://` + `listen.admin` + `/console`.
    pub fn console_url(&self) -> String {
        match &self.console.url {
            Some(url) => url.as_str().trim_end_matches('/').to_owned(),
            None => format!("http://{}/console", self.listen.admin),
        }
    }

    /// The issuer console users sign in with: `[console] issuer`, else the
    /// development issuer.
    pub fn console_issuer(&self) -> Option<String> {
        self.console.issuer.clone().or_else(|| self.dev_issuer_url())
    }

    /// The development issuer's URL when it is enabled.
    pub fn dev_issuer_url(&self) -> Option<String> {
        let dev = &self.dev_issuer;
        dev.enabled.then(|| {
            dev.issuer
                .clone()
                .unwrap_or_else(|| format!("http://{}/dev-issuer", self.listen.admin))
        })
    }

    /// Every issuer whose tokens the gateway accepts: the authorization
    /// server's own, `[[auth.issuers]]` and the development issuer, each
    /// once, in that order.
    pub fn trusted_issuers(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        let named = self.auth.issuers.iter().map(|i| i.issuer.clone());
        let own = self
            .authorization_server
            .enabled
            .then(|| self.public_base_url())
            .flatten();
        for issuer in own.into_iter().chain(named).chain(self.dev_issuer_url()) {
            if !all.contains(&issuer) {
                all.push(issuer);
            }
        }
        all
    }
}

/// Listener addresses.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Listen {
    /// MCP traffic: routes `/mcp/{server}`.
    pub public: SocketAddr,
    /// Operations: `/healthz`, `/readyz`, `/metrics`.
    pub admin: SocketAddr,
    /// TLS on the public listener; plain HTTP without it.
    #[serde(default)]
    pub tls: Option<crate::ListenerTls>,
    /// TLS on the admin listener; plain HTTP without it.
    #[serde(default)]
    pub admin_tls: Option<crate::ListenerTls>,
}

/// Request limits.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest request body accepted, in bytes (413 above).
    pub max_body_bytes: usize,
    /// Largest total size of request headers, in bytes (431 above).
    pub max_header_bytes: usize,
    /// Calls handled at once before new ones are shed with 503.
    pub max_concurrent_requests: usize,
    /// Time a client has to send its request headers.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub header_read_timeout: Duration,
    /// Rate limits (`[[limits.rules]]`), applied after authorization.
    pub rules: Vec<crate::RateRule>,
    /// Where the rules' counters are shared between replicas; counters
    /// live in each process without it.
    pub redis: Option<crate::RedisStore>,
    /// Token budgets (`[[limits.budgets]]`).
    pub budgets: Vec<crate::Budget>,
    /// The IANA time zone budget periods are counted in (`"UTC"`,
    /// `"Europe/Berlin"`).
    pub time_zone: String,
    /// Prices per million estimated tokens (`[[limits.prices]]`), for
    /// reporting spend in money; first match applies.
    pub prices: Vec<crate::Price>,
    /// The currency of the prices, as reports name it (`"USD"`, `"EUR"`).
    pub currency: String,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 4 * 1024 * 1024,
            max_header_bytes: 16 * 1024,
            max_concurrent_requests: 4096,
            header_read_timeout: Duration::from_secs(10),
            rules: Vec::new(),
            redis: None,
            budgets: Vec::new(),
            time_zone: "UTC".into(),
            prices: Vec::new(),
            currency: "USD".into(),
        }
    }
}

/// Upstream timeouts. Durations are written like `"2s"`, `"500ms"`, `"5m"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// Establishing a connection to the upstream.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub connect: Duration,
    /// From sending the request to the upstream's response headers.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub first_byte: Duration,
    /// Longest silence between two chunks of a response body (SSE included).
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(5),
            first_byte: Duration::from_secs(60),
            idle: Duration::from_secs(300),
        }
    }
}

/// Browser-facing protections.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Security {
    /// Origins allowed to call (exact `scheme://host[:port]`). A request
    /// with an `Origin` header not in this list gets 403; requests without
    /// `Origin` (non-browser clients) are not affected. Empty: every
    /// browser origin is refused.
    pub allowed_origins: Vec<String>,
}

/// Legacy (≤ 2025-11-25) session ids are sealed with AES-256-GCM so any
/// replica can route them without shared storage.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Sessions {
    /// The 32-byte key, base64-encoded. Without one a random key is made at
    /// start, so sessions do not survive a restart or cross replicas.
    pub key: Option<SecretSource>,
    /// Older keys still accepted for unsealing (rotation).
    pub previous_keys: Vec<SecretSource>,
    /// How long a session id stays valid.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub ttl: Duration,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            key: None,
            previous_keys: Vec::new(),
            ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// Graceful shutdown.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Shutdown {
    /// How long in-flight calls and streams may run after a stop signal.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub grace: Duration,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown {
            grace: Duration::from_secs(30),
        }
    }
}

/// Async runtime sizing.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Runtime {
    /// Worker threads serving the public listener (each a single-threaded
    /// runtime); default: one per core.
    pub worker_threads: Option<usize>,
}

/// How far the gateway trusts the MCP standard headers of modern requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeaderTrust {
    /// Scan the body and reject a header that disagrees with it (400).
    #[default]
    Verify,
    /// Trust the headers without reading the body; only for upstreams that
    /// enforce the 2026-07-28 header rules themselves.
    Upstream,
}

/// HTTP versions spoken to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamHttp {
    /// HTTP/1.1 for `http://`, ALPN (h2 or HTTP/1.1) for `https://`.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only (prior knowledge for `http://`).
    Http2,
}

/// A route name: `[A-Za-z0-9_.-]`, 1 to 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(try_from = "String")]
pub struct ServerName(String);

impl ServerName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ServerName {
    type Error = String;
    fn try_from(s: String) -> Result<ServerName, String> {
        let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if s.is_empty() || s.len() > 64 || !s.chars().all(ok_char) {
            return Err(format!("invalid server name {s:?}: use 1 to 64 of A-Z a-z 0-9 _ . -"));
        }
        Ok(ServerName(s))
    }
}

/// One upstream MCP server.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Route name: the server is served at `/mcp/{name}`.
    pub name: ServerName,
    /// The upstream's Streamable HTTP endpoint (`http://` or `https://`).
    #[schemars(with = "String")]
    pub url: Url,
    /// `verify` (default) or `upstream`.
    #[serde(default)]
    pub header_trust: HeaderTrust,
    /// Serve legacy clients (≤ 2025-11-25: `initialize`, sessions, GET
    /// streams, DELETE). Off: the route is 2026-07-28 only.
    #[serde(default = "default_true")]
    pub legacy: bool,
    /// HTTP versions spoken to the upstream.
    #[serde(default)]
    pub http: UpstreamHttp,
    /// Per-server timeouts; unset keys take `[timeouts]`.
    #[serde(default)]
    pub timeouts: Option<TimeoutOverrides>,
    /// What a caller needs to use this route.
    #[serde(default)]
    pub auth: ServerAuth,
    /// How the gateway authenticates to the upstream.
    #[serde(default)]
    pub credential: Credential,
    /// How policy decisions are applied on this route.
    #[serde(default)]
    pub policy: ServerPolicy,
    /// What this server's audit records say about it and capture.
    #[serde(default)]
    pub audit: ServerAudit,
    /// This route's catalog gate (`off`, `observe` or `enforce`); default:
    /// `[catalog] mode`.
    #[serde(default)]
    pub catalog: Option<CatalogMode>,
    /// Concurrency cap, circuit breaker and connect retries.
    #[serde(default)]
    pub resilience: crate::Resilience,
    /// TLS toward this upstream: extra CA certificates and a client
    /// certificate (mTLS).
    #[serde(default)]
    pub tls: Option<crate::UpstreamTls>,
}

fn default_true() -> bool {
    true
}

/// Per-server timeout overrides.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutOverrides {
    /// See [`Timeouts::connect`].
    #[serde(with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub connect: Option<Duration>,
    /// See [`Timeouts::first_byte`].
    #[serde(with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub first_byte: Option<Duration>,
    /// See [`Timeouts::idle`].
    #[serde(with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub idle: Option<Duration>,
}

impl Server {
    /// The timeouts in force for this server.
    pub fn timeouts(&self, defaults: &Timeouts) -> Timeouts {
        let o = self.timeouts.unwrap_or_default();
        Timeouts {
            connect: o.connect.unwrap_or(defaults.connect),
            first_byte: o.first_byte.unwrap_or(defaults.first_byte),
            idle: o.idle.unwrap_or(defaults.idle),
        }
    }
}
