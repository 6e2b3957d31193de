//! Virtual servers through the real gateway: one endpoint over the demo
//! server (Rust, both eras), a Python SDK 2026-07-28 server and
//! `@modelcontextprotocol/server-everything` (legacy), with the members'
//! catalogs approved by the real `tollgate catalog approve`.
//!
//! - `modern`: raw 2026-07-28 calls routed on `Mcp-Name` to each member,
//!   renamed on the way, with audit records naming both names.
//! - `legacy`: the TypeScript SDK client (sessions, progress) uses tools,
//!   prompts and resources of every member; a second replica continues its
//!   session; one member stopped mid-run.
//! - `relay`: sampling and elicitation requests of a member answered by
//!   the TypeScript SDK client; the merged GET stream.
//! - `policy`: a policy on the virtual server's entity denies a call and
//!   hides it from lists and `find_tools` through the virtual server, not
//!   on the member's own route.
//! - `describe`: a re-described tool waits for approval as exposed.
//! - `search`: `find_tools` finds a tool, which is then called.
//! - `tasks`: the `rmcp` client runs tasks on two members, polls and
//!   cancels them by the ids the virtual server gave.
//! - `transparent`: one member under an empty prefix lists what the
//!   member's own route lists, in its order, and announces its list
//!   changes and subscriptions.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "virtual/describe.rs"]
mod describe;
#[path = "virtual/legacy.rs"]
mod legacy;
#[path = "virtual/modern.rs"]
mod modern;
#[path = "virtual/policy.rs"]
mod policy;
#[path = "virtual/relay.rs"]
mod relay;
#[path = "virtual/search.rs"]
mod search;
#[path = "virtual/tasks.rs"]
mod tasks;
#[path = "virtual/transparent.rs"]
mod transparent;

use std::time::Duration;

use serde_json::Value;
use tollgate_e2e::audit_support::Exchange;
use tollgate_e2e::children::tollgate_cli;
use tollgate_e2e::{TestGateway, http, modern_body, modern_headers};

/// A gateway with `servers` (name, url, extra keys) under `[catalog] mode
/// = "enforce"`, and `virtuals` (TOML of `[[virtual_servers]]` tables);
/// every server's current catalog approved once it has synced, then every
/// virtual server's renamed and re-described definitions.
async fn gateway(servers: &[(&str, &str, &str)], virtuals: &str, extra: &str) -> TestGateway {
    let gw = members_approved(servers, virtuals, extra).await;
    let names: Vec<&str> = virtuals
        .split("[[virtual_servers]]")
        .skip(1)
        .filter_map(|table| {
            table
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = \"")?.strip_suffix('"'))
        })
        .collect();
    for name in &names {
        approve(&gw, name).await;
    }
    for name in &names {
        wait_ready(&gw, &format!("{name}'s approvals"), |d| {
            d["virtual_servers"][name]["awaiting_approval"]
                .as_array()
                .is_some_and(Vec::is_empty)
        })
        .await;
    }
    gw
}

/// Poll `/readyz?detail` until `done` holds (10 s at most).
async fn wait_ready(gw: &TestGateway, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    poll_admin(gw, "/readyz?detail", 10, what, done).await
}

/// Poll the admin listener's `path` (JSON) until `done` holds, `secs`
/// seconds at most.
async fn poll_admin(gw: &TestGateway, path: &str, secs: u32, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..secs * 10 {
        last = tollgate_e2e::get_json(&format!("{}{path}", gw.admin)).await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("waited {secs} s for {what}; {path} says {last:#}");
}

/// [`gateway`] with only the member servers' catalogs approved.
async fn members_approved(servers: &[(&str, &str, &str)], virtuals: &str, extra: &str) -> TestGateway {
    let mut config = format!("{extra}\n[catalog]\nmode = \"enforce\"\nsync_interval = \"2s\"\nsync_timeout = \"2s\"\n");
    for (name, url, keys) in servers {
        config.push_str(&format!("\n[[servers]]\nname = \"{name}\"\nurl = \"{url}\"\n{keys}\n"));
    }
    config.push_str(virtuals);
    let gw = TestGateway::spawn(&config).await;
    for (name, _, _) in servers {
        wait_admin(&gw, &format!("{name}'s first sync"), |c| {
            c["servers"][name]["sync"]["state"] == "ok"
        })
        .await;
        approve(&gw, name).await;
    }
    let approved = servers.len();
    wait_admin(&gw, "the approvals", |c| {
        servers
            .iter()
            .all(|(n, _, _)| c["servers"][n]["approved"].as_array().is_some_and(|a| !a.is_empty()))
            && c["lock"]["reloads"].as_u64().unwrap_or(0) >= 1
            && approved > 0
    })
    .await;
    gw
}

/// `tollgate catalog approve --all` for `server`.
async fn approve(gw: &TestGateway, server: &str) {
    let config = gw.dir.path().join("test.toml");
    let out = tollgate_cli(&[
        "catalog",
        "approve",
        "--config",
        config.to_str().unwrap(),
        "--server",
        server,
        "--all",
        "--by",
        "platform@example.com",
    ])
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Poll the admin `GET /catalog` until `done` holds (20 s at most).
async fn wait_admin(gw: &TestGateway, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    poll_admin(gw, "/catalog", 20, what, done).await
}

/// A 2026-07-28 request on route `route`.
async fn modern(
    gw: &TestGateway,
    route: &str,
    method: &str,
    name: Option<&str>,
    params: Value,
    extra: &[(&str, &str)],
) -> Exchange {
    let mut req = http().post(gw.url(route)).headers(modern_headers(method, name));
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    Exchange::run(req, modern_body(3, method, params)).await
}

/// The names of a list answer's entries under `key`.
fn names(ex: &Exchange, key: &str, field: &str) -> Vec<String> {
    let m = ex.message();
    let mut out: Vec<String> = m["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {m}"))
        .iter()
        .map(|e| e[field].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

/// The JSON-RPC error code and message of an answer.
fn rpc_error(ex: &Exchange) -> (i64, String) {
    let m = ex.message();
    let code = m["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error in {m}"));
    (code, m["error"]["message"].as_str().unwrap_or_default().to_owned())
}

/// The text of a tool result.
fn text(ex: &Exchange) -> String {
    let m = ex.message();
    m["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {m}"))
        .to_owned()
}

/// The `[[virtual_servers]]` table `eng` over `demo` and the catalog fixture
/// `cat` (prefixed, one tool left out, one renamed).
fn eng(expose: &str) -> String {
    format!(
        "\n[[virtual_servers]]\nname = \"eng\"\nexpose = \"{expose}\"\nmembers = [\n  \
         {{ server = \"demo\" }},\n  \
         {{ server = \"cat\", prefix = \"cat_\", exclude = [\"delete_record\"], rename = {{ lookup = \"find_record\" }} }},\n]\n"
    )
}
