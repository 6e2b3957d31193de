//! The demo tools: `echo`, `add`, `countdown`, `delete_item` and `get_weather`.
//!
//! Each tool carries an input schema (from `schemars`) and MCP annotations,
//! so a gateway in front of this server has realistic metadata to route,
//! authorize and meter on. Nothing here touches the outside world: the
//! "destructive" and "open world" tools only return canned text.

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{CallToolResult, ContentBlock, CreateTaskResult, JsonObject, ProgressNotificationParam, ProgressToken},
    service::RequestContext,
    task_manager::{TaskExit, TaskManager, TaskOptions},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::server::DemoServer;

/// Largest `n` that `countdown` accepts.
const MAX_COUNTDOWN: u32 = 20;
/// Largest per-step delay that `countdown` accepts, in milliseconds.
const MAX_DELAY_MS: u64 = 5_000;

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back unchanged.
    text: String,
}

/// Arguments of `add`.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// Arguments of `countdown`.
#[derive(Debug, Deserialize, JsonSchema)]
struct CountdownArgs {
    /// Number of steps to count down from (at most 20).
    #[schemars(range(min = 0, max = 20))]
    n: u32,
    /// Pause before each step, in milliseconds (at most 5000).
    #[serde(default = "default_delay_ms")]
    #[schemars(range(min = 0, max = 5000))]
    delay_ms: u64,
}

fn default_delay_ms() -> u64 {
    100
}

/// Arguments of `delete_item`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteItemArgs {
    /// Identifier of the item to delete.
    id: String,
}

/// Arguments of `get_weather`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Lisbon".
    city: String,
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[tool_router(vis = "pub(crate)")]
impl DemoServer {
    /// Returns the given text unchanged.
    #[tool(
        name = "echo",
        annotations(title = "Echo", read_only_hint = true, open_world_hint = false)
    )]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> CallToolResult {
        tracing::info!(tool = "echo", len = args.text.len(), "tool called");
        text_result(args.text)
    }

    /// Adds two integers and returns the sum.
    #[tool(
        name = "add",
        annotations(title = "Add", read_only_hint = true, open_world_hint = false)
    )]
    async fn add(&self, Parameters(args): Parameters<AddArgs>) -> CallToolResult {
        tracing::info!(tool = "add", a = args.a, b = args.b, "tool called");
        match args.a.checked_add(args.b) {
            Some(sum) => text_result(sum.to_string()),
            None => error_result("overflow: the sum does not fit in a 64-bit integer"),
        }
    }

    /// The streaming-progress demo: counts down, reporting each step.
    #[tool(
        name = "countdown",
        description = "Counts down from n (at most 20), pausing delay_ms (default 100) per step. \
            Sends notifications/progress for each step when the request carries a \
            progressToken, then returns \"liftoff\".",
        annotations(title = "Countdown", read_only_hint = true, open_world_hint = false)
    )]
    async fn countdown(
        &self,
        Parameters(args): Parameters<CountdownArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        tracing::info!(tool = "countdown", n = args.n, delay_ms = args.delay_ms, "tool called");
        if args.n > MAX_COUNTDOWN {
            return Ok(error_result(format!("n must be at most {MAX_COUNTDOWN}")));
        }
        if args.delay_ms > MAX_DELAY_MS {
            return Ok(error_result(format!("delay_ms must be at most {MAX_DELAY_MS}")));
        }
        run_countdown(&args, &context).await?;
        Ok(text_result("liftoff"))
    }

    /// Lets policies for destructive tools be demonstrated; deletes nothing.
    #[tool(
        name = "delete_item",
        description = "Deletes the item with the given id. (Demo: nothing is actually deleted.)",
        annotations(
            title = "Delete item",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn delete_item(&self, Parameters(args): Parameters<DeleteItemArgs>) -> CallToolResult {
        tracing::info!(
            tool = "delete_item",
            id = %args.id,
            "destructive tool called (demo: nothing deleted)"
        );
        text_result(format!(
            "item {:?} deleted (demo: nothing was actually deleted)",
            args.id
        ))
    }

    /// Returns the current weather for a city (canned demo data).
    #[tool(
        name = "get_weather",
        annotations(title = "Get weather", read_only_hint = true, open_world_hint = true)
    )]
    async fn get_weather(&self, Parameters(args): Parameters<WeatherArgs>) -> CallToolResult {
        tracing::info!(tool = "get_weather", city = %args.city, "tool called");
        text_result(format!(
            "Weather in {}: 21°C, partly cloudy, wind 12 km/h NW (canned demo data)",
            args.city
        ))
    }
}

/// Sleeps `n` times, reporting each step as progress when the caller asked for it.
///
/// Stops early with an error if the request is cancelled (client disconnect
/// or `notifications/cancelled`).
async fn run_countdown(args: &CountdownArgs, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    let token = context.meta.get_progress_token();
    let delay = Duration::from_millis(args.delay_ms);
    for step in 1..=args.n {
        tokio::select! {
            () = context.ct.cancelled() => {
                tracing::info!(tool = "countdown", step, "cancelled by the client");
                return Err(ErrorData::internal_error("countdown cancelled", None));
            }
            () = tokio::time::sleep(delay) => {}
        }
        if let Some(token) = &token {
            report_progress(context, token, step, args.n).await;
        }
    }
    Ok(())
}

/// `countdown` as a task (the tasks extension, SEP-2663), for a request
/// that declared the extension: the call answers at once with the task,
/// whose status message follows the count and whose result is "liftoff".
pub(crate) fn countdown_task(
    tasks: &TaskManager,
    arguments: Option<JsonObject>,
) -> Result<CreateTaskResult, ErrorData> {
    let args: CountdownArgs = serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default()))
        .map_err(|e| ErrorData::invalid_params(format!("countdown: {e}"), None))?;
    if args.n > MAX_COUNTDOWN || args.delay_ms > MAX_DELAY_MS {
        return Err(ErrorData::invalid_params(
            format!("countdown: n must be at most {MAX_COUNTDOWN} and delay_ms at most {MAX_DELAY_MS}"),
            None,
        ));
    }
    tracing::info!(tool = "countdown", n = args.n, delay_ms = args.delay_ms, "task started");
    let options = TaskOptions::new().with_poll_interval_ms(args.delay_ms.max(10));
    let task = tasks.spawn(options, move |ctx| {
        Box::pin(async move {
            let delay = Duration::from_millis(args.delay_ms);
            for step in 1..=args.n {
                tokio::select! {
                    () = ctx.cancelled() => return Err(TaskExit::Cancelled),
                    () = tokio::time::sleep(delay) => {}
                }
                ctx.set_status_message(format!("T-{}", args.n - step));
            }
            Ok(text_result("liftoff"))
        })
    });
    Ok(CreateTaskResult::new(task))
}

async fn report_progress(context: &RequestContext<RoleServer>, token: &ProgressToken, step: u32, total: u32) {
    let remaining = total - step;
    let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
        .with_total(f64::from(total))
        .with_message(format!("T-{remaining}"));
    if let Err(error) = context.peer.notify_progress(param).await {
        tracing::debug!(%error, step, "could not send progress notification");
    }
}

/// The router holding every demo tool, used by [`DemoServer::new`].
pub(crate) fn router() -> ToolRouter<DemoServer> {
    DemoServer::tool_router()
}
