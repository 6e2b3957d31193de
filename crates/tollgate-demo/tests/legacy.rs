//! Legacy-era (2025-03-26 / 2025-06-18 / 2025-11-25) tests over real HTTP:
//! `initialize`, `Mcp-Session-Id` sessions, GET stream, DELETE, Host checks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed assertion"
)]

mod common;

use common::{POST_HEADERS, Reply, TestServer, open, read, send};
use http::{Method, StatusCode};
use serde_json::{Value, json};

const LEGACY: &str = "2025-06-18";

/// Runs `initialize` + `notifications/initialized`; returns the session id.
async fn open_session(server: &TestServer, version: &str) -> (String, Reply) {
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "tollgate-demo-test", "version": "1"}
        }
    });
    let reply = send(Method::POST, &server.url, &POST_HEADERS, Some(&init)).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let session = reply
        .headers
        .get("mcp-session-id")
        .expect("initialize must mint a session")
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = post(server, &session, version, &initialized).await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    (session, reply)
}

async fn post(server: &TestServer, session: &str, version: &str, body: &Value) -> Reply {
    let mut headers = POST_HEADERS.to_vec();
    headers.push(("mcp-session-id", session));
    headers.push(("mcp-protocol-version", version));
    send(Method::POST, &server.url, &headers, Some(body)).await
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("tool {name} missing"))
}

#[tokio::test]
async fn initialize_list_and_call_echo_in_a_session() {
    let server = TestServer::start().await;
    let (session, init) = open_session(&server, LEGACY).await;
    let result = &init.last()["result"];
    assert_eq!(result["protocolVersion"], LEGACY);
    assert_eq!(result["serverInfo"]["name"], "tollgate-demo");
    assert!(result["capabilities"]["resources"].is_object());

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let reply = post(&server, &session, LEGACY, &list).await;
    let tools = reply.last()["result"]["tools"].as_array().unwrap().clone();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "countdown", "delete_item", "echo", "get_weather"]);
    assert_eq!(tool(&tools, "echo")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool(&tools, "add")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool(&tools, "delete_item")["annotations"]["destructiveHint"], true);
    assert_eq!(tool(&tools, "get_weather")["annotations"]["openWorldHint"], true);
    let countdown = &tool(&tools, "countdown")["inputSchema"]["properties"];
    assert_eq!(countdown["n"]["maximum"], 20);
    assert_eq!(countdown["delay_ms"]["default"], 100);
    let add = &tool(&tools, "add")["inputSchema"];
    assert_eq!(add["required"], json!(["a", "b"]));
    assert!(reply.last()["result"].get("resultType").is_none());

    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello gateway"}}
    });
    let reply = post(&server, &session, LEGACY, &call).await;
    assert_eq!(reply.last()["id"], 3);
    assert_eq!(reply.tool_text(), "hello gateway");
    server.stop().await;
}

#[tokio::test]
async fn countdown_streams_progress_in_a_session() {
    let server = TestServer::start().await;
    let (session, _) = open_session(&server, "2025-11-25").await;
    let call = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": "countdown", "arguments": {"n": 3, "delay_ms": 1},
            "_meta": {"progressToken": "lift"}
        }
    });
    let reply = post(&server, &session, "2025-11-25", &call).await;
    let progress: Vec<&Value> = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{reply:?}");
    assert_eq!(progress[2]["params"]["progressToken"], "lift");
    assert_eq!(progress[2]["params"]["progress"], 3.0);
    assert_eq!(reply.tool_text(), "liftoff");
    server.stop().await;
}

#[tokio::test]
async fn resource_prompt_and_delete_end_the_session() {
    let server = TestServer::start().await;
    let (session, _) = open_session(&server, "2025-03-26").await;
    let read = json!({
        "jsonrpc": "2.0", "id": 2, "method": "resources/read",
        "params": {"uri": "demo://secrets/api-keys"}
    });
    let reply = post(&server, &session, "2025-03-26", &read).await;
    let text = &reply.last()["result"]["contents"][0]["text"];
    assert_eq!(text, "this resource is for the security team only");

    let prompt = json!({
        "jsonrpc": "2.0", "id": 3, "method": "prompts/get",
        "params": {"name": "greeting", "arguments": {"name": "Ada"}}
    });
    let reply = post(&server, &session, "2025-03-26", &prompt).await;
    let message = reply.last()["result"]["messages"][0]["content"]["text"].as_str();
    assert!(message.unwrap().contains("Ada"), "{reply:?}");

    let headers = [("mcp-session-id", session.as_str())];
    let deleted = send(Method::DELETE, &server.url, &headers, None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let reply = post(&server, &session, "2025-03-26", &list).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test]
async fn host_header_must_be_loopback() {
    let server = TestServer::start().await;
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}
    });
    let port = server.addr.port().to_string();
    for (host, expected) in [
        (format!("127.0.0.1:{port}"), StatusCode::OK),
        (format!("localhost:{port}"), StatusCode::OK),
        ("evil.example".to_owned(), StatusCode::FORBIDDEN),
    ] {
        let mut headers = POST_HEADERS.to_vec();
        headers.push(("host", host.as_str()));
        let reply = send(Method::POST, &server.url, &headers, Some(&init)).await;
        assert_eq!(reply.status, expected, "Host: {host}");
    }
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_an_open_get_stream() {
    let server = TestServer::start().await;
    let (session, _) = open_session(&server, LEGACY).await;
    let headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", LEGACY),
    ];
    // The head arrives at once; the body stays open until the server stops.
    let stream = open(Method::GET, &server.url, &headers, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    server.stop().await;
    let reply = read(stream).await;
    assert!(reply.content_type.starts_with("text/event-stream"));
}
