//! Hostile callers on the request path: each probe a security review made
//! against a real gateway, kept so that no later change reopens it.
//!
//! - versions: a legacy `initialize` a route refuses names the version it
//!   offered, and a virtual server refuses the versions no member serves; a dual-era upstream's `server/discover` refuses no era
//!   (whole client scenarios in `dual_era.rs`);
//! - notifications: a request method without an id is refused on routes
//!   and virtual servers, and never reaches the upstream;
//! - tasks: a task handle works only for the principal and the route or
//!   virtual server it was handed out on, and the trail keeps no task id;
//! - sessions: a session id works only for its principal and its route;
//! - the catalog gate: completions and subscriptions are judged like the
//!   calls they stand for; name tricks (header against body, duplicate
//!   and escaped keys) do not reach a quarantined definition;
//! - virtual servers: a member's own or hidden names are not callable
//!   through the virtual server.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "hostile_request/catalog.rs"]
mod catalog;
#[path = "hostile_request/handles.rs"]
mod handles;

use serde_json::{Value, json};
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{Demo, TestGateway, assert_rpc_error, http, legacy_request, modern_body, modern_headers};

#[tokio::test]
async fn a_refused_initialize_names_the_version_it_offered() {
    let demo = Demo::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"modern\"\nurl = \"{}\"\nlegacy = false\n",
        demo.url
    ))
    .await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let res = legacy_request(&gw.url("modern"), None, None, &init)
        .send()
        .await
        .unwrap();
    let body = assert_rpc_error(res, 400, -32022, json!(1)).await;
    assert_eq!(body["error"]["data"]["requested"], "2025-11-25", "{body}");
}

/// A virtual server reads a request by the rules a route applies: the
/// version it names must be one a member serves, whichever era names it.
#[tokio::test]
async fn a_virtual_server_refuses_versions_no_member_serves() {
    let demo = Demo::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"modern\"\nurl = \"{}\"\nlegacy = false\n\n\
         [[virtual_servers]]\nname = \"v\"\nmembers = [{{ server = \"modern\" }}]\n",
        demo.url
    ))
    .await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let res = legacy_request(&gw.url("v"), None, None, &init).send().await.unwrap();
    let body = assert_rpc_error(res, 400, -32022, json!(1)).await;
    assert_eq!(body["error"]["data"]["requested"], "2025-11-25", "{body}");

    let mut headers = modern_headers("tools/list", None);
    headers.insert("mcp-protocol-version", "2031-01-01".parse().unwrap());
    let res = http()
        .post(gw.url("v"))
        .headers(headers)
        .body(modern_body(2, "tools/list", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["id"], json!(2), "{body}");
    assert_eq!(body["error"]["code"], -32022, "{body}");
    assert_eq!(body["error"]["data"]["requested"], "2031-01-01", "{body}");
}

#[tokio::test]
async fn a_virtual_server_refuses_a_version_the_resolved_member_does_not_serve() {
    // The version is served by one member; the call resolves to the other.
    let demo = Demo::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"modern\"\nurl = \"{0}\"\nlegacy = false\n\n\
         [[servers]]\nname = \"both\"\nurl = \"{0}\"\n\n\
         [[virtual_servers]]\nname = \"v\"\nmembers = [\n  {{ server = \"modern\", prefix = \"m_\" }},\n  \
         {{ server = \"both\", prefix = \"b_\" }},\n]\n",
        demo.url
    ))
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "m_echo", "arguments": {"message": "hi"}}});
    let res = legacy_request(&gw.url("v"), None, None, &call).send().await.unwrap();
    let body = assert_rpc_error(res, 400, -32022, json!(7)).await;
    // A legacy call without a version header asks for no revision by name;
    // the answer names the versions of the member it was resolved to.
    assert_eq!(body["error"]["data"]["requested"], "unknown", "{body}");
    assert_eq!(body["error"]["data"]["supported"], json!(["2026-07-28"]), "{body}");
}

/// A `tools/call` without an id, in each era.
fn id_less_calls() -> [(reqwest::header::HeaderMap, String); 2] {
    let mut modern = json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo", "arguments": {}}});
    modern["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let legacy = json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo", "arguments": {}}});
    let mut plain = reqwest::header::HeaderMap::new();
    plain.insert("content-type", "application/json".parse().unwrap());
    plain.insert("accept", "application/json, text/event-stream".parse().unwrap());
    [
        (modern_headers("tools/call", Some("echo")), modern.to_string()),
        (plain, legacy.to_string()),
    ]
}

#[tokio::test]
async fn a_request_method_without_an_id_is_refused_and_never_forwarded() {
    let stub = Stub::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"s\"\nurl = \"{}/json\"\n\n\
         [[virtual_servers]]\nname = \"v\"\nmembers = [{{ server = \"s\" }}]\n",
        stub.base
    ))
    .await;
    for route in ["s", "v"] {
        for (headers, body) in id_less_calls() {
            let res = http()
                .post(gw.url(route))
                .headers(headers)
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let refused = assert_rpc_error(res, 400, -32600, Value::Null).await;
            assert!(
                refused["error"]["message"].as_str().unwrap().contains("needs an id"),
                "{route}: {refused}"
            );
        }
    }
    let forwarded: Vec<_> = stub
        .seen()
        .await
        .into_iter()
        .filter(|s| s.body.windows(10).any(|w| w == b"tools/call"))
        .collect();
    assert!(forwarded.is_empty(), "reached the upstream: {forwarded:?}");
    // A real notification still passes.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (plain, _) = id_less_calls().into_iter().nth(1).unwrap();
    let res = http().post(gw.url("s")).headers(plain).body(note).send().await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
}

/// A gateway in front of the demo server with a virtual server `eng` that
/// exposes only `echo` under the prefix `demo_`.
async fn narrowed() -> (TestGateway, Demo) {
    let demo = Demo::spawn().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"demo\"\nurl = \"{}\"\n\n\
         [[virtual_servers]]\nname = \"eng\"\nmembers = [{{ server = \"demo\", prefix = \"demo_\", tools = [\"echo\"] }}]\n",
        demo.url
    ))
    .await;
    gw.wait_synced("demo").await;
    (gw, demo)
}

#[tokio::test]
async fn a_virtual_server_calls_only_what_it_exposes() {
    let (gw, _demo) = narrowed().await;
    let call = |name: &'static str, id: u64| {
        let gw = &gw;
        async move {
            let body = modern_body(
                id,
                "tools/call",
                json!({"name": name, "arguments": {"text": "x", "a": 1, "b": 2}}),
            );
            http()
                .post(gw.url("eng"))
                .headers(modern_headers("tools/call", Some(name)))
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };
    assert_eq!(call("demo_echo", 1).await.status(), 200);
    // The member's own name, an excluded tool under the prefix, the prefix
    // alone, a case variant and a prefix doubled are all unknown names.
    for (i, name) in ["echo", "demo_add", "demo_", "DEMO_echo", "demo_demo_echo"]
        .into_iter()
        .enumerate()
    {
        let res = call(name, 10 + i as u64).await;
        let text = res.text().await.unwrap();
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"]["code"], -32602, "{name}: {text}");
    }
}
