//! Helpers for the audit trail tests (`e2e/audit.rs`): one HTTP exchange
//! as the client saw it, a trail's records and raw lines, Prometheus text,
//! and a recording OTLP/HTTP logs receiver.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::post;
use serde_json::Value;
use serde_json::json;
use tokio::net::TcpListener;
use tollgate_audit::{CallRecord, Filter, Outcome, Phase, PolicyMode, Tampering, VerifyError};

use crate::stub::Stub;
use crate::{
    Demo, TEST_BASE_URL, TEST_ISSUER, TestGateway, TestIssuer, http, modern_body, modern_headers, policy_dir, repo_root,
};

/// One request and its answer, as the client sent and received them.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The `x-request-id` response header.
    pub request_id: String,
    /// The HTTP status.
    pub status: u16,
    /// Request body bytes sent.
    pub sent: u64,
    /// The response body, every byte received.
    pub body: Vec<u8>,
    /// The `Mcp-Session-Id` response header, when there is one.
    pub session_id: Option<String>,
    /// The `Tollgate-Budget-Remaining` response header, when there is one.
    pub budget_remaining: Option<u64>,
}

impl Exchange {
    /// Send `builder` with `body` and read the whole answer.
    pub async fn run(builder: reqwest::RequestBuilder, body: impl Into<String>) -> Exchange {
        let body: String = body.into();
        let sent = body.len() as u64;
        let res = builder.body(body).send().await.unwrap();
        let request_id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
        let status = res.status().as_u16();
        let session_id = res
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let budget_remaining = res
            .headers()
            .get("tollgate-budget-remaining")
            .map(|v| v.to_str().unwrap().parse().unwrap());
        let body = res.bytes().await.unwrap().to_vec();
        Exchange {
            request_id,
            status,
            sent,
            body,
            session_id,
            budget_remaining,
        }
    }

    /// Response body bytes received.
    pub fn received(&self) -> u64 {
        self.body.len() as u64
    }

    /// The JSON-RPC answer (JSON, or the last SSE event with an id).
    pub fn message(&self) -> Value {
        let text = String::from_utf8_lossy(&self.body);
        serde_json::from_str(&text).unwrap_or_else(|_| {
            text.lines()
                .rev()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id").is_some())
                .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"))
        })
    }
}

/// Tokens for `bytes` response bytes at the default 3.5 bytes per token.
pub fn tokens(bytes: u64) -> u64 {
    (bytes * 2).div_ceil(7)
}

/// Every call record of the trail in `dir`, in trail order.
pub fn records(dir: &Path) -> Vec<CallRecord> {
    tollgate_audit::query(&[dir.to_owned()], Filter::default())
        .unwrap()
        .map(|e| e.unwrap().record)
        .collect()
}

/// The record of the request `ex` in the audit trail at `dir`, once the
/// audit writer has it (5 s at most).
pub async fn wait_record(dir: &Path, ex: &Exchange) -> CallRecord {
    for _ in 0..100 {
        if let Some(r) = records(dir).into_iter().find(|r| r.request_id == ex.request_id) {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no audit record of {}", ex.request_id);
}

/// The records of one request (one per batch element), in element order.
pub fn records_of<'a>(all: &'a [CallRecord], request_id: &str) -> Vec<&'a CallRecord> {
    all.iter().filter(|r| r.request_id == request_id).collect()
}

/// The trail's files, in chain order.
pub fn trail_files(dir: &Path) -> Vec<PathBuf> {
    tollgate_audit::trail_files(&[dir.to_owned()]).unwrap()
}

/// Every line of the trail, in chain order.
pub fn trail_lines(dir: &Path) -> Vec<String> {
    trail_files(dir)
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines().map(str::to_owned).collect::<Vec<_>>()
        })
        .collect()
}

/// The sum of the samples of `name` whose labels include all of `labels`,
/// or `None` when no such series is exposed (a metric that was renamed or
/// removed, or a label value never seen).
pub fn try_metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, rest) = series.split_once('{').unwrap_or((series, "}"));
            let has = |k: &str, v: &str| {
                let pair = format!("{k}=\"{v}\"");
                rest.starts_with(&pair) || rest.contains(&format!(",{pair}"))
            };
            let ok = n == name && labels.iter().all(|(k, v)| has(k, v));
            ok.then(|| value.parse::<f64>().unwrap())
        })
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// [`try_metric`] for a series that must exist: a missing series fails
/// the test instead of reading as zero.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    try_metric(text, name, labels)
        .unwrap_or_else(|| panic!("no series {name} with labels {labels:?} in the scrape:\n{text}"))
}

