//! MCP wire knowledge for Tollgate, with no I/O.
//!
//! The server crate calls into this crate at step 4 and 6 of the request path
//! (see `docs/architecture.md`): classify the protocol era, read and validate
//! the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! with the `=?base64?…?=` sentinel), scan a JSON-RPC body for the few values
//! the gateway needs without building a document tree, check header/body
//! agreement, and write JSON-RPC error bodies.

mod classify;
mod error;
pub mod headers;
mod jsonrpc;
mod scan;
pub mod sse;
mod version;

pub use classify::{Call, CallPlan, classify_post, supported_versions, unsupported_version};
pub use error::{McpError, Result};
pub use headers::{StandardHeaders, decode_header_value};
pub use jsonrpc::{RequestId, error_body};
pub use scan::{Message, MessageKind, Scanned, scan};
pub use version::{ProtocolVersion, Versions};
