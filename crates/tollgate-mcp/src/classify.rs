//! Era classification and header/body agreement for a POST.
//!
//! Follows PROTOCOL.md §5: the body is the source of truth; the headers are
//! trusted alone only when the route's upstream enforces the 2026-07-28
//! header rules itself (`header_trust = "upstream"`). Legacy traffic is never
//! identified from headers.

use serde_json::json;
use smol_str::SmolStr;
use tollgate_core::{Era, ErrorKind, McpMethod};

use crate::{McpError, Message, MessageKind, ProtocolVersion, Result, Scanned, StandardHeaders, Versions};

/// A classified POST: its era, protocol version and the messages it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Modern (2026-07-28) or legacy.
    pub era: Era,
    /// The protocol version the client named, if any.
    pub version: Option<ProtocolVersion>,
    /// One entry per JSON-RPC message (several for a batch).
    pub messages: Vec<Message>,
    /// Whether the identity came from a body scan (false: headers only).
    pub scanned: bool,
}

/// What the server must do to classify a POST.
#[derive(Debug)]
pub enum CallPlan {
    /// The headers suffice (modern request, upstream enforces header rules):
    /// forward the body unread.
    HeadersOnly(Call),
    /// Read the body (bounded) and call [`classify_post`].
    ScanBody,
}

impl CallPlan {
    /// Decide from the headers alone whether the body must be scanned.
    ///
    /// `versions` is what the route can serve: the gateway's revisions
    /// intersected with what its upstream announced.
    ///
    /// # Errors
    ///
    /// `UnsupportedProtocolVersion` for a header version outside `versions`,
    /// or `HeaderMismatch` for a malformed or missing standard header on a
    /// modern request.
    pub fn from_headers(headers: &StandardHeaders, trust_headers: bool, versions: Versions) -> Result<CallPlan> {
        let version = header_version(headers, versions)?;
        let (true, Some(v @ ProtocolVersion::V2026_07_28)) = (trust_headers, version) else {
            return Ok(CallPlan::ScanBody);
        };
        let Some(method) = &headers.method else {
            // Possibly a notification, for which the headers are optional.
            return Ok(CallPlan::ScanBody);
        };
        let method = method.clone()?;
        // `initialize` is legacy; a completion's target is in its body; a
        // task request's id is replaced in the body by the gateway.
        if method == "initialize" || method == "completion/complete" || method.starts_with("tasks/") {
            return Ok(CallPlan::ScanBody);
        }
        let name = match (&headers.name, names_target(&method)) {
            (Some(n), _) => Some(n.clone()?),
            (None, true) => {
                return Err(McpError::header(format!(
                    "Header mismatch: Mcp-Name is required for {method}"
                )));
            }
            (None, false) => None,
        };
        Ok(CallPlan::HeadersOnly(Call {
            era: Era::Modern,
            version: Some(v),
            messages: vec![Message {
                kind: MessageKind::Request,
                id: None,
                method,
                name,
                protocol_version: Some(SmolStr::new_static(v.as_str())),
                traceparent: None,
                offered_version: None,
            }],
            scanned: false,
        }))
    }
}

/// Whether a method must carry `Mcp-Name` in the 2026-07-28 era.
fn names_target(method: &str) -> bool {
    McpMethod::from_name(method).requires_name() || names_a_task(method)
}

/// The tasks extension's id (SEP-2663) in capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether `method` names a task by its id (`params.taskId`; the tasks
/// extension, SEP-2663).
pub fn names_a_task(method: &str) -> bool {
    matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
}

/// The versions a route serves, oldest first, for `-32022` error data.
pub fn supported_versions(versions: Versions) -> Vec<&'static str> {
    versions.as_strs()
}

/// The `-32022` error for a version a route does not serve; its data names
/// the route's `versions`.
pub fn unsupported_version(requested: &str, versions: Versions) -> McpError {
    McpError::new(ErrorKind::UnsupportedProtocolVersion, "Unsupported protocol version").with_data(json!({
        "supported": supported_versions(versions),
        "requested": requested,
    }))
}

fn header_version(headers: &StandardHeaders, versions: Versions) -> Result<Option<ProtocolVersion>> {
    match &headers.version {
        None => Ok(None),
        Some(Err(text)) => Err(unsupported_version(text, versions)),
        Some(Ok(v)) if !versions.contains(*v) => Err(unsupported_version(v.as_str(), versions)),
        Some(Ok(v)) => Ok(Some(*v)),
    }
}

/// Classify a scanned POST body together with its headers.
///
/// `versions` is what the route can serve; a legacy call on a route without
/// any legacy revision is refused like an unknown version.
///
/// # Errors
///
/// The spec's rejections: `-32022` for a version outside `versions` (or a
/// legacy call on a route without legacy revisions), `-32020` for a
/// header that is missing, malformed or disagrees with the body, `-32602`
/// for a modern request without its `_meta` version, `-32600` for a batch
/// where batches are not allowed or a client response in the modern era.
pub fn classify_post(headers: &StandardHeaders, scanned: &Scanned, versions: Versions) -> Result<Call> {
    let version = header_version(headers, versions).map_err(|e| e.with_id(scanned.first_id()))?;
    let call = match scanned {
        Scanned::Batch(messages) => classify_batch(version, messages)?,
        Scanned::Single(m) => match version {
            Some(v @ ProtocolVersion::V2026_07_28) => {
                check_modern(headers, m).map_err(|e| e.with_id(m.id.clone()))?;
                modern_call(v, m)
            }
            _ => classify_legacy(version, m).map_err(|e| e.with_id(m.id.clone()))?,
        },
    };
    for m in &call.messages {
        check_notification(m).map_err(|e| e.with_id(scanned.first_id()))?;
    }
    if call.era == Era::Legacy && !versions.legacy_allowed() {
        return Err(unsupported_version(requested(&call), versions).with_id(scanned.first_id()));
    }
    Ok(call)
}

