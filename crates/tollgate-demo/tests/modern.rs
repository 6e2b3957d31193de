//! 2026-07-28 tests over real HTTP: stateless POSTs with `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name`, `server/discover`, and header validation.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed assertion"
)]

mod common;

use common::{MODERN, POST_HEADERS, TestServer, modern_call, modern_meta, send};
use http::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test]
async fn tools_call_with_standard_headers_is_stateless_json() {
    let server = TestServer::start().await;
    let params = json!({"name": "echo", "arguments": {"text": "hi"}});
    let reply = modern_call(&server, "tools/call", Some("echo"), params).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert!(reply.content_type.starts_with("application/json"));
    assert!(reply.headers.get("mcp-session-id").is_none());
    assert_eq!(reply.last()["result"]["resultType"], "complete");
    assert_eq!(reply.tool_text(), "hi");

    let params = json!({"name": "add", "arguments": {"a": 40, "b": 2}});
    let reply = modern_call(&server, "tools/call", Some("add"), params).await;
    assert_eq!(reply.tool_text(), "42");
    server.stop().await;
}

#[tokio::test]
async fn discover_lists_both_eras() {
    let server = TestServer::start().await;
    let reply = modern_call(&server, "server/discover", None, json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let result = &reply.last()["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2025-03-26", "2025-06-18", "2025-11-25", MODERN])
    );
    assert!(result["capabilities"]["tools"].is_object());
    let server_info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(server_info["name"], "tollgate-demo");
    server.stop().await;
}

#[tokio::test]
async fn countdown_streams_progress_then_liftoff() {
    let server = TestServer::start().await;
    let params = json!({
        "name": "countdown",
        "arguments": {"n": 4, "delay_ms": 1},
        "_meta": {"progressToken": 9}
    });
    let reply = modern_call(&server, "tools/call", Some("countdown"), params).await;
    assert!(reply.content_type.starts_with("text/event-stream"), "{reply:?}");
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 4);
    assert_eq!(progress[0]["params"]["progressToken"], 9);
    assert_eq!(progress[3]["params"]["total"], 4.0);
    assert_eq!(reply.tool_text(), "liftoff");

    let params = json!({"name": "countdown", "arguments": {"n": 21}});
    let reply = modern_call(&server, "tools/call", Some("countdown"), params).await;
    assert_eq!(reply.last()["result"]["isError"], true);
    server.stop().await;
}

#[tokio::test]
async fn resources_and_prompt() {
    let server = TestServer::start().await;
    let reply = modern_call(&server, "resources/list", None, json!({})).await;
    let uris: Vec<&Value> = reply.last()["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["uri"])
        .collect();
    assert_eq!(uris, [&json!("demo://readme"), &json!("demo://secrets/api-keys")]);

    let params = json!({"uri": "demo://readme"});
    let reply = modern_call(&server, "resources/read", Some("demo://readme"), params).await;
    let contents = &reply.last()["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "text/markdown");
    assert!(contents["text"].as_str().unwrap().contains("Tollgate"));

    let params = json!({"name": "greeting", "arguments": {"name": "Grace"}});
    let reply = modern_call(&server, "prompts/get", Some("greeting"), params).await;
    let text = reply.last()["result"]["messages"][0]["content"]["text"].as_str();
    assert!(text.unwrap().contains("Grace"), "{reply:?}");
    server.stop().await;
}

#[tokio::test]
async fn header_mismatches_are_rejected_with_json_rpc_bodies() {
    let server = TestServer::start().await;
    let params = json!({"name": "echo", "arguments": {"text": "hi"}});
    let missing_name = modern_call(&server, "tools/call", None, params.clone()).await;
    assert_eq!(missing_name.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing_name.last()["error"]["code"], -32020);

    let wrong_name = modern_call(&server, "tools/call", Some("add"), params).await;
    assert_eq!(wrong_name.status, StatusCode::BAD_REQUEST);
    assert_eq!(wrong_name.last()["error"]["code"], -32020);

    let unknown = modern_call(&server, "no/such", None, json!({})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.last()["error"]["code"], -32601);

    let body = json!({
        "jsonrpc": "2.0", "id": 5, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                             "io.modelcontextprotocol/clientCapabilities": {}}}
    });
    let mut headers = POST_HEADERS.to_vec();
    headers.extend([("mcp-protocol-version", "2099-01-01"), ("mcp-method", "tools/list")]);
    let unsupported = send(Method::POST, &server.url, &headers, Some(&body)).await;
    assert_eq!(unsupported.status, StatusCode::BAD_REQUEST);
    assert_eq!(unsupported.last()["error"]["code"], -32022);
    server.stop().await;
}

#[tokio::test]
async fn modern_requests_ignore_sessions_and_get_is_not_allowed() {
    let server = TestServer::start().await;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": modern_meta()}
    });
    let mut headers = POST_HEADERS.to_vec();
    headers.extend([
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/list"),
        ("mcp-session-id", "not-a-session"),
    ]);
    let reply = send(Method::POST, &server.url, &headers, Some(&body)).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(reply.last()["result"]["tools"].as_array().unwrap().len(), 5);

    let headers = [("accept", "text/event-stream"), ("mcp-protocol-version", MODERN)];
    let get = send(Method::GET, &server.url, &headers, None).await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED);
    server.stop().await;
}
