//! Catalog governance through the real gateway, in front of a real MCP
//! server (the Python SDK's `catalog_server.py`) whose catalog changes
//! while the gateway runs, with approvals written by the real `tollgate
//! catalog` CLI and picked up without a restart.
//!
//! - `enforce`: new tools invisible and uncallable, changed ones blocked
//!   with the documented error and metrics, both served after approval;
//!   `catalog diff` and `show`.
//! - `observe`: everything passes and is recorded as it would be judged.
//! - `annotations`: a destructive tool that later claims `readOnlyHint`
//!   does not get past a read-only policy.
//! - `params`: `Mcp-Param-*` headers missing, mismatched, badly encoded and
//!   correct, from the Python SDK client and raw HTTP.
//! - `records`: audit records of a fresh replica, field by field.
//! - `sync`: `header_trust = "upstream"` refused for a legacy upstream;
//!   the demo's committed lock matches the demo server.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "catalog/annotations.rs"]
mod annotations;
#[path = "catalog/enforce.rs"]
mod enforce;
#[path = "catalog/observe.rs"]
mod observe;
#[path = "catalog/params.rs"]
mod params;
#[path = "catalog/records.rs"]
mod records;
#[path = "catalog/sync.rs"]
mod sync;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tollgate_audit::CallRecord;
use tollgate_e2e::audit_support::Exchange;
use tollgate_e2e::children::{ChildServer, python_catalog_server, tollgate_cli};
use tollgate_e2e::{TestGateway, http, modern_body, modern_headers};

/// The route name of the catalog fixture.
const ROUTE: &str = "cat";

/// A gateway in front of the catalog fixture server.
struct Rig {
    upstream: ChildServer,
    gw: TestGateway,
}

impl Rig {
    /// The fixture server and a gateway with `[catalog] mode = MODE`,
    /// syncing every second; `extra` is appended to the configuration and
    /// `route_extra` to the route's table.
    async fn start(mode: &str, extra: &str, route_extra: &str) -> Rig {
        let upstream = python_catalog_server().await;
        let gw = Rig::gateway(&upstream, &format!("mode = \"{mode}\""), extra, route_extra).await;
        let rig = Rig { upstream, gw };
        rig.wait_catalog("the first sync", |c| c["sync"]["state"] == "ok").await;
        rig
    }

    /// A gateway in front of `upstream`, `catalog` in its `[catalog]`.
    async fn gateway(upstream: &ChildServer, catalog: &str, extra: &str, route_extra: &str) -> TestGateway {
        TestGateway::spawn(&format!(
            "{extra}\n[catalog]\n{catalog}\nsync_interval = \"1s\"\nsync_timeout = \"1s\"\n\n\
             [[servers]]\nname = \"{ROUTE}\"\nurl = \"{}\"\n{route_extra}\n",
            upstream.url
        ))
        .await
    }

    /// The configuration file the gateway runs (and the CLI reads).
    fn config(&self) -> PathBuf {
        self.gw.dir.path().join("test.toml")
    }

    /// The lock file next to it.
    fn lock(&self) -> PathBuf {
        self.gw.dir.path().join("catalog.lock")
    }

    /// Change the upstream's catalog (`catalog_server.py`'s `/control`).
    async fn change(&self, change: Value) {
        let url = self.upstream.url.replace("/mcp", "/control");
        let res = http().post(url).json(&change).send().await.unwrap();
        assert_eq!(res.status(), 200, "{change}");
    }

    /// How many times the upstream ran each tool.
    async fn upstream_calls(&self, tool: &str) -> u64 {
        let url = self.upstream.url.replace("/mcp", "/control");
        let calls: Value = http().get(url).send().await.unwrap().json().await.unwrap();
        calls[tool].as_u64().unwrap_or(0)
    }

