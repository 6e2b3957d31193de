//! The MCP handler: [`DemoServer`] wires the tool and prompt routers and the
//! resources into rmcp's [`ServerHandler`].
//!
//! One value is created per legacy session or per stateless request by the
//! service factory in [`crate::http`]; it holds no state of its own.

use std::borrow::Cow;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::router::{prompt::PromptRouter, tool::ToolRouter},
    model::{
        Implementation, ListResourcesResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ServerCapabilities, ServerConfig,
    },
    prompt_handler,
    service::RequestContext,
    tool_handler,
};

use crate::{prompts, resources, tools};

const INSTRUCTIONS: &str = "Tollgate demo server. Tools: echo, add, countdown (send a \
progressToken to watch progress), delete_item (destructive; deletes nothing), get_weather \
(canned data). Resources: demo://readme, demo://secrets/api-keys. Prompt: greeting.";

/// Protocol revisions served on `/mcp`.
///
/// rmcp also knows 2024-11-05, but that revision's transport is HTTP+SSE,
/// which this server does not offer, so it is not advertised.
const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The demo MCP server: five tools, two resources and one prompt.
#[derive(Debug, Clone)]
pub(crate) struct DemoServer {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl DemoServer {
    /// Builds a server with every demo tool and prompt registered.
    pub(crate) fn new() -> Self {
        Self {
            tool_router: tools::router(),
            prompt_router: prompts::router(),
        }
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("tollgate-demo", env!("CARGO_PKG_VERSION")).with_title("Tollgate demo upstream"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_VERSIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources::list())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&request.uri).map(ReadResourceResponse::from)
    }
}
