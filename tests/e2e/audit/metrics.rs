//! The call metrics, scraped and compared with the traffic sent.

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, demo_gateway, metric, modern, scrape_until, token, tool, try_metric};
use tollgate_e2e::children::free_port;
use tollgate_e2e::{Demo, TestIssuer, modern_body};

/// The `route` and `method` labels of the demo route's tools/call series.
const DEMO_CALL: [(&str, &str); 2] = [("route", "demo"), ("method", "tools/call")];

/// The metrics test's traffic: a list, two echoes and a denial on the demo
/// route, a call to a closed port; and the metrics once all of it counted.
struct Counted {
    list: Exchange,
    echo1: Exchange,
    echo2: Exchange,
    denied: Exchange,
    /// The Prometheus text scraped.
    text: String,
}

impl Counted {
    /// Send the traffic and scrape until the metrics have counted it.
    async fn send() -> Counted {
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
            let at_least =
                |name: &str, labels: &[(&str, &str)], n: f64| try_metric(t, name, labels).is_some_and(|v| v >= n);
            at_least("tollgate_audit_records_total", &[("kind", "written")], 5.0)
                && at_least("tollgate_requests_total", &[], 5.0)
                && at_least("tollgate_audit_write_seconds_count", &[("stage", "sync")], 1.0)
        })
        .await;
        Counted {
            list,
            echo1,
            echo2,
            denied,
            text,
        }
    }

    /// The sum of the samples of `name` with all of `labels`.
    fn m(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric(&self.text, name, labels)
    }

    /// Requests by route, method and status.
    fn check_requests(&self) {
        assert_eq!(self.m("tollgate_requests_total", &[("route", "demo")]), 4.0);
        assert_eq!(
            self.m(
                "tollgate_requests_total",
                &[DEMO_CALL[0], DEMO_CALL[1], ("status", "200")]
            ),
            3.0
        );
        assert_eq!(
            self.m(
                "tollgate_requests_total",
                &[("method", "tools/list"), ("status", "200")]
            ),
            1.0
        );
        let down_labels = [("route", "down"), ("method", "tools/call"), ("status", "502")];
        assert_eq!(self.m("tollgate_requests_total", &down_labels), 1.0);
    }

    /// MCP operations by method, tool, outcome and team.
    fn check_operations(&self) {
        let op = |method: &str, tool: &str, outcome: &str, team: &str| {
            let labels = [
                ("route", "demo"),
                ("mcp_method_name", method),
                ("gen_ai_tool_name", tool),
                ("outcome", outcome),
                ("team", team),
            ];
            self.m("mcp_server_operation_duration_seconds_count", &labels)
        };
        assert_eq!(op("tools/list", "", "ok", "payments"), 1.0);
        assert_eq!(op("tools/call", "echo", "ok", "payments"), 2.0);
        assert_eq!(op("tools/call", "delete_item", "denied", "search"), 1.0);
        assert_eq!(self.m("mcp_server_operation_duration_seconds_count", &[]), 5.0);
        let down_op = [
            ("route", "down"),
            ("gen_ai_tool_name", "other"),
            ("outcome", "error"),
            ("team", "payments"),
        ];
        assert_eq!(
            self.m("mcp_server_operation_duration_seconds_count", &down_op),
            1.0,
            "unlisted tool: other"
        );
    }

    /// The upstream error, and a first byte timed only for calls forwarded
    /// to an upstream that answered.
    fn check_upstream(&self) {
        let errors = [("route", "down"), ("kind", "unavailable")];
        assert_eq!(self.m("tollgate_upstream_errors_total", &errors), 1.0);
        assert_eq!(self.m("tollgate_upstream_errors_total", &[]), 1.0);
        let ttfb = "tollgate_time_to_first_byte_seconds_count";
        assert_eq!(self.m(ttfb, &DEMO_CALL), 2.0, "the denied call was not forwarded");
        assert_eq!(self.m(ttfb, &[("route", "demo"), ("method", "tools/list")]), 1.0);
        assert_eq!(
            try_metric(&self.text, ttfb, &[("route", "down")]),
            None,
            "no upstream byte arrived: no first-byte series"
        );
    }

    /// Bytes in and out per team, exactly what the client sent and received.
    fn check_bytes(&self) {
        for (team, calls) in [
            ("payments", vec![&self.echo1, &self.echo2]),
            ("search", vec![&self.denied]),
        ] {
            let labels = [DEMO_CALL[0], DEMO_CALL[1], ("team", team)];
            let sent: u64 = calls.iter().map(|e| e.sent).sum();
            let received: u64 = calls.iter().map(|e| e.received()).sum();
            assert_eq!(self.m("tollgate_request_bytes_total", &labels), sent as f64, "{team}");
            assert_eq!(
                self.m("tollgate_response_bytes_total", &labels),
                received as f64,
                "{team}"
            );
        }
        let list_labels = [("route", "demo"), ("method", "tools/list"), ("team", "payments")];
        assert_eq!(
            self.m("tollgate_request_bytes_total", &list_labels),
            self.list.sent as f64
        );
        assert_eq!(
            self.m("tollgate_response_bytes_total", &list_labels),
            self.list.received() as f64
        );
    }

    /// The one denial, and every record written, none dropped.
    fn check_denials_and_audit(&self) {
        let denial = [("route", "demo"), ("reason", "deny"), ("mode", "enforce")];
        assert_eq!(self.m("tollgate_policy_denials_total", &denial), 1.0);
        assert_eq!(self.m("tollgate_policy_denials_total", &[]), 1.0);
        assert_eq!(self.m("tollgate_audit_records_total", &[("kind", "written")]), 5.0);
        assert_eq!(self.m("tollgate_audit_records_total", &[("kind", "dropped")]), 0.0);
        assert_eq!(self.m("tollgate_audit_queue_depth", &[]), 0.0);
        assert!(self.m("tollgate_audit_write_seconds_count", &[("stage", "sync")]) >= 1.0);
        assert!(self.m("tollgate_audit_write_seconds_count", &[("stage", "record")]) >= 1.0);
    }
}

#[tokio::test]
async fn call_metrics_count_exactly_the_traffic_sent() {
    let counted = Counted::send().await;
    counted.check_requests();
    counted.check_operations();
    counted.check_upstream();
    counted.check_bytes();
    counted.check_denials_and_audit();
}
