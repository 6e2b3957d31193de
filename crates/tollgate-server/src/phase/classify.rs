//! Phase 3, classify: what kind of MCP request this is, from the HTTP
//! method and the standard headers alone.
//!
//! Nothing is refused here: a malformed standard header is kept as read
//! and refused by `identify`, after authentication, so that a caller
//! without a valid token learns nothing about the route.

use http::Method;
use http::request::Parts;
use tollgate_mcp::StandardHeaders;

/// The shape of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A POST carrying JSON-RPC messages.
    Post,
    /// A GET opening a legacy session's stream.
    Stream,
    /// A DELETE ending a legacy session.
    EndSession,
    /// Any other HTTP method.
    Other,
}

/// A classified request.
#[derive(Debug)]
pub(crate) struct Classified {
    /// Its shape.
    pub(crate) kind: Kind,
    /// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, as read.
    pub(crate) headers: StandardHeaders,
}

/// Classify a request by its method and standard headers.
pub(crate) fn classify(parts: &Parts) -> Classified {
    let kind = match parts.method {
        Method::POST => Kind::Post,
        Method::GET => Kind::Stream,
        Method::DELETE => Kind::EndSession,
        _ => Kind::Other,
    };
    Classified {
        kind,
        headers: StandardHeaders::read(&parts.headers),
    }
}
