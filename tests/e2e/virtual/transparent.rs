//! A one-member virtual server with an empty prefix is transparent: over
//! `@modelcontextprotocol/server-everything`, its lists name what the
//! member's own route lists, in the member's order, and its `initialize`
//! and `server/discover` announce the member's list changes and resource
//! subscriptions, and the TypeScript SDK client reads the same answers and
//! errors through it (each error prefixed once, as on the member route).
//! With the member's catalog gate off, the virtual server lists and calls
//! what the member offers in the caller's own session, not only what the
//! gateway's sync saw.

use serde_json::{Value, json};
use tollgate_e2e::audit_support::Exchange;
use tollgate_e2e::children::{everything_server, ts_plan_client};
use tollgate_e2e::{TestGateway, http};

use super::{gateway, modern};

/// `one` over server-everything, its names kept.
const ONE: &str =
    "\n[[virtual_servers]]\nname = \"one\"\nmembers = [\n  { server = \"everything\", prefix = \"\" },\n]\n";

/// A legacy request on `route`, in `session` when given.
async fn legacy(gw: &TestGateway, route: &str, session: Option<&str>, body: Value) -> Exchange {
    let mut req = http()
        .post(gw.url(route))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    Exchange::run(req, body.to_string()).await
}

/// A session on `route` opened as the catalog's sync opens one (the same
/// client capabilities, so the member lists the same tools): its id and
/// the `initialize` result.
async fn open(gw: &TestGateway, route: &str) -> (String, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let ex = legacy(gw, route, None, init).await;
    assert_eq!(ex.status, 200, "{route}: {ex:?}");
    let session = ex
        .session_id
        .clone()
        .unwrap_or_else(|| panic!("{route}: no session id"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy(gw, route, Some(&session), initialized).await.status, 202);
    (session, ex.message()["result"].clone())
}

/// Every entry of list `method` on `route`, page after page.
async fn list_all(gw: &TestGateway, route: &str, session: &str, method: &str, key: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut params = json!({});
    for id in 2..100 {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let m = legacy(gw, route, Some(session), body).await.message();
        let page = m["result"][key]
            .as_array()
            .unwrap_or_else(|| panic!("{route} {method}: {m}"));
        out.extend(page.iter().cloned());
        match m["result"]["nextCursor"].as_str() {
            Some(c) => params = json!({"cursor": c}),
            None => return out,
        }
    }
    panic!("{route} {method}: more pages than a test reads");
}

/// The names (URIs) of `entries`, in order.
fn keys(entries: &[Value], field: &str) -> Vec<String> {
    entries.iter().map(|e| e[field].as_str().unwrap().to_owned()).collect()
}

/// What `capabilities` announce of list changes and subscriptions.
fn announced(capabilities: &Value) -> Value {
    json!({
        "tools": capabilities["tools"]["listChanged"],
        "prompts": capabilities["prompts"]["listChanged"],
        "resources": capabilities["resources"]["listChanged"],
        "subscribe": capabilities["resources"]["subscribe"],
    })
}

#[tokio::test]
async fn an_empty_prefix_one_member_virtual_server_lists_and_announces_what_its_member_does() {
    let everything = everything_server().await;
    let gw = gateway(&[("everything", &everything.url, "")], ONE, "").await;

    let (direct, direct_init) = open(&gw, "everything").await;
    let (through, through_init) = open(&gw, "one").await;
    let lists = [
        ("tools/list", "tools", "name"),
        ("prompts/list", "prompts", "name"),
        ("resources/list", "resources", "uri"),
        ("resources/templates/list", "resourceTemplates", "uriTemplate"),
    ];
    for (method, key, field) in lists {
        let own = list_all(&gw, "everything", &direct, method, key).await;
        let exposed = list_all(&gw, "one", &through, method, key).await;
        assert!(!own.is_empty(), "{method}: the member lists nothing");
        assert_eq!(
            keys(&exposed, field),
            keys(&own, field),
            "{method}: the member's names, in its order"
        );
        assert_eq!(exposed, own, "{method}: the member's definitions");
    }

    // The member announces list changes and subscriptions; so does `one`.
    let want = json!({"tools": true, "prompts": true, "resources": true, "subscribe": true});
    assert_eq!(announced(&direct_init["capabilities"]), want, "{direct_init:#}");
    assert_eq!(announced(&through_init["capabilities"]), want, "{through_init:#}");
    let discovered = modern(&gw, "one", "server/discover", None, json!({}), &[])
        .await
        .message();
    assert_eq!(announced(&discovered["result"]["capabilities"]), want, "{discovered:#}");

    // The TypeScript SDK client sees the same capabilities, tools, answers
    // and errors on both: an unknown tool, arguments the tool refuses.
    let calls = json!([
        {"name": "echo", "arguments": {"message": "hi"}},
        {"name": "no_such_tool", "arguments": {}},
        {"name": "echo", "arguments": {}},
        {"name": "get-sum", "arguments": {"a": "one", "b": 2}},
    ]);
    let plan = json!({"answer": {"sampling": "ok", "elicitation": {}}, "calls": calls});
    let own = ts_plan_client(&gw.url("everything"), &plan, &[]).await;
    let exposed = ts_plan_client(&gw.url("one"), &plan, &[]).await;
    assert_eq!(announced(&exposed["capabilities"]), want, "{exposed:#}");
    assert_eq!(exposed["tools"], own["tools"], "{exposed:#}\n{own:#}");
    assert_eq!(exposed["calls"], own["calls"], "{exposed:#}\n{own:#}");
}

#[tokio::test]
async fn with_the_gate_off_a_member_is_listed_and_called_as_in_the_callers_session() {
    // server-everything offers `get-roots-list` only to a client that
    // declares roots: the gateway's sync does not, the caller does.
    let everything = everything_server().await;
    let gw = TestGateway::spawn(&format!(
        "[[servers]]\nname = \"everything\"\nurl = \"{}\"\ncatalog = \"off\"\n\n\
         [[virtual_servers]]\nname = \"ev\"\nmembers = [\n  {{ server = \"everything\", prefix = \"ev_\" }},\n]\n",
        everything.url
    ))
    .await;
    let roots = json!([{"uri": "file:///work/project", "name": "project"}]);
    let own_plan = json!({"roots": roots, "calls": [{"name": "get-roots-list"}, {"name": "echo", "arguments": {"message": "hi"}}]});
    let ev_plan = json!({"roots": roots, "calls": [{"name": "ev_get-roots-list"}, {"name": "ev_echo", "arguments": {"message": "hi"}}]});
    let own = ts_plan_client(&gw.url("everything"), &own_plan, &[]).await;
    let through = ts_plan_client(&gw.url("ev"), &ev_plan, &[]).await;

    let own_tools: Vec<String> = own["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("ev_{}", t.as_str().unwrap()))
        .collect();
    assert!(own_tools.contains(&"ev_get-roots-list".to_owned()), "{own:#}");
    assert_eq!(
        through["tools"],
        json!(own_tools),
        "the member's tools in the caller's session, prefixed"
    );
    assert_eq!(
        through["calls"][0]["content"], own["calls"][0]["content"],
        "{through:#}"
    );
    assert!(
        through["calls"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("file:///work/project"),
        "the member asked the caller for its roots through the virtual server: {through:#}"
    );
    assert_eq!(through["calls"][1]["content"], own["calls"][1]["content"]);
    assert_eq!(through["requests"], own["requests"], "{through:#}");
}
