//! Bounded single-pass scan of a JSON-RPC body.
//!
//! Step 6 of the request path: the server reads a POST body (bounded by its
//! body limit) and scans it here before classifying the call.
//!
//! The scan reads only `id`, `method`, `params.name`, `params.uri`,
//! `params.taskId`, `params.protocolVersion` and a few `params._meta` keys. Every other value is
//! still validated as JSON, within serde_json's nesting limit of 128
//! levels, and skipped without being allocated (see [`raw`]): a body the
//! scan passes is one the upstream can parse, and 10,000 nested arrays
//! anywhere in it are a parse error. Numbers outside the range of an `f64`
//! (`1e400`) are parse errors too. Duplicate keys among the ones read are
//! rejected, so a body cannot show the gateway one name and the upstream
//! another.

mod raw;

use std::borrow::Cow;

use smol_str::SmolStr;
use tollgate_core::{CallIdentity, ErrorKind};

use self::raw::{RawMessage, Skip};
use crate::{McpError, RequestId, Result};

/// The result of scanning a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scanned {
    /// A single JSON-RPC message.
    Single(Message),
    /// A batch (2025-03-26): one entry per element, in order.
    Batch(Vec<Message>),
}

impl Scanned {
    /// All messages, one for a single message.
    pub fn messages(&self) -> &[Message] {
        match self {
            Scanned::Single(m) => std::slice::from_ref(m),
            Scanned::Batch(v) => v,
        }
    }

    /// The id of the first request, for error bodies.
    pub fn first_id(&self) -> Option<RequestId> {
        match self {
            Scanned::Single(m) => m.id.clone(),
            Scanned::Batch(_) => None,
        }
    }
}

/// What kind of JSON-RPC message this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// Has `method` and `id`.
    Request,
    /// Has `method`, no `id`.
    Notification,
    /// Has `result` or `error` (a client's answer to a server request).
    Response,
}

/// The values the gateway reads from one JSON-RPC message.
///
/// Method, target name and version are [`SmolStr`]s: the typical ones (up
/// to 23 bytes) are stored inline, without a heap allocation per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Request, notification or response.
    pub kind: MessageKind,
    /// The id, for requests and responses.
    pub id: Option<RequestId>,
    /// The method (empty for responses).
    pub method: SmolStr,
    /// `params.name`, `params.uri` or `params.taskId`, whichever the method
    /// names its target by.
    pub name: Option<SmolStr>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    pub protocol_version: Option<SmolStr>,
    /// `params._meta.traceparent` (W3C trace context).
    pub traceparent: Option<String>,
    /// `params.protocolVersion`: the revision a legacy `initialize`
    /// offers. Reported in `-32022` answers; never used to classify.
    pub offered_version: Option<SmolStr>,
}

impl Message {
    /// The call identity for authorization and audit.
    pub fn identity(&self) -> CallIdentity {
        CallIdentity {
            method: self.method.to_string(),
            name: self.name.as_ref().map(SmolStr::to_string),
        }
    }
}

/// Scan a JSON-RPC body (a single message or a batch array).
///
/// ```
/// use tollgate_mcp::{Scanned, scan};
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
/// let Ok(Scanned::Single(m)) = scan(body) else { panic!("not a single message") };
/// assert_eq!((m.method.as_str(), m.name.as_deref()), ("tools/call", Some("echo")));
/// ```
///
/// # Errors
///
/// `ParseError` when the body is not JSON or nests deeper than 128 levels
/// anywhere; `InvalidRequest` when it is JSON
/// but not JSON-RPC messages of the expected shape (including an empty
/// batch and duplicate keys among the ones the gateway reads).
pub fn scan(body: &[u8]) -> Result<Scanned> {
    scan_messages(body).map_err(|e| {
        // A shape error may stop the parser before the end of the body, and
        // the id is captured without the nesting limit: whatever else is
        // wrong, a body that is not JSON within the limit is a parse error.
        if e.kind == ErrorKind::InvalidRequest && serde_json::from_slice::<Skip>(body).is_err() {
            McpError::new(ErrorKind::ParseError, "Parse error")
        } else {
            e
        }
    })
}

fn scan_messages(body: &[u8]) -> Result<Scanned> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'[') => {
            let raw: Vec<RawMessage<'_>> = serde_json::from_slice(body).map_err(classify)?;
            if raw.is_empty() {
                return Err(McpError::new(ErrorKind::InvalidRequest, "Invalid Request: empty batch"));
            }
            // A bad element fails the whole batch, answered with a null id.
            raw.into_iter()
                .map(|m| lift(m).map_err(|e| McpError { id: None, ..e }))
                .collect::<Result<Vec<_>>>()
                .map(Scanned::Batch)
        }
        Some(b'{') => {
            let raw: RawMessage<'_> = serde_json::from_slice(body).map_err(classify)?;
            lift(raw).map(Scanned::Single)
        }
        Some(_) => Err(McpError::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: not a JSON-RPC message",
        )),
        None => Err(McpError::new(ErrorKind::ParseError, "Parse error: empty body")),
    }
}

fn classify(e: serde_json::Error) -> McpError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => McpError::new(ErrorKind::ParseError, "Parse error"),
        Category::Data => McpError::new(ErrorKind::InvalidRequest, "Invalid Request"),
    }
}

fn lift(raw: RawMessage<'_>) -> Result<Message> {
    let id = raw.id.map(RequestId::from_raw);
    let scalar = |id: &RequestId| matches!(id.as_json().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'));
    if id.as_ref().is_some_and(|id| !scalar(id)) {
        return Err(McpError::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: id must be a string or number",
        ));
    }
    let (kind, method) = match (raw.method, raw.answer) {
        (Some(m), false) if id.is_some() => (MessageKind::Request, SmolStr::new(m)),
        (Some(m), false) => (MessageKind::Notification, SmolStr::new(m)),
        (None, true) if id.is_some() => (MessageKind::Response, SmolStr::default()),
        _ => {
            return Err(McpError::new(ErrorKind::InvalidRequest, "Invalid Request").with_id(id));
        }
    };
    let (name, protocol_version, traceparent, offered_version) = match raw.params {
        None => (None, None, None, None),
        Some(p) => {
            let offered = p.protocol_version.filter(|_| method == "initialize").map(SmolStr::new);
            let name = target_of(&method, p.name, p.uri, p.task_id);
            let (pv, tp) = match p.meta {
                None => (None, None),
                Some(m) => (m.protocol_version.map(SmolStr::new), m.traceparent.map(Cow::into_owned)),
            };
            (name, pv, tp, offered)
        }
    };
    Ok(Message {
        kind,
        id,
        method,
        name,
        protocol_version,
        traceparent,
        offered_version,
    })
}

/// The value a method names its target by: `uri` for resources, `taskId`
/// for tasks, `name` otherwise.
fn target_of(
    method: &str,
    name: Option<Cow<'_, str>>,
    uri: Option<Cow<'_, str>>,
    task_id: Option<Cow<'_, str>>,
) -> Option<SmolStr> {
    let chosen = if method.starts_with("resources/") {
        uri
    } else if method.starts_with("tasks/") {
        task_id
    } else {
        name
    };
    chosen.map(SmolStr::new)
}

#[cfg(test)]
mod tests;
