//! One record per JSON-RPC request, checked field by field against what
//! the client sent and received.

use serde_json::json;
use tollgate_audit::{CallRecord, CredentialKind, Outcome};
use tollgate_e2e::audit_support::{
    Exchange, assert_call, assert_decision, assert_error, assert_principal, demo_gateway, listed_revision, modern,
    record_of, records, records_of, token, tokens, tool, trail_lines,
};
use tollgate_e2e::children::free_port;
use tollgate_e2e::stub::Stub;
use tollgate_e2e::{Demo, TestGateway, TestIssuer, http, modern_body, modern_headers};

/// One request of every kind a record is written for, each as the client
/// saw it, and the trail the gateway wrote for them.
struct Traffic {
    demo: Demo,
    stub: Stub,
    gw: TestGateway,
    /// The port of the `down` route's upstream, where nothing listens.
    closed: u16,
    alice: String,
    bob: String,
    list: Exchange,
    allowed: Exchange,
    denied: Exchange,
    parse: Exchange,
    mismatch: Exchange,
    anonymous: Exchange,
    failed: Exchange,
    batch: Exchange,
    all: Vec<CallRecord>,
}

impl Traffic {
    /// Send every kind of request through a gateway in front of the demo, a
    /// legacy stub with a static credential and a closed port; shut the
    /// gateway down and read its trail.
    async fn send() -> Traffic {
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
        let echo_call = json!({"name": "echo", "arguments": echo});
        let allowed = traced(gw.url("demo"), &alice, modern_body(2, "tools/call", echo_call.clone())).await;
        let denied = tool(gw.url("demo"), &bob, 3, "delete_item", json!({"id": "1"})).await;
        let truncated = r#"{"jsonrpc":"2.0","id":4,"method":"#.to_owned();
        let parse = modern(gw.url("demo"), Some(&alice), "tools/call", Some("echo"), truncated).await;
        let add = modern_body(5, "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}));
        let mismatch = modern(gw.url("demo"), Some(&alice), "tools/call", Some("echo"), add).await;
        let echo_body = modern_body(6, "tools/call", echo_call);
        let anonymous = modern(gw.url("demo"), None, "tools/call", Some("echo"), echo_body).await;
        let failed = tool(gw.url("down"), &alice, 7, "echo", echo.clone()).await;
        let batch = legacy_batch(gw.url("legacy"), &alice).await;
        gw.shutdown().await;
        let all = records(&gw.audit_dir());
        Traffic {
            demo,
            stub,
            gw,
            closed,
            alice,
            bob,
            list,
            allowed,
            denied,
            parse,
            mismatch,
            anonymous,
            failed,
            batch,
            all,
        }
    }

    /// Each request got the answer its kind calls for, and left one record
    /// (two for the batch); only the traced call carries a trace id.
    fn check_answers_and_record_count(&self) {
        let all = &self.all;
        let statuses: Vec<u16> = [
            &self.list,
            &self.allowed,
            &self.denied,
            &self.parse,
            &self.mismatch,
            &self.anonymous,
            &self.failed,
            &self.batch,
        ]
        .iter()
        .map(|e| e.status)
        .collect();
        assert_eq!(statuses, [200, 200, 200, 400, 400, 401, 502, 200]);
        assert_eq!(self.denied.message()["error"]["code"], -32602);
        assert_eq!(all.len(), 9, "{all:#?}");
        assert_eq!(
            all.iter().filter(|r| r.trace_id.is_some()).count(),
            1,
            "only one call was traced"
        );
    }

    /// What every record of the demo route names about its upstream.
    fn assert_demo_route(&self, rec: &CallRecord) {
        assert_eq!(rec.upstream.as_deref(), Some(self.demo.url.as_str()));
        assert_eq!(rec.server_version.as_deref(), Some("2.4.1"));
        assert_eq!(rec.approved_by.as_deref(), Some("CHG-7 (security)"));
        assert_eq!(rec.credential, CredentialKind::None);
    }

    /// The tools/list and the traced echo call: allowed, forwarded, and the
    /// call names the revision of `echo` the list showed.
    fn check_listed_and_allowed(&self) {
        let rec = record_of(&self.all, &self.list, "demo");
        self.assert_demo_route(rec);
        assert_principal(rec, "alice", "payments", &["eng", "sre"]);
        assert_call(rec, Some("modern"), Some("tools/list"), None, Some("1"));
        assert_decision(rec, Outcome::Allow, &["demo-discover"], Some("allow"));
        assert_error(rec, None, None);
        assert!(rec.catalog, "tools/list is catalog context");
        assert!(rec.ttfb_us.is_some_and(|t| t > 0 && t <= rec.duration_us));

        let rec = record_of(&self.all, &self.allowed, "demo");
        self.assert_demo_route(rec);
        assert_principal(rec, "alice", "payments", &["eng", "sre"]);
        assert_call(rec, Some("modern"), Some("tools/call"), Some("echo"), Some("2"));
        let permits = ["demo-read-only-tools", "demo-payments-team-all-tools"];
        assert_decision(rec, Outcome::Allow, &permits, Some("allow"));
        assert_error(rec, None, None);
        assert!(!rec.catalog);
        assert!(rec.ttfb_us.is_some_and(|t| t > 0 && t <= rec.duration_us));
        assert_eq!(rec.trace_id.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
        // The revision of `echo` the caller was shown by the earlier tools/list.
        let revision = listed_revision(&self.list.message(), "echo");
        assert_eq!(rec.definition_hash.as_deref(), Some(revision.as_str()));
    }

    /// The calls refused before forwarding: denied by policy, unparsable,
    /// headers disagreeing with the body, unauthenticated.
    fn check_refused(&self) {
        let rec = record_of(&self.all, &self.denied, "demo");
        self.assert_demo_route(rec);
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
            (&self.parse, -32700, "parse_error", unread),
            (&self.mismatch, -32020, "header_mismatch", scanned),
        ] {
            let rec = record_of(&self.all, ex, "demo");
            self.assert_demo_route(rec);
            assert_principal(rec, "alice", "payments", &["eng", "sre"]);
            assert_call(rec, None, method, name, id);
            assert_decision(rec, Outcome::NotEvaluated, &[], None);
            assert_error(rec, Some(code), Some(kind));
            assert_eq!(rec.ttfb_us, None);
        }

        let rec = record_of(&self.all, &self.anonymous, "demo");
        self.assert_demo_route(rec);
        assert!(rec.principal.is_none(), "authentication failed");
        assert_call(rec, None, None, None, None);
        assert_decision(rec, Outcome::NotEvaluated, &[], None);
        assert_error(rec, Some(-32000), Some("unauthenticated"));
    }

    /// The call allowed on a route whose upstream does not listen.
    fn check_upstream_failure(&self) {
        let rec = record_of(&self.all, &self.failed, "down");
        assert_eq!(
            rec.upstream.as_deref(),
            Some(format!("http://127.0.0.1:{}/mcp", self.closed).as_str())
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
    }

    /// The legacy batch: one record per element, the bytes shared between
    /// them, and the upstream given the route's static credential.
    async fn check_legacy_batch(&self) {
        let batch = &self.batch;
        let recs = records_of(&self.all, &batch.request_id);
        assert_eq!(recs.len(), 2, "one record per batch element");
        assert_eq!(recs.iter().map(|r| r.bytes_in).sum::<u64>(), batch.sent);
        assert_eq!(recs.iter().map(|r| r.bytes_out).sum::<u64>(), batch.received());
        for (i, (rec, (id, name))) in recs.iter().zip([("\"b1\"", "lookup"), ("\"b2\"", "store")]).enumerate() {
            assert_eq!(rec.batch_index, Some(i as u32));
            assert_eq!(rec.status, Some(200));
            assert_eq!(
                rec.upstream.as_deref(),
                Some(format!("{}/json", self.stub.base).as_str())
            );
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
        let seen = self.stub.seen().await;
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].headers["authorization"], "Bearer upstream-secret-1");
    }

    /// Neither the callers' tokens (nor their signatures) nor the upstream
    /// credential reached the trail.
    fn check_no_secrets(&self) {
        let raw = trail_lines(&self.gw.audit_dir()).join("\n");
        for secret in [&self.alice, &self.bob, "upstream-secret-1"] {
            assert!(!raw.contains(secret), "a secret reached the audit trail");
        }
        for t in [&self.alice, &self.bob] {
            assert!(
                !raw.contains(t.rsplit('.').next().unwrap()),
                "a token signature reached the trail"
            );
        }
    }
}

/// A modern call of `echo` with a W3C `traceparent`.
async fn traced(url: String, token: &str, body: String) -> Exchange {
    let req = http()
        .post(url)
        .headers(modern_headers("tools/call", Some("echo")))
        .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .bearer_auth(token);
    Exchange::run(req, body).await
}

/// A legacy batch of two calls, `lookup` (id "b1") and `store` (id "b2").
async fn legacy_batch(url: String, token: &str) -> Exchange {
    let body = json!([
        {"jsonrpc": "2.0", "id": "b1", "method": "tools/call", "params": {"name": "lookup", "arguments": {"q": "x"}}},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/call", "params": {"name": "store", "arguments": {"v": 1}}},
    ]);
    let req = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-03-26")
        .bearer_auth(token);
    Exchange::run(req, body.to_string()).await
}

#[tokio::test]
async fn every_request_leaves_a_record_that_matches_what_the_client_saw() {
    let traffic = Traffic::send().await;
    traffic.check_answers_and_record_count();
    traffic.check_listed_and_allowed();
    traffic.check_refused();
    traffic.check_upstream_failure();
    traffic.check_legacy_batch().await;
    traffic.check_no_secrets();
}
