//! The catalog gate against hostile names: uses that stand for a call
//! (a completion, a subscription) are judged like it, and no spelling of a
//! quarantined definition's name reaches it.

use serde_json::{Value, json};
use tollgate_e2e::audit_support::records;
use tollgate_e2e::{Demo, TestGateway, demo_lock_without, http, modern_body, modern_headers};

/// The demo server under an enforced lock that leaves out the prompt
/// `greeting`, the resource `demo://secrets/api-keys` and the tool `add`.
async fn enforced() -> (TestGateway, Demo, tempfile::TempDir) {
    let demo = Demo::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("catalog.lock");
    std::fs::write(
        &lock,
        demo_lock_without(&["greeting", "demo://secrets/api-keys", "add"]),
    )
    .unwrap();
    let gw = TestGateway::spawn(&format!(
        "[catalog]\nmode = \"enforce\"\nlock = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n",
        lock.display(),
        demo.url
    ))
    .await;
    gw.wait_synced("demo").await;
    (gw, demo, dir)
}

/// POST a modern request (`name` in `Mcp-Name`) with `body`; the answer.
async fn post(gw: &TestGateway, method: &str, name: Option<&str>, body: String) -> (u16, Value) {
    let res = http()
        .post(gw.url("demo"))
        .headers(modern_headers(method, name))
        .body(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    let body = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .unwrap_or(Value::Null);
    (status, body)
}

/// The gate's outcome in the record of the request with JSON-RPC id `id`.
fn gate_of(gw: &TestGateway, id: u64) -> Option<String> {
    let id = id.to_string();
    records(&gw.audit_dir())
        .into_iter()
        .find(|r| r.jsonrpc_id.as_deref() == Some(id.as_str()))
        .and_then(|r| r.gate.map(|g| g.outcome.into_owned()))
}

#[tokio::test]
async fn completions_and_subscriptions_are_judged_like_the_definitions_they_use() {
    let (gw, _demo, _lock) = enforced().await;
    let complete = |id: u64, reference: Value| {
        modern_body(
            id,
            "completion/complete",
            json!({"ref": reference, "argument": {"name": "name", "value": "A"}}),
        )
    };
    let (_, body) = post(
        &gw,
        "completion/complete",
        None,
        complete(1, json!({"type": "ref/prompt", "name": "greeting"})),
    )
    .await;
    assert_eq!(body["error"]["message"], "Unknown prompt: greeting", "{body}");
    let (_, body) = post(
        &gw,
        "completion/complete",
        None,
        complete(2, json!({"type": "ref/prompt"})),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602, "a completion naming nothing: {body}");
    let secret = "demo://secrets/api-keys";
    let subscribe = modern_body(3, "resources/subscribe", json!({"uri": secret}));
    let (_, body) = post(&gw, "resources/subscribe", Some(secret), subscribe).await;
    assert_eq!(
        body["error"]["message"],
        format!("Resource not found: {secret}"),
        "{body}"
    );
    // The approved resource's completion and subscription are judged and
    // let through (whatever the demo then answers).
    let readme = "demo://readme";
    post(
        &gw,
        "completion/complete",
        None,
        complete(4, json!({"type": "ref/resource", "uri": readme})),
    )
    .await;
    let subscribe = modern_body(5, "resources/subscribe", json!({"uri": readme}));
    post(&gw, "resources/subscribe", Some(readme), subscribe).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    for (id, outcome) in [(1, "quarantined"), (3, "quarantined"), (4, "approved"), (5, "approved")] {
        assert_eq!(gate_of(&gw, id).as_deref(), Some(outcome), "request {id}");
    }
}

#[tokio::test]
async fn no_spelling_of_a_quarantined_name_reaches_it() {
    let (gw, _demo, _lock) = enforced().await;
    let call =
        |id: u64, name: &str| modern_body(id, "tools/call", json!({"name": name, "arguments": {"a": 1, "b": 2}}));
    // The header names an approved tool, the body the quarantined one.
    let (status, body) = post(&gw, "tools/call", Some("echo"), call(1, "add")).await;
    assert_eq!((status, &body["error"]["code"]), (400, &json!(-32020)), "{body}");
    // A duplicate name key, and an escaped key spelling `name`.
    let twice = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"add","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let (status, _) = post(&gw, "tools/call", Some("echo"), twice.to_owned()).await;
    assert_eq!(status, 400, "duplicate keys");
    let escaped = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"n\u0061me":"add","arguments":{"a":1,"b":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let (_, body) = post(&gw, "tools/call", Some("add"), escaped.to_owned()).await;
    assert_eq!(body["error"]["message"], "Unknown tool: add", "{body}");
    // The sentinel-encoded name is the same name.
    let (_, body) = post(&gw, "tools/call", Some("=?base64?YWRk?="), call(4, "add")).await;
    assert_eq!(body["error"]["message"], "Unknown tool: add", "{body}");
    // A legacy batch cannot carry it past the gate either.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
    ]);
    let res = http()
        .post(gw.url("demo"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-03-26")
        .body(batch.to_string())
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    assert!(
        text.contains("Unknown tool: add") && !text.contains("\"result\""),
        "{text}"
    );
}
