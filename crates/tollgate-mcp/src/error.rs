//! The MCP wire error: a classified failure carrying what the JSON-RPC error
//! body needs (request id, message, optional data).

use serde_json::Value;
use tollgate_core::{Classify, ErrorKind};

use crate::RequestId;

/// Result alias for this crate.
pub type Result<T, E = McpError> = std::result::Result<T, E>;

/// A protocol-level rejection of a request.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct McpError {
    /// What class of failure this is.
    pub kind: ErrorKind,
    /// The request id, when it is known, so the error can echo it.
    pub id: Option<RequestId>,
    /// A short message for the caller; never internal detail.
    pub message: String,
    /// Structured `error.data`, when the spec defines one (boxed: errors
    /// travel in `Result`s on the request path and should stay small).
    pub data: Option<Box<Value>>,
}

impl McpError {
    /// A new error without id or data.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> McpError {
        McpError {
            kind,
            id: None,
            message: message.into(),
            data: None,
        }
    }

    /// Attach `error.data`.
    pub fn with_data(mut self, data: Value) -> McpError {
        self.data = Some(Box::new(data));
        self
    }

    /// Attach the request id if none is set yet.
    pub fn with_id(mut self, id: Option<RequestId>) -> McpError {
        if self.id.is_none() {
            self.id = id;
        }
        self
    }

    /// Shorthand for a `HeaderMismatch` error.
    pub fn header(message: impl Into<String>) -> McpError {
        McpError::new(ErrorKind::HeaderMismatch, message)
    }
}

impl Classify for McpError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}
