//! The audit trail through real gateways: one record per JSON-RPC request
//! (allowed, denied, malformed, unauthenticated, upstream failure, legacy
//! batch elements) checked field by field against what the client sent and
//! received (`audit/records.rs`); the call metrics (`audit/metrics.rs`);
//! the OTLP export; the spend report; and the audit index the gateway
//! keeps (`audit/index.rs`). The chain and strict durability
//! are in `audit_trail.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "audit/index.rs"]
mod index;
#[path = "audit/metrics.rs"]
mod metrics;
#[path = "audit/records.rs"]
mod records;

use serde_json::{Value, json};
use tollgate_e2e::audit_support::{Collector, attribute, demo_gateway, token, tokens, tool, trail_lines};
use tollgate_e2e::children::tollgate_cli;
use tollgate_e2e::{Demo, TestIssuer};

#[tokio::test]
async fn records_are_exported_over_otlp_with_their_chain_hash() {
    let (issuer, demo, collector) = (TestIssuer::new(), Demo::spawn().await, Collector::spawn().await);
    let otlp = format!(
        "[audit.otlp]\nenabled = true\nendpoint = \"{}\"\nbatch_interval = \"20ms\"\n",
        collector.endpoint
    );
    let (mut gw, _policies) = demo_gateway(&issuer, &demo, &otlp, "").await;
    let alice = token(&issuer, "alice", "payments", &["eng"]);
    let bob = token(&issuer, "bob", "search", &["eng"]);
    let allowed = tool(gw.url("demo"), &alice, 1, "echo", json!({"text": "x"})).await;
    let denied = tool(gw.url("demo"), &bob, 2, "delete_item", json!({"id": "1"})).await;
    let logs = collector.wait_for(2).await;
    gw.shutdown().await;
    assert_eq!(logs.len(), 2, "{logs:#?}");
    let lines = trail_lines(&gw.audit_dir());
    let cases = [
        (&allowed, "alice", "payments", "echo", "allow", "INFO"),
        (&denied, "bob", "search", "delete_item", "deny", "WARN"),
    ];
    for (ex, user, team, tool, decision, severity) in cases {
        let log = logs
            .iter()
            .find(|l| l["body"]["stringValue"].as_str().unwrap().contains(&ex.request_id))
            .unwrap_or_else(|| panic!("no log record for {}", ex.request_id));
        assert_eq!(log["eventName"], "tollgate.audit.call");
        assert_eq!(log["severityText"], severity);
        let a = |k: &str| attribute(log, k);
        assert_eq!(a("tollgate.route").as_deref(), Some("demo"));
        assert_eq!(a("user.id").as_deref(), Some(user));
        assert_eq!(a("tollgate.team").as_deref(), Some(team));
        assert_eq!(a("mcp.method.name").as_deref(), Some("tools/call"));
        assert_eq!(a("gen_ai.tool.name").as_deref(), Some(tool));
        assert_eq!(a("tollgate.decision").as_deref(), Some(decision));
        assert_eq!(a("http.response.status_code").as_deref(), Some("200"));
        // The body is the line exactly as stored; the hash is that line's,
        // as the next line's `prev` proves.
        let body = log["body"]["stringValue"].as_str().unwrap();
        let at = lines.iter().position(|l| l == body).expect("the body is a trail line");
        let next: Value = serde_json::from_str(&lines[at + 1]).unwrap();
        assert_eq!(a("tollgate.audit.hash").as_deref(), next["prev"].as_str());
        let line: Value = serde_json::from_str(body).unwrap();
        assert_eq!(a("tollgate.audit.seq"), Some(line["seq"].to_string()));
    }
}

#[tokio::test]
async fn usage_sums_match_the_traffic_sent() {
    let (issuer, demo) = (TestIssuer::new(), Demo::spawn().await);
    let (mut gw, _policies) = demo_gateway(&issuer, &demo, "", "").await;
    let alice = token(&issuer, "alice", "payments", &["eng"]);
    let bob = token(&issuer, "bob", "search", &["eng"]);
    let plan = [
        (&alice, "payments", "echo", 3),
        (&alice, "payments", "add", 2),
        (&bob, "search", "echo", 1),
        (&bob, "search", "add", 4),
    ];
    // (calls, bytes_in, bytes_out, tokens) per team and per tool.
    let mut expected: std::collections::BTreeMap<String, (u64, u64, u64, u64)> = Default::default();
    let mut id = 0;
    for (token, team, name, n) in plan {
        for i in 0..n {
            id += 1;
            let args = if name == "echo" {
                json!({"text": "x".repeat(i * 7)})
            } else {
                json!({"a": i, "b": 40})
            };
            let ex = tool(gw.url("demo"), token, id, name, args).await;
            assert_eq!(ex.status, 200);
            assert!(ex.message()["result"].is_object(), "{:?}", ex.message());
            // `--by tool` keys a tool by its server.
            for key in [team, &format!("demo/{name}")] {
                let e = expected.entry(key.to_owned()).or_default();
                *e = (e.0 + 1, e.1 + ex.sent, e.2 + ex.received(), e.3 + tokens(ex.received()));
            }
        }
    }
    gw.shutdown().await;
    let dir = gw.audit_dir().display().to_string();
    for (by, keys) in [("team", ["payments", "search"]), ("tool", ["demo/echo", "demo/add"])] {
        // What a user runs: `tollgate usage DIR --by … --format json`.
        let out = tollgate_cli(&["usage", &dir, "--by", by, "--format", "json"]).await;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = report["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{report}");
        for key in keys {
            let row = rows.iter().find(|r| r["key"] == key).unwrap();
            let (calls, bytes_in, bytes_out, tokens) = expected[key];
            let field = |f: &str| row[f].as_u64().unwrap();
            assert_eq!(
                (field("calls"), field("bytes_in"), field("bytes_out"), field("tokens")),
                (calls, bytes_in, bytes_out, tokens),
                "{key}"
            );
            assert_eq!(
                (field("errors"), field("denied"), field("catalog_tokens")),
                (0, 0, 0),
                "{key}"
            );
            assert!(field("p50_us") > 0 && field("p50_us") <= field("p99_us"), "{row}");
        }
        assert_eq!(report["total"]["calls"], 10);
        assert_eq!(report["total"]["tokens"], expected["payments"].3 + expected["search"].3);
    }
}
