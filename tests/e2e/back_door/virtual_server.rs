//! Per-user upstreams behind a virtual server: each member's grant is
//! asked for by the member's name on the first call that needs it; the
//! member's approved tools are listed per user — what it lists for that
//! user's grant, never a tool the grant cannot call — and `find_tools`
//! says which tools need a connection the caller lacks.

use std::time::SystemTime;

use tollgate_catalog::{Definition, Kind, Lock};

use super::*;

/// The tools `protected-server.mjs` lists (admin_report for admins only).
fn tools() -> Vec<Value> {
    vec![
        json!({"name": "admin_report", "description": "The admin report", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "whoami", "description": "The subject, scope, client and token id of the access token presented with this call", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "echo", "description": "Answers the given text", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}),
    ]
}

/// A lock approving every tool of the `github` server, in `dir`.
fn write_lock(dir: &std::path::Path) {
    let mut lock = Lock::default();
    for t in tools() {
        let d = Definition::new(Kind::Tool, t).unwrap();
        lock.approve("github", &d, "security@example.com", SystemTime::now(), None);
    }
    std::fs::write(dir.join("catalog.lock"), lock.to_toml()).unwrap();
}

const VIRTUAL: &str = "[[virtual_servers]]\nname = \"workspace\"\nmembers = [{ server = \"github\" }]\n\
     [[virtual_servers]]\nname = \"finder\"\nexpose = \"search\"\nmembers = [{ server = \"github\" }]\n";

/// The names a `tools/list` in `session` of `workspace` answers.
async fn listed(gw: &ChildGateway, token: &str) -> Vec<String> {
    let (_, session, answer) = post_to(gw, "workspace", token, None, INIT).await;
    let session = session.unwrap_or_else(|| panic!("a session: {answer}"));
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    let (_, _, answer) = post_to(gw, "workspace", token, Some(&session), list).await;
    let tools = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"));
    let mut names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

/// What `find_tools` on `finder` says needs a connection, for `query`.
async fn needs_connection(gw: &ChildGateway, token: &str, query: &str) -> Value {
    let (_, session, answer) = post_to(gw, "finder", token, None, INIT).await;
    let session = session.unwrap_or_else(|| panic!("a session: {answer}"));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "find_tools", "arguments": {"query": query}}});
    let (_, _, answer) = post_to(gw, "finder", token, Some(&session), &call.to_string()).await;
    answer["result"]["structuredContent"]["needsConnection"].clone()
}

#[tokio::test]
async fn a_virtual_server_asks_per_member_and_lists_per_user() {
    let locks = tempfile::tempdir().unwrap();
    write_lock(locks.path());
    let catalog = format!(
        "[catalog]\nmode = \"enforce\"\nlock = \"{}/catalog.lock\"\n{VIRTUAL}",
        locks.path().display()
    );
    let w = world_with(&catalog, |_| (), &["--admins", "alice"]).await;
    let (alice, bob) = (w.gw.mint("alice", &[]).await, w.gw.mint("bob", &[]).await);

    // Not connected: find_tools says so, and calling asks for github by name.
    let needs = needs_connection(&w.gw, &alice, "admin report").await;
    assert_eq!(needs[0]["tool"], "github_admin_report", "{needs}");
    assert_eq!(needs[0]["server"], "github", "{needs}");
    let (_, session, _) = post_to(&w.gw, "workspace", &alice, None, INIT).await;
    let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"github_whoami","arguments":{}}}"#;
    let (_, _, answer) = post_to(&w.gw, "workspace", &alice, session.as_deref(), call).await;
    assert!(
        answer["error"]["message"].as_str().unwrap_or("").contains("github"),
        "{answer}"
    );
    let url = connect_url(&answer);
    let (status, page) = connect(&w.gw, &url, "alice", "wonderland").await;
    assert_eq!(status, 200, "{page}");
    // The session began without github: a new one, which github joins.
    let (status, _, answer) = post_to(&w.gw, "workspace", &alice, session.as_deref(), call).await;
    assert_eq!(status, 404, "{answer}");
    let (_, session, _) = post_to(&w.gw, "workspace", &alice, None, INIT).await;
    let (_, _, answer) = post_to(&w.gw, "workspace", &alice, session.as_deref(), call).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(serde_json::from_str::<Value>(text).unwrap()["sub"], "alice");
    assert_eq!(needs_connection(&w.gw, &alice, "admin report").await, json!([]));

    // Bob connects too: his list follows his grant, alice's hers.
    let (_, session, _) = post_to(&w.gw, "workspace", &bob, None, INIT).await;
    let (_, _, answer) = post_to(&w.gw, "workspace", &bob, session.as_deref(), call).await;
    let (status, _) = connect(&w.gw, &connect_url(&answer), "bob", "builder").await;
    assert_eq!(status, 200);
    assert_eq!(
        listed(&w.gw, &alice).await,
        ["github_admin_report", "github_echo", "github_whoami"]
    );
    assert_eq!(listed(&w.gw, &bob).await, ["github_echo", "github_whoami"]);
}
