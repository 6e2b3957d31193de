//! Legacy clients on a virtual server: sessions across members and across
//! replicas, progress, and a member going away.

use serde_json::{Value, json};
use tollgate_e2e::audit_support::{Exchange, metric};
use tollgate_e2e::children::{everything_server, ts_plan_client};
use tollgate_e2e::{Demo, TestGateway, http};

use super::gateway;

/// `ev` over server-everything (prefix `ev_`) and the demo server.
pub(super) const MIXED: &str = "\n[[virtual_servers]]\nname = \"mixed\"\nmembers = [\n  \
                     { server = \"everything\", prefix = \"ev_\" },\n  { server = \"demo\" },\n]\n";

/// A base64 session key in a file, and the `[sessions]` table naming it.
fn session_key(dir: &std::path::Path) -> String {
    let file = dir.join("session.key");
    std::fs::write(&file, "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n").unwrap();
    format!("[sessions]\nkey = {{ file = {:?} }}\n", file)
}

/// A gateway serving `mixed` over a fresh server-everything and demo
/// server (kept alive by the second value).
pub(super) async fn mixed() -> (TestGateway, (tollgate_e2e::children::ChildServer, Demo)) {
    let everything = everything_server().await;
    let demo = Demo::spawn().await;
    let gw = gateway(
        &[("everything", &everything.url, ""), ("demo", &demo.url, "")],
        MIXED,
        "",
    )
    .await;
    (gw, (everything, demo))
}

#[tokio::test]
async fn the_typescript_sdk_uses_every_member_through_one_session() {
    let (gw, _members) = mixed().await;

    let plan = json!({
        "calls": [
            {"name": "ev_get-sum", "arguments": {"a": 2, "b": 40}},
            {"name": "demo_add", "arguments": {"a": 40, "b": 2}},
            {"name": "ev_trigger-long-running-operation", "arguments": {"duration": 0.6, "steps": 3}, "progress": true},
            {"name": "demo_countdown", "arguments": {"n": 3, "delay_ms": 1}, "progress": true},
            {"name": "get-sum", "arguments": {"a": 1, "b": 1}},
        ],
        "prompts": [{"name": "demo_greeting", "arguments": {"name": "Ada"}}],
        "resources": ["demo://readme"],
    });
    let out = ts_plan_client(&gw.url("mixed"), &plan, &[]).await;
    assert_eq!(out["sessionIdPresent"], true, "{out:#}");
    assert_eq!(out["server"]["name"], "mixed");
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"ev_echo") && tools.contains(&"demo_echo"), "{tools:?}");
    assert!(!tools.contains(&"echo"), "{tools:?}");
    let calls = out["calls"].as_array().unwrap();
    assert!(
        calls[0]["content"][0]["text"].as_str().unwrap().contains("42"),
        "{out:#}"
    );
    assert_eq!(calls[1]["content"][0]["text"], "42", "{out:#}");
    assert_eq!(calls[2]["progress"].as_array().map(Vec::len), Some(3), "{out:#}");
    assert!(
        calls[3]["progress"].as_array().is_some_and(|p| !p.is_empty()),
        "{out:#}"
    );
    assert_eq!(calls[4]["error"]["code"], -32602, "{out:#}");
    assert!(out["prompt"][0]["messages"].is_array(), "{out:#}");
    assert_eq!(out["read"][0]["contents"][0]["uri"], "demo://readme", "{out:#}");
    assert_eq!(out["sessionTerminated"], "ok", "{out:#}");
}

/// A legacy request on `gw`'s `mixed` route.
pub(super) async fn legacy(gw: &TestGateway, session: Option<&str>, body: Value) -> Exchange {
    let mut req = http()
        .post(gw.url("mixed"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    Exchange::run(req, body.to_string()).await
}

/// A GET stream on `gw`'s `mixed` route in `session`.
pub(super) async fn get_stream(gw: &TestGateway, session: &str) -> reqwest::Response {
    http()
        .get(gw.url("mixed"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap()
}

/// The first JSON-RPC message of an answer, JSON or SSE.
fn first(ex: &Exchange) -> Value {
    ex.message()
}

#[tokio::test]
async fn a_second_replica_continues_the_session_and_a_dead_member_leaves_the_rest_working() {
    let everything = everything_server().await;
    let demo = Demo::spawn().await;
    let keys = tempfile::tempdir().unwrap();
    let extra = session_key(keys.path());
    let servers = [
        ("everything", everything.url.as_str(), ""),
        ("demo", demo.url.as_str(), ""),
    ];
    let one = gateway(&servers, MIXED, &extra).await;
    let lock = one.dir.path().join("catalog.lock");
    let two = gateway(&servers, MIXED, &format!("{extra}\n")).await;
    std::fs::copy(&lock, two.dir.path().join("catalog.lock")).unwrap();

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let ex = legacy(&one, None, init).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    let session = ex.session_id.clone().expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy(&one, Some(&session), initialized).await.status, 202);

    let call = |name: &str, args: Value| json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let ex = legacy(&two, Some(&session), call("demo_echo", json!({"text": "on two"}))).await;
    assert_eq!(ex.status, 200, "{ex:?}");
    assert_eq!(first(&ex)["result"]["content"][0]["text"], "on two", "{ex:?}");
    let ex = legacy(&two, Some(&session), call("ev_echo", json!({"message": "hi"}))).await;
    assert_eq!(ex.status, 200, "{ex:?}");

    // The second replica opens the members' GET streams for the session.
    let res = get_stream(&two, &session).await;
    assert_eq!(res.status(), 200);
    drop(res);

    // A session id of another virtual server or a forged one is not found.
    let ex = legacy(&two, Some("tg1.forged"), call("demo_echo", json!({"text": "x"}))).await;
    assert_eq!(ex.status, 404, "{ex:?}");

    // The everything server goes away: its tools answer 502, the demo's work.
    drop(everything);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let ex = legacy(&one, Some(&session), call("ev_echo", json!({"message": "hi"}))).await;
    assert_eq!(ex.status, 502, "{ex:?}");
    assert_eq!(first(&ex)["error"]["code"], -32001, "{ex:?}");
    let ex = legacy(&one, Some(&session), call("demo_echo", json!({"text": "still"}))).await;
    assert_eq!(first(&ex)["result"]["content"][0]["text"], "still", "{ex:?}");
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}});
    let ex = legacy(&one, Some(&session), list).await;
    let listed = first(&ex)["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
    assert!(
        listed > 5,
        "the dead member's tools stay listed from the catalog: {ex:?}"
    );

    // Its next sync fails: /readyz detail and the metrics say so.
    let mut detail = Value::Null;
    for _ in 0..100 {
        let url = format!("{}/readyz?detail", one.admin);
        detail = http().get(url).send().await.unwrap().json().await.unwrap();
        if detail["virtual_servers"]["mixed"]["members"]["everything"]["up"] == false {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mixed = &detail["virtual_servers"]["mixed"];
    assert_eq!(mixed["members"]["everything"]["up"], false, "{detail:#}");
    assert_eq!(mixed["members"]["demo"]["up"], true, "{detail:#}");
    assert_eq!(mixed["collisions"], 0, "{detail:#}");
    let m = one.metrics().await;
    let up = |member: &str| {
        let labels = [("virtual_server", "mixed"), ("member", member)];
        metric(&m, "tollgate_virtual_server_member_up", &labels)
    };
    assert_eq!((up("everything"), up("demo")), (0.0, 1.0));
    let tools = [("virtual_server", "mixed"), ("kind", "tool")];
    assert!(metric(&m, "tollgate_virtual_server_exposed", &tools) > 5.0);
}
