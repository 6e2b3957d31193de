//! Bounded single-pass scan of a JSON-RPC body.
//!
//! The scan reads only `id`, `method`, `params.name`, `params.uri`,
//! `params.taskId` and a few `params._meta` keys; every other value is
//! skipped by the parser without being allocated (`serde::de::IgnoredAny`).
//! Duplicate keys among the ones read are rejected, so a body cannot show
//! the gateway one name and the upstream another. Nesting is bounded by the
//! parser's recursion limit and size by the server's body limit.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use smol_str::SmolStr;
use tollgate_core::{CallIdentity, ErrorKind};

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

#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<RawParams<'a>>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct RawParams<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "taskId")]
    task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<RawMeta<'a>>,
}

#[derive(Deserialize)]
struct RawMeta<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    traceparent: Option<Cow<'a, str>>,
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
/// `ParseError` when the body is not JSON; `InvalidRequest` when it is JSON
/// but not JSON-RPC messages of the expected shape (including an empty
/// batch and duplicate keys among the ones the gateway reads).
pub fn scan(body: &[u8]) -> Result<Scanned> {
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
        Some(_) => Err(match serde_json::from_slice::<IgnoredAny>(body) {
            Ok(_) => McpError::new(ErrorKind::InvalidRequest, "Invalid Request: not a JSON-RPC message"),
            Err(_) => McpError::new(ErrorKind::ParseError, "Parse error"),
        }),
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
    if let Some(id) = &id {
        let text = id.as_json().as_bytes();
        if !(text.first() == Some(&b'"') || text.first().is_some_and(|b| b.is_ascii_digit() || *b == b'-')) {
            return Err(McpError::new(
                ErrorKind::InvalidRequest,
                "Invalid Request: id must be a string or number",
            ));
        }
    }
    let (kind, method) = match (raw.method, raw.result.is_some() || raw.error.is_some()) {
        (Some(m), false) if id.is_some() => (MessageKind::Request, SmolStr::new(m)),
        (Some(m), false) => (MessageKind::Notification, SmolStr::new(m)),
        (None, true) if id.is_some() => (MessageKind::Response, SmolStr::default()),
        _ => {
            return Err(McpError::new(ErrorKind::InvalidRequest, "Invalid Request").with_id(id));
        }
    };
    let (name, protocol_version, traceparent) = match raw.params {
        None => (None, None, None),
        Some(p) => {
            let name = target_of(&method, p.name, p.uri, p.task_id);
            let (pv, tp) = match p.meta {
                None => (None, None),
                Some(m) => (m.protocol_version.map(SmolStr::new), m.traceparent.map(Cow::into_owned)),
            };
            (name, pv, tp)
        }
    };
    Ok(Message {
        kind,
        id,
        method,
        name,
        protocol_version,
        traceparent,
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
