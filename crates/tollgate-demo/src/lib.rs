//! `tollgate-demo`: the demo upstream MCP server that `make run` puts behind
//! the Tollgate gateway.
//!
//! It is not part of the gateway's request path. It serves MCP Streamable
//! HTTP at [`MCP_PATH`] for both protocol eras on one endpoint, through one
//! rmcp `StreamableHttpService` with `legacy_session_mode` on, which
//! classifies every POST:
//!
//! - legacy 2025-03-26 / 2025-06-18 / 2025-11-25: `initialize`,
//!   `Mcp-Session-Id` sessions, GET SSE stream, DELETE;
//! - 2026-07-28 (a request whose `params._meta` names that version):
//!   stateless POSTs whose `MCP-Protocol-Version`, `Mcp-Method` and
//!   `Mcp-Name` headers rmcp checks against the body, plus `server/discover`.
//!
//! It offers five tools (`echo`, `add`, `countdown`, `delete_item`,
//! `get_weather`), two resources (`demo://readme`,
//! `demo://secrets/api-keys`) and one prompt (`greeting`), all with canned
//! behaviour so gateway policies can be shown without side effects.
//!
//! With `--notes` the same binary serves [`serve_notes`] instead: "Notes",
//! a small SaaS whose MCP endpoint is protected by its own OAuth
//! authorization server on the same port, so that the demo can show a
//! user connecting their own grant through Tollgate (`user_oauth`).

mod http;
mod notes;
mod prompts;
mod resources;
mod server;
mod tools;

pub use http::{DemoConfig, MCP_PATH, serve, serve_with};
pub use notes::{NotesConfig, serve_notes};
