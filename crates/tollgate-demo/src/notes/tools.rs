//! The Notes MCP server: `whoami`, `add_note` and `list_notes`, each for
//! the user whose access token the request carries (put in the request's
//! extensions by the bearer check in [`super`]; rmcp hands each tool the
//! request's HTTP parts). Notes are kept per user, in memory.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::request::Parts;
use dashmap::DashMap;
use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::Extension, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, Implementation, ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::oauth::Caller;

/// How many notes a user may keep, and how long each may be: memory is
/// the only store.
const MAX_NOTES: usize = 100;
const MAX_NOTE_CHARS: usize = 2_000;

const INSTRUCTIONS: &str = "Notes, a demo SaaS that acts for each user with their own OAuth grant. \
Tools: whoami (whose grant this is), add_note, list_notes.";

/// The protocol revisions served, as the demo server's.
const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Every user's notes.
pub(crate) type Notebook = Arc<DashMap<String, Vec<String>>>;

/// Arguments of `add_note`.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddNoteArgs {
    /// The note's text.
    text: String,
}

/// The Notes MCP handler; one per session or stateless request, sharing the notebook.
#[derive(Clone)]
pub(crate) struct NotesServer {
    tool_router: ToolRouter<Self>,
    notebook: Notebook,
}

impl NotesServer {
    /// A handler over `notebook`.
    pub(crate) fn new(notebook: Notebook) -> Self {
        Self {
            tool_router: Self::tool_router(),
            notebook,
        }
    }
}

impl std::fmt::Debug for NotesServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotesServer")
            .field("users", &self.notebook.len())
            .finish_non_exhaustive()
    }
}

/// The caller of this request, with `scope` among their token's scopes;
/// the tool's error answer otherwise.
fn caller(parts: &Parts, scope: Option<&str>) -> Result<Caller, String> {
    let caller = parts.extensions.get::<Caller>().ok_or("no access token")?;
    match scope {
        Some(scope) if !caller.scopes.iter().any(|s| s == scope) => Err(format!("this grant lacks the {scope} scope")),
        _ => Ok(caller.clone()),
    }
}

fn refused(why: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why)])
}

#[tool_router(vis = "pub(crate)")]
impl NotesServer {
    /// The Notes user whose grant this call carries, and the grant's scopes.
    #[tool(
        name = "whoami",
        annotations(title = "Who am I", read_only_hint = true, open_world_hint = false)
    )]
    async fn whoami(&self, Extension(parts): Extension<Parts>) -> CallToolResult {
        match caller(&parts, None) {
            Ok(c) => CallToolResult::structured(json!({"user": c.user, "scopes": c.scopes})),
            Err(why) => refused(why),
        }
    }

    /// Keeps a note for the calling user.
    #[tool(
        name = "add_note",
        annotations(
            title = "Add a note",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_note(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<AddNoteArgs>,
    ) -> CallToolResult {
        let c = match caller(&parts, Some("notes:write")) {
            Ok(c) => c,
            Err(why) => return refused(why),
        };
        if args.text.chars().count() > MAX_NOTE_CHARS {
            return refused(format!("a note holds at most {MAX_NOTE_CHARS} characters"));
        }
        let mut notes = self.notebook.entry(c.user.clone()).or_default();
        if notes.len() >= MAX_NOTES {
            return refused(format!("at most {MAX_NOTES} notes each"));
        }
        notes.push(args.text);
        tracing::info!(user = %c.user, notes = notes.len(), "notes: note added");
        CallToolResult::success(vec![ContentBlock::text(format!(
            "Note {} kept for {}.",
            notes.len(),
            c.user
        ))])
    }

    /// Lists the calling user's notes, oldest first.
    #[tool(
        name = "list_notes",
        annotations(title = "List notes", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_notes(&self, Extension(parts): Extension<Parts>) -> CallToolResult {
        let c = match caller(&parts, Some("notes:read")) {
            Ok(c) => c,
            Err(why) => return refused(why),
        };
        let notes = self.notebook.get(&c.user).map(|n| n.clone()).unwrap_or_default();
        CallToolResult::structured(json!({"user": c.user, "notes": notes}))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for NotesServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("tollgate-demo-notes", env!("CARGO_PKG_VERSION")).with_title("Notes"))
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_VERSIONS)
    }
}
