//! MCP wire knowledge for Tollgate, with no I/O.
//!
//! The server crate calls into this crate along the request path (see
//! `docs/architecture.md`):
//!
//! - step 4, [`CallPlan::from_headers`]: read and validate the standard
//!   headers ([`headers`]: `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name`, with the `=?base64?…?=` sentinel) against the protocol
//!   [`Versions`] the route serves;
//! - step 6, [`scan`] and [`classify_post`]: scan a JSON-RPC body for the few
//!   values the gateway needs, without building a document tree and within
//!   a nesting limit, then classify the era and check header/body agreement;
//! - steps 12–13, [`sse`] and [`answer`]: read the upstream's answer, JSON or
//!   Server-Sent Events (the project's one SSE reader and writer), for list
//!   filtering, error codes, metering and learning;
//! - any refusal: [`McpError`] and [`error_body`] write the JSON-RPC error.

pub mod answer;
mod classify;
mod completion;
mod error;
pub mod headers;
mod initialize;
mod jsonrpc;
pub mod params;
mod scan;
pub mod splice;
pub mod sse;
mod version;

pub use answer::{answer_errors, answer_messages};
pub use classify::{
    Call, CallPlan, TASKS_EXTENSION, check_notification, check_served, classify_post, names_a_task, supported_versions,
    unsupported_version,
};
pub use completion::{CompletionRef, completion_ref};
pub use error::{McpError, Result};
pub use headers::{StandardHeaders, decode_header_value, encode_header_value};
pub use initialize::declares_url_elicitation;
pub use jsonrpc::{RequestId, error_body, result_body};
pub use params::{ParamHeader, ParamKind, check_params, param_headers, tool_arguments};
pub use scan::{Message, MessageKind, Scanned, scan};
pub use version::{ProtocolVersion, Versions};
