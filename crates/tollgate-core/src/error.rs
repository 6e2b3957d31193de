//! Error classes: what went wrong, independent of how it is reported.
//!
//! Every crate's error type implements [`Classify`]; the server's rescue
//! layer maps an [`ErrorKind`] to an HTTP status and JSON-RPC code.

/// The class of a failure on the request path.
///
/// The variants are the rows of `docs/errors.md`. Adding a variant forces the
/// server's error mapping (an exhaustive `match`) to be extended; for that
/// reason the enum is deliberately not `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The body is not valid JSON.
    ParseError,
    /// The body is JSON but not a valid JSON-RPC request for this era
    /// (e.g. a batch in the 2026-07-28 era).
    InvalidRequest,
    /// A required MCP standard header is missing, malformed, badly encoded or
    /// disagrees with the body.
    HeaderMismatch,
    /// The protocol version named by the client is not one Tollgate serves.
    UnsupportedProtocolVersion,
    /// A modern-era request lacks a required `_meta` key.
    MissingMeta,
    /// The HTTP method is not served on this route (GET/DELETE on a
    /// modern-only route).
    MethodNotAllowed,
    /// No configured MCP server has this route.
    UnknownRoute,
    /// The legacy session id is forged, expired or belongs to another route
    /// or principal.
    SessionNotFound,
    /// The `Origin` header is present and not allowed.
    ForbiddenOrigin,
    /// No bearer token, or one that is invalid, expired or issued for
    /// another resource (401 with a `WWW-Authenticate` challenge).
    Unauthenticated,
    /// The token is valid but lacks a scope the operation needs (403 with
    /// `error="insufficient_scope"`).
    InsufficientScope,
    /// The token cannot be checked now: its issuer's keys were never
    /// loaded, or its introspection endpoint fails.
    AuthUnavailable,
    /// The policies deny the call: answered like an unknown tool, prompt or
    /// resource so that a caller cannot probe for hidden names.
    PolicyDenied,
    /// The catalog gate refuses the call: the definition it names is not
    /// approved (quarantined: answered like an unknown name) or changed
    /// since it was approved (blocked).
    NotApproved,
    /// A virtual server has no member tool, prompt or resource by the name
    /// the call gives (or the cursor it sends is not one it handed out):
    /// answered like an unknown name.
    UnknownName,
    /// A virtual server does not route or answer this method.
    MethodNotFound,
    /// A rate-limit rule has no room for the call now (`[[limits.rules]]`).
    RateLimited,
    /// The upstream's circuit breaker is open: it failed too often lately.
    CircuitOpen,
    /// A token budget the caller counts against is spent for this period
    /// (`[[limits.budgets]]`).
    BudgetExhausted,
    /// The call needs the caller's own grant at the upstream, which they
    /// have not given yet: the answer carries the URL to give it at.
    UrlElicitationRequired,
    /// The request headers exceed the configured limit.
    HeadersTooLarge,
    /// The request body exceeds the configured limit.
    BodyTooLarge,
    /// The content type is not `application/json`.
    UnsupportedMediaType,
    /// The gateway is at its concurrency limit and shed the request.
    Overloaded,
    /// The gateway is shutting down and no longer accepts new calls.
    ShuttingDown,
    /// The upstream refused or reset the connection, or answered garbage.
    UpstreamUnavailable,
    /// The upstream did not answer within the configured time.
    UpstreamTimeout,
    /// A list response could not be filtered by policy (unparsable or too
    /// large): the caller gets an error, never the unfiltered list.
    ListUnfilterable,
    /// Strict audit: the call's record could not be made durable, so the
    /// call is refused (fail closed).
    AuditUnavailable,
    /// An element of a legacy batch that was not forwarded because another
    /// element of the same batch was refused (the batch goes upstream whole
    /// or not at all).
    BatchNotForwarded,
    /// A bug or an unexpected internal failure.
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order of `docs/errors.md`.
    pub const ALL: [ErrorKind; 31] = [
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::HeaderMismatch,
        ErrorKind::UnsupportedProtocolVersion,
        ErrorKind::MissingMeta,
        ErrorKind::MethodNotAllowed,
        ErrorKind::UnknownRoute,
        ErrorKind::SessionNotFound,
        ErrorKind::ForbiddenOrigin,
        ErrorKind::Unauthenticated,
        ErrorKind::InsufficientScope,
        ErrorKind::AuthUnavailable,
        ErrorKind::PolicyDenied,
        ErrorKind::NotApproved,
        ErrorKind::UnknownName,
        ErrorKind::MethodNotFound,
        ErrorKind::RateLimited,
        ErrorKind::CircuitOpen,
        ErrorKind::BudgetExhausted,
        ErrorKind::UrlElicitationRequired,
        ErrorKind::HeadersTooLarge,
        ErrorKind::BodyTooLarge,
        ErrorKind::UnsupportedMediaType,
        ErrorKind::Overloaded,
        ErrorKind::ShuttingDown,
        ErrorKind::UpstreamUnavailable,
        ErrorKind::UpstreamTimeout,
        ErrorKind::ListUnfilterable,
        ErrorKind::AuditUnavailable,
        ErrorKind::BatchNotForwarded,
        ErrorKind::Internal,
    ];

    /// A stable snake_case name, used in logs, metrics labels and docs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "parse_error",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::HeaderMismatch => "header_mismatch",
            ErrorKind::UnsupportedProtocolVersion => "unsupported_protocol_version",
            ErrorKind::MissingMeta => "missing_meta",
            ErrorKind::MethodNotAllowed => "method_not_allowed",
            ErrorKind::UnknownRoute => "unknown_route",
            ErrorKind::SessionNotFound => "session_not_found",
            ErrorKind::ForbiddenOrigin => "forbidden_origin",
            ErrorKind::Unauthenticated => "unauthenticated",
            ErrorKind::InsufficientScope => "insufficient_scope",
            ErrorKind::AuthUnavailable => "auth_unavailable",
            ErrorKind::PolicyDenied => "policy_denied",
            ErrorKind::NotApproved => "not_approved",
            ErrorKind::UnknownName => "unknown_name",
            ErrorKind::MethodNotFound => "method_not_found",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::CircuitOpen => "circuit_open",
            ErrorKind::BudgetExhausted => "budget_exhausted",
            ErrorKind::UrlElicitationRequired => "url_elicitation_required",
            ErrorKind::HeadersTooLarge => "headers_too_large",
            ErrorKind::BodyTooLarge => "body_too_large",
            ErrorKind::UnsupportedMediaType => "unsupported_media_type",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ShuttingDown => "shutting_down",
            ErrorKind::UpstreamUnavailable => "upstream_unavailable",
            ErrorKind::UpstreamTimeout => "upstream_timeout",
            ErrorKind::ListUnfilterable => "list_unfilterable",
            ErrorKind::AuditUnavailable => "audit_unavailable",
            ErrorKind::BatchNotForwarded => "batch_not_forwarded",
            ErrorKind::Internal => "internal",
        }
    }
}

/// Implemented by every error type on the request path.
pub trait Classify {
    /// The class this error falls in.
    fn kind(&self) -> ErrorKind;
}
