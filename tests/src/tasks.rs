//! The `rmcp` client with the tasks extension (SEP-2663) declared, and the
//! demo's `countdown` started as a task: for tests of task handles.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;

/// A running `rmcp` client.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// An `rmcp` client of `url` declaring tasks, with the bearer `token` if
/// given: 2026-07-28 (`server/discover`) or, `legacy`, a session opened by
/// `initialize`.
pub async fn client(url: String, token: Option<&str>, legacy: bool) -> Client {
    let info = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("tollgate-e2e", "1.0.0"),
    );
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let lifecycle = if legacy {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        }
    };
    info.serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), lifecycle)
        .await
        .unwrap()
}

/// Start the demo's countdown `tool` (`n` steps, `delay_ms` apart) as a
/// task; the task id the client was given.
pub async fn start(c: &Client, tool: &str, n: u32, delay_ms: u32) -> String {
    let args = json!({"n": n, "delay_ms": delay_ms});
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone());
    match c.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("{tool} did not become a task: {other:?}"),
    }
}

/// Assert that `c` may neither poll nor cancel task `handle` (`who` names
/// the attempt in the failure).
pub async fn refused(c: &Client, handle: &str, who: &str) {
    let err = c
        .peer()
        .get_task(GetTaskParams::new(handle.to_owned()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown task"), "{who} polled: {err}");
    let err = c
        .peer()
        .cancel_task(CancelTaskParams::new(handle.to_owned()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown task"), "{who} cancelled: {err}");
}