/// Scrape `{admin}/metrics` until `done` holds for its text (5 s at most:
/// metrics are updated when a response body has ended, which may be just
/// after the client read it).
pub async fn scrape_until(admin: &str, done: impl Fn(&str) -> bool) -> String {
    let client = crate::http();
    let mut text = String::new();
    for _ in 0..250 {
        text = client
            .get(format!("{admin}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if done(&text) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("metrics never reached the expected state:\n{text}");
}

/// A recording OTLP/HTTP receiver: accepts `POST /v1/logs` (JSON).
#[derive(Clone)]
pub struct Collector {
    /// `http://127.0.0.1:PORT`, the `[audit.otlp] endpoint`.
    pub endpoint: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Collector {
    /// Start on a loopback port.
    pub async fn spawn() -> Collector {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/logs", post(receive))
            .with_state(requests.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Collector { endpoint, requests }
    }

    /// Every log record received, in order.
    pub fn log_records(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        requests
            .iter()
            .flat_map(|r| r["resourceLogs"].as_array().cloned().unwrap_or_default())
            .flat_map(|rl| rl["scopeLogs"].as_array().cloned().unwrap_or_default())
            .flat_map(|sl| sl["logRecords"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// Wait (10 s at most) until `n` log records have arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<Value> {
        for _ in 0..500 {
            let got = self.log_records();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the collector received {:?}", self.log_records());
    }
}

async fn receive(State(requests): State<Arc<Mutex<Vec<Value>>>>, body: axum::body::Bytes) -> &'static str {
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    requests.lock().unwrap().push(value);
    "{}"
}

/// The string value of attribute `key` of an OTLP log record.
pub fn attribute(log: &Value, key: &str) -> Option<String> {
    let attr = log["attributes"].as_array()?.iter().find(|a| a["key"] == key)?;
    let v = &attr["value"];
    v["stringValue"].as_str().or(v["intValue"].as_str()).map(str::to_owned)
}

/// The demo route's `audit` table.
pub const DEMO_AUDIT: &str = "audit = { server_version = \"2.4.1\", approved_by = \"CHG-7 (security)\" }";

/// The demo policies, plus everything on the routes `legacy` and `down`.
pub fn policies() -> tempfile::TempDir {
    let demo = std::fs::read_to_string(repo_root().join("policies/demo.cedar")).unwrap();
    policy_dir(&format!(
        "{demo}\n@id(\"legacy-all\")\npermit (principal, action, resource in Tollgate::Server::\"legacy\");\n\
         @id(\"down-all\")\npermit (principal, action, resource in Tollgate::Server::\"down\");\n"
    ))
}

/// A gateway with the policies in front of the demo server; `extra` goes
/// before `[[servers]]`, `routes` after the demo route.
pub async fn demo_gateway(
    issuer: &TestIssuer,
    demo: &Demo,
    extra: &str,
    routes: &str,
) -> (TestGateway, tempfile::TempDir) {
    let policies = policies();
    let gw = TestGateway::spawn(&format!(
        "{}\n{extra}\n[policy]\ndir = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"{}\"\n\
         auth = {{ scopes = [\"mcp:tools\"] }}\n{DEMO_AUDIT}\n\n{routes}",
        issuer.config(),
        policies.path().display(),
        demo.url
    ))
    .await;
    (gw, policies)
}

/// A token with every attribution claim: team, groups, client, cost centre.
pub fn token(issuer: &TestIssuer, sub: &str, team: &str, groups: &[&str]) -> String {
    let mut claims = issuer.claims(sub, "mcp:tools", &["demo", "legacy", "down"]);
    claims["team"] = json!(team);
    claims["groups"] = json!(groups);
    claims["client_id"] = json!("agent-cli");
    claims["cost_center"] = json!(format!("cc-{sub}"));
    claims["jti"] = json!(format!("jti-{sub}"));
    issuer.sign(&claims)
}

/// A modern request with the standard headers for `method` / `name`.
pub async fn modern(url: String, token: Option<&str>, method: &str, name: Option<&str>, body: String) -> Exchange {
    let mut req = http().post(url).headers(modern_headers(method, name));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    Exchange::run(req, body).await
}

/// A modern `tools/call` of `name` with `args`.
pub async fn tool(url: String, token: &str, id: u64, name: &str, args: Value) -> Exchange {
    let body = modern_body(id, "tools/call", json!({"name": name, "arguments": args}));
    modern(url, Some(token), "tools/call", Some(name), body).await
}

/// The single record of `ex`, with what every complete record shares with
/// the exchange: request id, route, status, sizes, tokens, duration.
pub fn record_of<'a>(all: &'a [CallRecord], ex: &Exchange, route: &str) -> &'a CallRecord {
    let recs = records_of(all, &ex.request_id);
    assert_eq!(recs.len(), 1, "one record for {ex:?}");
    let rec = recs[0];
    assert_eq!(rec.phase, Phase::Complete);
    assert_eq!(rec.batch_index, None);
    assert_eq!(&*rec.route, route);
    assert_eq!(rec.status, Some(ex.status));
    assert_eq!(rec.bytes_in, ex.sent, "bytes_in of {rec:?}");
    assert_eq!(rec.bytes_out, ex.received(), "bytes_out of {rec:?}");
    assert_eq!(rec.tokens, tokens(ex.received()));
    assert!(rec.duration_us > 0);
    rec
}

/// The principal of a [`token`] for `sub`.
pub fn assert_principal(rec: &CallRecord, sub: &str, team: &str, groups: &[&str]) {
    let p = rec.principal.as_deref().expect("principal");
    assert_eq!(p.kind.as_str(), "user");
    assert_eq!(p.issuer, TEST_ISSUER);
    assert_eq!(p.subject, sub);
    assert_eq!(p.client_id.as_deref(), Some("agent-cli"));
    assert_eq!(p.token_id.as_deref(), Some(format!("jti-{sub}").as_str()));
    assert_eq!(p.team.as_deref(), Some(team));
    assert_eq!(p.groups, groups);
    assert_eq!(p.cost_center.as_deref(), Some(format!("cc-{sub}").as_str()));
    assert!(p.audience.contains(&format!("{TEST_BASE_URL}/mcp/demo")), "{p:?}");
}

/// The protocol fields: era, version, method, name, JSON-RPC id.
pub fn assert_call(rec: &CallRecord, era: Option<&str>, method: Option<&str>, name: Option<&str>, id: Option<&str>) {
    assert_eq!(rec.era.map(|e| e.as_str()), era);
    let version = era.map(|e| if e == "modern" { "2026-07-28" } else { "2025-03-26" });
    assert_eq!(rec.protocol_version.as_deref(), version);
    assert_eq!(rec.method.as_deref(), method);
    assert_eq!(rec.name.as_deref(), name);
    assert_eq!(rec.jsonrpc_id.as_deref(), id);
}

/// The policy decision (always enforced here).
pub fn assert_decision(rec: &CallRecord, outcome: Outcome, policies: &[&str], reason: Option<&str>) {
    assert_eq!(rec.decision.outcome, outcome, "{rec:?}");
    assert_eq!(rec.decision.mode, PolicyMode::Enforce);
    let ids: Vec<&str> = rec.decision.policies.iter().map(|p| &**p).collect();
    assert_eq!(ids, policies, "{rec:?}");
    assert_eq!(rec.decision.reason.as_deref(), reason);
}

/// The JSON-RPC error code and the gateway's error class.
pub fn assert_error(rec: &CallRecord, rpc_error: Option<i64>, error: Option<&str>) {
    assert_eq!(rec.rpc_error, rpc_error, "{rec:?}");
    assert_eq!(rec.error.as_deref(), error, "{rec:?}");
}

/// The `definition_hash` a record should carry for tool `name` of a
/// `tools/list` answer: `sha256:` and the SHA-256 of its entry with keys
/// sorted, in compact JSON.
pub fn listed_revision(list_answer: &Value, name: &str) -> String {
    let tools = list_answer["result"]["tools"].as_array().unwrap();
    let mut entry = tools.iter().find(|t| t["name"] == name).unwrap().clone();
    entry.sort_all_objects();
    format!("sha256:{}", tollgate_audit::Hash::of_line(entry.to_string().as_bytes()))
}

/// An open route to the stub and `n` calls on it.
pub async fn stub_trail(stub: &Stub, n: u64) -> TestGateway {
    let mut gw = TestGateway::spawn(&format!("[[servers]]\nname = \"s\"\nurl = \"{}/json\"\n", stub.base)).await;
    for id in 1..=n {
        let body = modern_body(id, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
        assert_eq!(
            modern(gw.url("s"), None, "tools/call", Some("echo"), body).await.status,
            200
        );
    }
    gw.shutdown().await;
    gw
}

/// Verify a copy of the trail with its lines changed by `edit`; the
/// tampering found, and the copy's file.
pub fn tampered(dir: &std::path::Path, edit: impl FnOnce(&mut Vec<String>)) -> (tempfile::TempDir, Box<Tampering>) {
    let file = trail_files(dir).pop().unwrap();
    let mut lines = trail_lines(dir);
    edit(&mut lines);
    let copy = tempfile::tempdir().unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(copy.path().join(file.file_name().unwrap()), text).unwrap();
    match tollgate_audit::verify(&[copy.path().to_owned()]) {
        Err(VerifyError::Tampered(t)) => (copy, t),
        other => panic!("tampering not detected: {other:?}"),
    }
}

/// One tools/call from load task `task`: modern with a numeric id (even
/// tasks) or legacy with a string id (odd tasks).
pub fn load_request(url: &str, task: u64, n: u64) -> reqwest::RequestBuilder {
    let params = json!({"name": "echo", "arguments": {"text": "load"}});
    if task.is_multiple_of(2) {
        let body = modern_body(task * 1_000_000 + n, "tools/call", params);
        http()
            .post(url)
            .headers(modern_headers("tools/call", Some("echo")))
            .body(body)
    } else {
        let body = json!({"jsonrpc": "2.0", "id": format!("t{task}-{n}"), "method": "tools/call", "params": params});
        http()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    }
}
