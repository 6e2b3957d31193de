//! An OAuth-protected MCP server for tests:
//! `tests/fixtures/js/protected-server.mjs` (the TypeScript SDK over
//! Streamable HTTP) as a child process on a loopback port. It accepts only
//! JWT access tokens (RFC 9068) of one issuer for its resource URL
//! (`http://127.0.0.1:PORT/mcp` unless `--resource` says otherwise), answers
//! 401 with an RFC 9728 `resource_metadata` challenge otherwise, and has the
//! tools `whoami` (the presented token's `sub`, `scope`, `client_id`, `jti`
//! as JSON text) and `echo`. See the comment at the top of the script.
//!
//! Its authorization server is typically [`crate::idp::Idp`] with
//! `"resources": {"<the server's resource URL>": {"scopes": [...]}}`; as
//! both must know each other's URL, pick the server's port first:
//!
//! ```ignore
//! let port = free_port();
//! let resource = ProtectedServer::resource_for(port);
//! let idp = Idp::start(json!({ "resources": { resource.clone(): { "scopes": ["repo"] } }, ... })).await;
//! let server = ProtectedServer::start_on(port, &idp.issuer).await;
//! ```
//!
//! It fetches the issuer's keys on first use, so it may also start before
//! the issuer.

use tokio::process::{Child, ChildStdin};

use crate::children::{ReadyChild, fixtures, free_port, require, spawn_ready};

/// `protected-server.mjs` running as a child process; it stops when this is
/// dropped (killed, and its stdin closes).
pub struct ProtectedServer {
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The resource URL its tokens must be issued for (their `aud`).
    pub resource: String,
    /// Its RFC 9728 metadata document, the `resource_metadata` of its
    /// `WWW-Authenticate` challenge.
    pub metadata_url: String,
    log: tempfile::NamedTempFile,
    _stdin: ChildStdin,
    _child: Child,
}

impl ProtectedServer {
    /// The default resource URL of a server on loopback port `port`.
    pub fn resource_for(port: u16) -> String {
        format!("http://127.0.0.1:{port}/mcp")
    }

    /// Start a server trusting `issuer` on a free loopback port, once it
    /// listens.
    pub async fn start(issuer: &str) -> ProtectedServer {
        ProtectedServer::start_on(free_port(), issuer).await
    }

    /// [`ProtectedServer::start`] on loopback port `port`, for a test that
    /// must name the resource URL ([`ProtectedServer::resource_for`]) in
    /// the issuer's configuration first.
    pub async fn start_on(port: u16, issuer: &str) -> ProtectedServer {
        ProtectedServer::start_with(port, issuer, &[]).await
    }

    /// [`ProtectedServer::start_on`] with further `protected-server.mjs`
    /// options: `--stateless`, `--scopes "a b"` (its metadata's
    /// `scopes_supported`), `--resource URL`.
    pub async fn start_with(port: u16, issuer: &str, extra: &[&str]) -> ProtectedServer {
        let js = fixtures().join("js");
        require(&js.join("node_modules/@modelcontextprotocol/sdk/package.json"));
        require(&js.join("node_modules/jose/package.json"));
        let mut args = vec!["--port".into(), port.to_string(), "--issuer".into(), issuer.to_owned()];
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let ReadyChild {
            child,
            stdin,
            ready: url,
            log,
        } = spawn_ready("protected-server.mjs", &args).await;
        let resource = extra
            .iter()
            .position(|a| *a == "--resource")
            .and_then(|i| extra.get(i + 1))
            .map_or_else(|| url.clone(), |r| (*r).to_owned());
        let origin = url.strip_suffix("/mcp").unwrap_or(&url);
        let metadata_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
        ProtectedServer {
            url,
            resource,
            metadata_url,
            log,
            _stdin: stdin,
            _child: child,
        }
    }

    /// What the server wrote to stderr so far: one line per request to
    /// `/mcp` (`protected: POST /mcp sub=alice client_id=... jti=...
    /// rpc=tools/call session=...`, or `protected: POST /mcp 401 <reason>`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The token subjects of the requests to `/mcp` whose token it accepted
    /// so far (including a request then refused for another subject's
    /// session), in order.
    pub fn subjects(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| l.strip_prefix("protected: "))
            .filter_map(|l| l.split(' ').find_map(|w| w.strip_prefix("sub=")))
            .map(str::to_owned)
            .collect()
    }
}
