//! The MCP handler: [`DemoServer`] wires the tool and prompt routers and the
//! resources into rmcp's [`ServerHandler`].
//!
//! One value is created per legacy session or per stateless request by the
//! service factory in [`crate::http`]; the only state they share is the
//! [`TaskManager`] holding `countdown`'s tasks (the tasks extension,
//! SEP-2663), so a task started by one request is polled by the next.

use std::borrow::Cow;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::router::{prompt::PromptRouter, tool::ToolRouter},
    handler::server::tool::ToolCallContext,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult, Implementation,
        ListResourcesResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig, UpdateTaskParams,
    },
    prompt_handler,
    service::RequestContext,
    task_manager::TaskManager,
    tool_handler,
};

use crate::{prompts, resources, tools};

const INSTRUCTIONS: &str = "Tollgate demo server. Tools: echo, add, countdown (send a \
progressToken to watch progress), delete_item (destructive; deletes nothing), get_weather \
(canned data); countdown runs as a task when the request declares the tasks extension. Resources: demo://readme, demo://secrets/api-keys. Prompt: greeting.";

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
#[derive(Clone)]
pub(crate) struct DemoServer {
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
    tasks: TaskManager,
}

impl DemoServer {
    /// Builds a server with every demo tool and prompt registered, keeping
    /// its tasks in `tasks`.
    pub(crate) fn new(tasks: TaskManager) -> Self {
        Self {
            tool_router: tools::router(),
            prompt_router: prompts::router(),
            tasks,
        }
    }
}

impl std::fmt::Debug for DemoServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoServer")
            .field("running_tasks", &self.tasks.running_task_count())
            .finish_non_exhaustive()
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
            .enable_tasks()
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

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let declared_tasks = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        if request.name == "countdown" && declared_tasks {
            return tools::countdown_task(&self.tasks, request.arguments).map(CallToolResponse::Task);
        }
        self.tool_router
            .call(ToolCallContext::new(self, request, context))
            .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get_task(&request.task_id).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
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
