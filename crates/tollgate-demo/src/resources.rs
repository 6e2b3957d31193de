//! The demo resources: a public readme and a "secret" one for policy demos.
//!
//! `demo://secrets/api-keys` holds no secret at all; it exists so that a
//! gateway policy denying it to most principals has something to deny.

use rmcp::{
    ErrorData,
    model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents},
};

/// URI of the public readme resource.
pub(crate) const README_URI: &str = "demo://readme";
/// URI of the restricted resource.
pub(crate) const SECRETS_URI: &str = "demo://secrets/api-keys";

const README_TEXT: &str = "\
# Tollgate demo server

This is `tollgate-demo`, the upstream MCP server that `make run` places behind
the Tollgate gateway. It speaks MCP Streamable HTTP at `/mcp`, both the legacy
session protocol (2025-03-26, 2025-06-18, 2025-11-25) and the stateless
2026-07-28 revision.

- Tools: `echo`, `add`, `countdown` (progress notifications), `delete_item`
  (destructive, deletes nothing), `get_weather` (open world, canned data).
- Resources: this readme and `demo://secrets/api-keys` (for policy demos).
- Prompts: `greeting` (requires `name`).
";

const SECRETS_TEXT: &str = "this resource is for the security team only";

/// Lists both demo resources.
pub(crate) fn list() -> ListResourcesResult {
    ListResourcesResult::with_all_items(vec![
        Resource::new(README_URI, "readme")
            .with_title("Demo readme")
            .with_description("What this demo server is and what it offers")
            .with_mime_type("text/markdown"),
        Resource::new(SECRETS_URI, "api-keys")
            .with_title("API keys")
            .with_description("Restricted: for the security team only (fake content)")
            .with_mime_type("text/plain"),
    ])
}

/// Reads one demo resource by URI.
///
/// # Errors
///
/// Returns a resource-not-found error for any other URI (rmcp reports it as
/// `-32002` to legacy peers and `-32602` to 2026-07-28 peers).
pub(crate) fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let (text, mime) = match uri {
        README_URI => (README_TEXT, "text/markdown"),
        SECRETS_URI => (SECRETS_TEXT, "text/plain"),
        _ => {
            return Err(ErrorData::resource_not_found(format!("no such resource: {uri}"), None));
        }
    };
    tracing::info!(resource = uri, "resource read");
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(mime),
    ]))
}
