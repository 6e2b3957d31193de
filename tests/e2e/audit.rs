//! The audit trail through real gateways: one record per JSON-RPC request
//! (allowed, denied, malformed, unauthenticated, upstream failure, legacy
//! batch elements) checked field by field against what the client sent and
//! received; the call metrics; the OTLP export; and the spend report. The
//! chain and strict durability are in `audit_trail.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use serde_json::{Value, json};
use tollgate_audit::{CallRecord, CredentialKind, GroupBy, Outcome};
use tollgate_e2e::audit_support::{
    Collector, Exchange, assert_call, assert_decision, assert_error, assert_principal, attribute, demo_gateway, metric,
    modern, record_of, records, records_of, scrape_until, token, tokens, tool, trail_lines,
};
use tollgate_e2e::children::free_port;
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{Demo, TestIssuer, http, modern_body, modern_headers};

#[tokio::test]
async fn every_request_leaves_a_record_that_matches_what_the_client_saw() {
    let (issuer, demo, stub) = (TestIssuer::new(), Demo::spawn().await, Stub::spawn().await);
    let secret = issuer.secret_file("upstream.secret", "upstream-secret-1");
    let closed = free_port();
    let routes = format!(
        "[[servers]]\nname = \"legacy\"\nurl = \"{}/json\"\n\
         credential = {{ kind = \"static\", scheme = \"Bearer\", value = {{ file = \"{secret}\" }} }}\n\n\
         [[servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:{closed}/mcp\"\n",
        stub.base
    );
    let (mut gw, _policies) = demo_gateway(&issuer, &demo, "", &routes).await;
    let alice = token(&issuer, "alice", "payments", &["eng", "sre"]);
    let bob = token(&issuer, "bob", "search", &["eng"]);
    let echo = json!({"text": "hi"});

    let list_body = modern_body(1, "tools/list", json!({}));
    let list = modern(gw.url("demo"), Some(&alice), "tools/list", None, list_body).await;
    let traced = http()
        .post(gw.url("demo"))
        .headers(modern_headers("tools/call", Some("echo")))
        .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .bearer_auth(&alice);
    let echo_call = json!({"name": "echo", "arguments": echo});
    let allowed = Exchange::run(traced, modern_body(2, "tools/call", echo_call.clone())).await;
    let denied = tool(gw.url("demo"), &bob, 3, "delete_item", json!({"id": "1"})).await;
    let truncated = r#"{"jsonrpc":"2.0","id":4,"method":"#.to_owned();
    let parse = modern(gw.url("demo"), Some(&alice), "tools/call", Some("echo"), truncated).await;
    let add = modern_body(5, "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}));
    let mismatch = modern(gw.url("demo"), Some(&alice), "tools/call", Some("echo"), add).await;
    let echo_body = modern_body(6, "tools/call", echo_call);
    let anonymous = modern(gw.url("demo"), None, "tools/call", Some("echo"), echo_body).await;
    let failed = tool(gw.url("down"), &alice, 7, "echo", echo.clone()).await;
    let batch_body = json!([
        {"jsonrpc": "2.0", "id": "b1", "method": "tools/call", "params": {"name": "lookup", "arguments": {"q": "x"}}},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/call", "params": {"name": "store", "arguments": {"v": 1}}},
    ]);
    let legacy = http()
        .post(gw.url("legacy"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-03-26")
        .bearer_auth(&alice);
    let batch = Exchange::run(legacy, batch_body.to_string()).await;
    let statuses: Vec<u16> = [&list, &allowed, &denied, &parse, &mismatch, &anonymous, &failed, &batch]
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, [200, 200, 200, 400, 400, 401, 502, 200]);
    assert_eq!(denied.message()["error"]["code"], -32602);
    gw.shutdown().await;
    let all = records(&gw.audit_dir());
    assert_eq!(all.len(), 9, "{all:#?}");
    assert_eq!(
        all.iter().filter(|r| r.trace_id.is_some()).count(),
        1,
        "only one call was traced"
    );

    let demo_route = |rec: &CallRecord| {
        assert_eq!(rec.upstream.as_deref(), Some(demo.url.as_str()));
        assert_eq!(rec.server_version.as_deref(), Some("2.4.1"));
        assert_eq!(rec.approved_by.as_deref(), Some("CHG-7 (security)"));
        assert_eq!(rec.credential, CredentialKind::None);
    };

    let rec = record_of(&all, &list, "demo");
    demo_route(rec);
    assert_principal(rec, "alice", "payments", &["eng", "sre"]);
    assert_call(rec, Some("modern"), Some("tools/list"), None, Some("1"));
    assert_decision(rec, Outcome::Allow, &["demo-discover"], Some("allow"));
    assert_error(rec, None, None);
    assert!(rec.catalog, "tools/list is catalog context");
    assert!(rec.ttfb_us.is_some_and(|t| t > 0 && t <= rec.duration_us));

    let rec = record_of(&all, &allowed, "demo");
    demo_route(rec);
    assert_principal(rec, "alice", "payments", &["eng", "sre"]);
    assert_call(rec, Some("modern"), Some("tools/call"), Some("echo"), Some("2"));
    let permits = ["demo-read-only-tools", "demo-payments-team-all-tools"];
    assert_decision(rec, Outcome::Allow, &permits, Some("allow"));
    assert_error(rec, None, None);
    assert!(!rec.catalog);
    assert!(rec.ttfb_us.is_some_and(|t| t > 0 && t <= rec.duration_us));
    assert_eq!(rec.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    // The revision of `echo` the caller was shown by the earlier tools/list.
    let listed = list.message()["result"]["tools"].as_array().unwrap().clone();
    let mut entry = listed.into_iter().find(|t| t["name"] == "echo").unwrap();
    entry.sort_all_objects();
    let revision = format!("sha256:{}", tollgate_audit::Hash::of_line(entry.to_string().as_bytes()));
    assert_eq!(rec.definition_hash.as_deref(), Some(revision.as_str()));

    let rec = record_of(&all, &denied, "demo");
    demo_route(rec);
    assert_principal(rec, "bob", "search", &["eng"]);
    assert_call(rec, Some("modern"), Some("tools/call"), Some("delete_item"), Some("3"));
    assert_decision(rec, Outcome::Deny, &["demo-delete-needs-admin"], Some("deny"));
    assert_error(rec, Some(-32602), Some("policy_denied"));
    assert_eq!(rec.ttfb_us, None, "not forwarded");

    // The parse error's body has no readable id; the mismatch's body was
    // scanned, so its record names what the body asked for.
    let unread = (None, None, None);
    let scanned = (Some("tools/call"), Some("add"), Some("5"));
    for (ex, code, kind, (method, name, id)) in [
        (&parse, -32700, "parse_error", unread),
        (&mismatch, -32020, "header_mismatch", scanned),
    ] {
        let rec = record_of(&all, ex, "demo");
        demo_route(rec);
        assert_principal(rec, "alice", "payments", &["eng", "sre"]);
        assert_call(rec, None, method, name, id);
        assert_decision(rec, Outcome::NotEvaluated, &[], None);
        assert_error(rec, Some(code), Some(kind));
        assert_eq!(rec.ttfb_us, None);
    }

    let rec = record_of(&all, &anonymous, "demo");
    demo_route(rec);
    assert!(rec.principal.is_none(), "authentication failed");
    assert_call(rec, None, None, None, None);
    assert_decision(rec, Outcome::NotEvaluated, &[], None);
    assert_error(rec, Some(-32000), Some("unauthenticated"));

    let rec = record_of(&all, &failed, "down");
    assert_eq!(
        rec.upstream.as_deref(),
        Some(format!("http://127.0.0.1:{closed}/mcp").as_str())
    );
    assert_eq!(
        (rec.server_version.as_deref(), rec.approved_by.as_deref()),
        (None, None)
    );
    assert_principal(rec, "alice", "payments", &["eng", "sre"]);
    assert_call(rec, Some("modern"), Some("tools/call"), Some("echo"), Some("7"));
    assert_decision(rec, Outcome::Allow, &["down-all"], Some("allow"));
    assert_error(rec, Some(-32001), Some("upstream_unavailable"));
    assert_eq!(rec.ttfb_us, None, "no upstream byte arrived");

    let recs = records_of(&all, &batch.request_id);
    assert_eq!(recs.len(), 2, "one record per batch element");
    assert_eq!(recs.iter().map(|r| r.bytes_in).sum::<u64>(), batch.sent);
    assert_eq!(recs.iter().map(|r| r.bytes_out).sum::<u64>(), batch.received());
    for (i, (rec, (id, name))) in recs.iter().zip([("\"b1\"", "lookup"), ("\"b2\"", "store")]).enumerate() {
        assert_eq!(rec.batch_index, Some(i as u32));
        assert_eq!(rec.status, Some(200));
        assert_eq!(rec.upstream.as_deref(), Some(format!("{}/json", stub.base).as_str()));
        assert_eq!(
            (rec.server_version.as_deref(), rec.approved_by.as_deref()),
            (None, None)
        );
        assert_principal(rec, "alice", "payments", &["eng", "sre"]);
        assert_call(rec, Some("legacy"), Some("tools/call"), Some(name), Some(id));
        assert_decision(rec, Outcome::Allow, &["legacy-all"], Some("allow"));
        assert_error(rec, None, None);
        let share = |total: u64| total / 2 + u64::from(i == 0) * (total % 2);
        assert_eq!(
            (rec.bytes_in, rec.bytes_out),
            (share(batch.sent), share(batch.received()))
        );
        assert_eq!(rec.tokens, tokens(rec.bytes_out));
        assert!(rec.ttfb_us.is_some() && rec.duration_us > 0);
        // The upstream received the static credential (asserted below).
        assert_eq!(rec.credential, CredentialKind::Static);
    }
    let seen = stub.seen().await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].headers["authorization"], "Bearer upstream-secret-1");

    let raw = trail_lines(&gw.audit_dir()).join("\n");
    for secret in [&alice, &bob, "upstream-secret-1"] {
        assert!(!raw.contains(secret), "a secret reached the audit trail");
    }
    for t in [&alice, &bob] {
        assert!(
            !raw.contains(t.rsplit('.').next().unwrap()),
            "a token signature reached the trail"
        );
    }
}

#[tokio::test]
async fn call_metrics_count_exactly_the_traffic_sent() {
    let (issuer, demo) = (TestIssuer::new(), Demo::spawn().await);
    let down = format!(
        "[[servers]]\nname = \"down\"\nurl = \"http://127.0.0.1:{}/mcp\"\n",
        free_port()
    );
    let (gw, _policies) = demo_gateway(&issuer, &demo, "", &down).await;
    let alice = token(&issuer, "alice", "payments", &["eng"]);
    let bob = token(&issuer, "bob", "search", &["eng"]);
    let list_body = modern_body(1, "tools/list", json!({}));
    let list = modern(gw.url("demo"), Some(&alice), "tools/list", None, list_body).await;
    let echo1 = tool(gw.url("demo"), &alice, 2, "echo", json!({"text": "one"})).await;
    let echo2 = tool(gw.url("demo"), &alice, 3, "echo", json!({"text": "two, longer"})).await;
    let denied = tool(gw.url("demo"), &bob, 4, "delete_item", json!({"id": "1"})).await;
    let failed = tool(gw.url("down"), &alice, 5, "echo", json!({"text": "x"})).await;
    assert_eq!(failed.status, 502);
    let text = scrape_until(&gw.admin, |t| {
        metric(t, "tollgate_audit_records", &[("kind", "written")]) >= 5.0
            && metric(t, "tollgate_requests_total", &[]) >= 5.0
            && metric(t, "tollgate_audit_write_seconds_count", &[("stage", "sync")]) >= 1.0
    })
    .await;
    let m = |name: &str, labels: &[(&str, &str)]| metric(&text, name, labels);
    let demo_call = [("route", "demo"), ("method", "tools/call")];
    assert_eq!(m("tollgate_requests_total", &[("route", "demo")]), 4.0);
    assert_eq!(
        m(
            "tollgate_requests_total",
            &[demo_call[0], demo_call[1], ("status", "200")]
        ),
        3.0
    );
    assert_eq!(
        m(
            "tollgate_requests_total",
            &[("method", "tools/list"), ("status", "200")]
        ),
        1.0
    );
    let op = |method: &str, tool: &str, outcome: &str, team: &str| {
        let labels = [
            ("route", "demo"),
            ("mcp_method_name", method),
            ("gen_ai_tool_name", tool),
            ("outcome", outcome),
            ("team", team),
        ];
        m("mcp_server_operation_duration_seconds_count", &labels)
    };
    assert_eq!(op("tools/list", "", "ok", "payments"), 1.0);
    assert_eq!(op("tools/call", "echo", "ok", "payments"), 2.0);
    assert_eq!(op("tools/call", "delete_item", "denied", "search"), 1.0);
    assert_eq!(m("mcp_server_operation_duration_seconds_count", &[]), 5.0);
    let down_labels = [("route", "down"), ("method", "tools/call"), ("status", "502")];
    assert_eq!(m("tollgate_requests_total", &down_labels), 1.0);
    let errors = [("route", "down"), ("kind", "unavailable")];
    assert_eq!(m("tollgate_upstream_errors_total", &errors), 1.0);
    assert_eq!(m("tollgate_upstream_errors_total", &[]), 1.0);
    let down_op = [
        ("route", "down"),
        ("gen_ai_tool_name", "other"),
        ("outcome", "error"),
        ("team", "payments"),
    ];
    assert_eq!(
        m("mcp_server_operation_duration_seconds_count", &down_op),
        1.0,
        "unlisted tool: other"
    );
    let ttfb = "tollgate_time_to_first_byte_seconds_count";
    assert_eq!(m(ttfb, &demo_call), 2.0, "the denied call was not forwarded");
    assert_eq!(m(ttfb, &[("route", "demo"), ("method", "tools/list")]), 1.0);
    assert_eq!(m(ttfb, &[("route", "down")]), 0.0, "no upstream byte arrived");
    for (team, calls) in [("payments", vec![&echo1, &echo2]), ("search", vec![&denied])] {
        let labels = [demo_call[0], demo_call[1], ("team", team)];
        let sent: u64 = calls.iter().map(|e| e.sent).sum();
        let received: u64 = calls.iter().map(|e| e.received()).sum();
        assert_eq!(m("tollgate_request_bytes_total", &labels), sent as f64, "{team}");
        assert_eq!(m("tollgate_response_bytes_total", &labels), received as f64, "{team}");
    }
    let list_labels = [("route", "demo"), ("method", "tools/list"), ("team", "payments")];
    assert_eq!(m("tollgate_request_bytes_total", &list_labels), list.sent as f64);
    assert_eq!(m("tollgate_response_bytes_total", &list_labels), list.received() as f64);
    let denial = [("route", "demo"), ("reason", "deny"), ("mode", "enforce")];
    assert_eq!(m("tollgate_policy_denials_total", &denial), 1.0);
    assert_eq!(m("tollgate_policy_denials_total", &[]), 1.0);
    assert_eq!(m("tollgate_audit_records", &[("kind", "written")]), 5.0);
    assert_eq!(m("tollgate_audit_records", &[("kind", "dropped")]), 0.0);
    assert_eq!(m("tollgate_audit_queue_depth", &[]), 0.0);
    assert!(m("tollgate_audit_write_seconds_count", &[("stage", "sync")]) >= 1.0);
    assert!(m("tollgate_audit_write_seconds_count", &[("stage", "record")]) >= 1.0);
}

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
    let mut expected: std::collections::BTreeMap<&str, (u64, u64, u64, u64)> = Default::default();
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
            for key in [team, name] {
                let e = expected.entry(key).or_default();
                *e = (e.0 + 1, e.1 + ex.sent, e.2 + ex.received(), e.3 + tokens(ex.received()));
            }
        }
    }
    gw.shutdown().await;
    let dir = [gw.audit_dir()];
    for (by, keys) in [
        (GroupBy::Team, ["payments", "search"]),
        (GroupBy::Tool, ["echo", "add"]),
    ] {
        let report = tollgate_audit::usage(&dir, by, None, None).unwrap();
        assert_eq!(report.rows.len(), 2, "{report:?}");
        for key in keys {
            let row = report.rows.iter().find(|r| r.key == key).unwrap();
            let (calls, bytes_in, bytes_out, tokens) = expected[key];
            assert_eq!(
                (row.calls, row.bytes_in, row.bytes_out, row.tokens),
                (calls, bytes_in, bytes_out, tokens),
                "{key}"
            );
            assert_eq!((row.errors, row.denied, row.catalog_tokens), (0, 0, 0), "{key}");
            assert!(row.p50_us > 0 && row.p50_us <= row.p99_us, "{row:?}");
        }
        assert_eq!(report.total.calls, 10);
        assert_eq!(report.total.tokens, expected["payments"].3 + expected["search"].3);
    }
}