    /// The route's part of the admin listener's `GET /catalog`.
    async fn catalog(&self) -> Value {
        let res = http().get(format!("{}/catalog", self.gw.admin)).send().await.unwrap();
        assert_eq!(res.status(), 200);
        let all: Value = res.json().await.unwrap();
        all["servers"][ROUTE].clone()
    }

    /// Poll `GET /catalog` until `done` holds (15 s at most).
    async fn wait_catalog(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        for _ in 0..150 {
            last = self.catalog().await;
            if done(&last) {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("waited 15 s for {what}; /catalog says {last:#}");
    }

    /// Run `tollgate catalog SUBCOMMAND --config CONFIG ARGS`.
    async fn cli(&self, subcommand: &str, args: &[&str]) -> (i32, String, String) {
        let config = self.config();
        let mut all = vec!["catalog", subcommand, "--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = tollgate_cli(&all).await;
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Approve with `tollgate catalog approve --server cat ARGS`; it must
    /// succeed.
    async fn approve(&self, args: &[&str]) -> String {
        let mut all = vec!["--server", ROUTE];
        all.extend_from_slice(args);
        let (code, out, err) = self.cli("approve", &all).await;
        assert_eq!(code, 0, "approve {args:?} failed:\n{out}\n{err}");
        out
    }

    /// A `tools/list` as `token` (or anonymously): the tool names, sorted.
    async fn tools(&self, token: Option<&str>) -> Vec<String> {
        let ex = self.request(token, "tools/list", None, json!({}), &[]).await;
        assert_eq!(ex.status, 200, "{}", String::from_utf8_lossy(&ex.body));
        let list = ex.message();
        let mut names: Vec<String> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }

    /// A modern `tools/call` of `name` with `args`, the `Mcp-Param-*`
    /// headers in `headers`.
    async fn call(&self, token: Option<&str>, name: &str, args: Value, headers: &[(&str, &str)]) -> Exchange {
        let params = json!({"name": name, "arguments": args});
        self.request(token, "tools/call", Some(name), params, headers).await
    }

    /// `lookup` in `region`, its header sent as it should be.
    async fn lookup(&self, token: Option<&str>, region: &str) -> Exchange {
        let args = json!({"region": region, "query": "q"});
        self.call(token, "lookup", args, &[("mcp-param-region", region)]).await
    }

    async fn request(
        &self,
        token: Option<&str>,
        method: &str,
        name: Option<&str>,
        params: Value,
        headers: &[(&str, &str)],
    ) -> Exchange {
        let mut req = http().post(self.gw.url(ROUTE)).headers(modern_headers(method, name));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        Exchange::run(req, modern_body(7, method, params)).await
    }
}

/// The names in one section (`approved`, `quarantined`, `blocked`) of a
/// route's `/catalog` report.
fn section(catalog: &Value, outcome: &str) -> Vec<String> {
    let mut names: Vec<String> = catalog[outcome]
        .as_array()
        .unwrap_or_else(|| panic!("no {outcome} in {catalog}"))
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The record of the request `ex`, once the audit writer has it.
async fn record(gw: &TestGateway, ex: &Exchange) -> CallRecord {
    tollgate_e2e::audit_support::wait_record(&gw.audit_dir(), ex).await
}

/// The JSON-RPC error of an answer: (code, message).
fn rpc_error(ex: &Exchange) -> (i64, String) {
    let m = ex.message();
    let code = m["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error in {m}"));
    (code, m["error"]["message"].as_str().unwrap_or_default().to_owned())
}

/// The approval of tool `name` in the lock file at `path`.
fn approval(path: &std::path::Path, name: &str) -> tollgate_catalog::Approval {
    let text = std::fs::read_to_string(path).unwrap();
    let lock = tollgate_catalog::Lock::parse(path, &text).unwrap();
    lock.get(ROUTE, tollgate_catalog::Kind::Tool, name)
        .unwrap_or_else(|| panic!("{name} is not in the lock:\n{text}"))
        .clone()
}