/// Refuse a call that `versions` do not serve: a version outside them, or
/// a legacy call where they hold no legacy revision (as [`classify_post`]
/// does). A virtual server checks the call it classified against the
/// versions of the member it resolved the call to.
///
/// # Errors
///
/// `-32022` naming the revision the call asked for.
pub fn check_served(call: &Call, versions: Versions) -> Result<()> {
    let outside = call.version.is_some_and(|v| !versions.contains(v));
    if outside || (call.era == Era::Legacy && !versions.legacy_allowed()) {
        return Err(unsupported_version(requested(call), versions));
    }
    Ok(())
}

/// Refuse a notification whose method is not a notification's: every
/// notification a client sends is `notifications/*`, and a request method
/// without an id (`tools/call`, `resources/read`, …) would run on the
/// upstream while its answer, and the gateway's checks of answered calls,
/// are skipped.
///
/// ```
/// use tollgate_mcp::{Scanned, check_notification, scan};
///
/// let Ok(Scanned::Single(m)) = scan(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#) else {
///     unreachable!()
/// };
/// assert!(check_notification(&m).is_err());
/// ```
///
/// # Errors
///
/// `InvalidRequest` for such a message.
pub fn check_notification(m: &Message) -> Result<()> {
    if m.kind == MessageKind::Notification && !m.method.starts_with("notifications/") {
        return Err(McpError::new(
            ErrorKind::InvalidRequest,
            format!("Invalid Request: {} is a request and needs an id", m.method),
        ));
    }
    Ok(())
}

/// The revision a legacy call asked for: its `MCP-Protocol-Version`
/// header, else what its `initialize` offers, else `unknown`.
fn requested(call: &Call) -> &str {
    match (call.version, call.messages.first()) {
        (Some(v), _) => v.as_str(),
        (None, Some(m)) => m.offered_version.as_deref().unwrap_or("unknown"),
        (None, None) => "unknown",
    }
}

fn modern_call(v: ProtocolVersion, m: &Message) -> Call {
    Call {
        era: Era::Modern,
        version: Some(v),
        messages: vec![m.clone()],
        scanned: true,
    }
}

fn classify_batch(version: Option<ProtocolVersion>, messages: &[Message]) -> Result<Call> {
    if messages
        .iter()
        .any(|m| body_version(m).is_some_and(|v| v.era() == Era::Modern))
    {
        return Err(McpError::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: batches are not allowed in 2026-07-28",
        ));
    }
    if let Some(v) = version.filter(|v| !v.allows_batches()) {
        return Err(McpError::new(
            ErrorKind::InvalidRequest,
            format!("Invalid Request: batches are not allowed in {v}"),
        ));
    }
    Ok(Call {
        era: Era::Legacy,
        version,
        messages: messages.to_vec(),
        scanned: true,
    })
}

fn body_version(m: &Message) -> Option<ProtocolVersion> {
    m.protocol_version.as_deref().and_then(ProtocolVersion::parse)
}

fn classify_legacy(version: Option<ProtocolVersion>, m: &Message) -> Result<Call> {
    if let Some(claim) = body_version(m).filter(|v| v.era() == Era::Modern) {
        return Err(match version {
            None => McpError::header(format!("Header mismatch: MCP-Protocol-Version is required for {claim}")),
            Some(v) => McpError::header(format!(
                "Header mismatch: MCP-Protocol-Version {v} disagrees with the body ({claim})"
            )),
        });
    }
    Ok(Call {
        era: Era::Legacy,
        version,
        messages: vec![m.clone()],
        scanned: true,
    })
}

/// The 2026-07-28 header/body agreement rules (PROTOCOL.md §2).
fn check_modern(headers: &StandardHeaders, m: &Message) -> Result<()> {
    if m.kind == MessageKind::Response {
        return Err(McpError::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: 2026-07-28 clients send no responses",
        ));
    }
    let claim = m.protocol_version.as_deref();
    if m.method == "initialize" && claim.is_none() {
        return Err(McpError::header(
            "Header mismatch: initialize is not part of 2026-07-28",
        ));
    }
    match claim {
        None if m.kind == MessageKind::Request => {
            return Err(McpError::new(
                ErrorKind::MissingMeta,
                "Invalid params: missing _meta[\"io.modelcontextprotocol/protocolVersion\"]",
            ));
        }
        Some(c) if c != ProtocolVersion::V2026_07_28.as_str() => {
            return Err(McpError::header(
                "Header mismatch: MCP-Protocol-Version disagrees with the body",
            ));
        }
        _ => {}
    }
    match &headers.method {
        Some(h) if h.as_ref().map_err(Clone::clone)? != &m.method => {
            return Err(McpError::header("Header mismatch: Mcp-Method disagrees with the body"));
        }
        None if m.kind == MessageKind::Request => {
            return Err(McpError::header("Header mismatch: Mcp-Method is required"));
        }
        _ => {}
    }
    match &headers.name {
        Some(h) if Some(h.as_ref().map_err(Clone::clone)?) != m.name.as_ref() => {
            Err(McpError::header("Header mismatch: Mcp-Name disagrees with the body"))
        }
        None if m.kind == MessageKind::Request && names_target(&m.method) => Err(McpError::header(format!(
            "Header mismatch: Mcp-Name is required for {}",
            m.method
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
