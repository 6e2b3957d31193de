use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prometheus::proto::MetricType;
use tollgate_core::{
    Answer, CallElement, CallObserver, CallSummary, Era, ErrorKind, Hidden, McpMethod, PolicyVerdict, Principal,
    PrincipalKind, Stage,
};

use super::*;

fn principal(team: Option<&str>) -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://sso.example.com".into(),
        subject: "alice".into(),
        client_id: None,
        token_id: None,
        audience: vec![],
        groups: vec![],
        team: team.map(str::to_owned),
        cost_center: None,
        scopes: vec![],
        expires_at: 2_000_000_000,
        kind: PrincipalKind::User,
    })
}

fn element(method: &str, name: Option<&str>) -> CallElement {
    CallElement {
        jsonrpc_id: Some("1".into()),
        method: method.into(),
        family: McpMethod::from_name(method),
        name: name.map(Into::into),
        policy: None,
        definition: None,
        catalog: None,
        rpc_error: None,
    }
}

/// A complete, allowed `tools/call` of a tool the catalog knows.
fn tools_call() -> CallSummary {
    let mut e = element("tools/call", Some("create_issue"));
    e.definition = Some(Arc::from("sha256:3b1f"));
    CallSummary {
        principal: Some(principal(Some("payments"))),
        era: Some(Era::Modern),
        protocol_version: Some("2026-07-28"),
        elements: vec![e],
        forwarded: true,
        bytes_in: 300,
        answer: Answer {
            status: 200,
            bytes_out: 4000,
            tokens: 1143,
            ttfb: Some(Duration::from_millis(2)),
            duration: Duration::from_millis(3),
            ..Answer::default()
        },
        ..CallSummary::new("req-1", "github", SystemTime::UNIX_EPOCH, McpMethod::ToolsCall)
    }
}

fn metrics() -> (Registry, CallMetrics) {
    let registry = Registry::new();
    let m = CallMetrics::register(&registry).unwrap();
    (registry, m)
}

/// The value of a counter, or the sample count of a histogram, with
/// exactly these labels; `None` when there is no such series.
fn value(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let family = registry.gather().into_iter().find(|f| f.name() == name)?;
    let metric = family.get_metric().iter().find(|m| {
        m.get_label().len() == labels.len()
            && labels
                .iter()
                .all(|(k, v)| m.get_label().iter().any(|l| l.name() == *k && l.value() == *v))
    })?;
    match family.get_field_type() {
        MetricType::COUNTER => Some(metric.get_counter().get_value()),
        MetricType::HISTOGRAM => Some(metric.get_histogram().get_sample_count() as f64),
        other => panic!("{name}: unexpected type {other:?}"),
    }
}

fn series(registry: &Registry, name: &str) -> usize {
    let families = registry.gather();
    families
        .iter()
        .find(|f| f.name() == name)
        .map_or(0, |f| f.get_metric().len())
}

const OP: &str = "mcp_server_operation_duration_seconds";

fn op(route: &str, method: &str, tool: &str, outcome: &str, team: &str) -> [(&'static str, String); 5] {
    [
        ("route", route.into()),
        ("mcp_method_name", method.into()),
        ("gen_ai_tool_name", tool.into()),
        ("outcome", outcome.into()),
        ("team", team.into()),
    ]
}

fn op_count(registry: &Registry, labels: &[(&'static str, String); 5]) -> Option<f64> {
    let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    value(registry, OP, &labels)
}

#[test]
fn a_tools_call_is_timed_counted_and_measured() {
    let (registry, m) = metrics();
    let s = tools_call();
    m.observe(&s);
    m.observe(&s);
    let ok = op("github", "tools/call", "create_issue", "ok", "payments");
    assert_eq!(op_count(&registry, &ok), Some(2.0));
    let ttfb = [("route", "github"), ("method", "tools/call")];
    assert_eq!(
        value(&registry, "tollgate_time_to_first_byte_seconds", &ttfb),
        Some(2.0)
    );
    let traffic = [("route", "github"), ("method", "tools/call"), ("team", "payments")];
    assert_eq!(value(&registry, "tollgate_request_bytes_total", &traffic), Some(600.0));
    assert_eq!(
        value(&registry, "tollgate_response_bytes_total", &traffic),
        Some(8000.0)
    );
    let families = registry.gather();
    let h = families.iter().find(|f| f.name() == OP).unwrap().get_metric()[0].get_histogram();
    assert!((h.get_sample_sum() - 0.006).abs() < 1e-9, "{}", h.get_sample_sum());
    let bounds: Vec<f64> = h.get_bucket().iter().map(|b| b.upper_bound()).collect();
    assert_eq!(bounds, BUCKETS);
    for name in [
        "tollgate_policy_denials_total",
        "tollgate_policy_hidden_entries_total",
        "tollgate_upstream_errors_total",
    ] {
        assert_eq!(series(&registry, name), 0, "{name}");
    }
}

#[test]
fn tool_labels_are_bounded_by_the_catalog() {
    let (registry, m) = metrics();
    let mut unknown = tools_call();
    unknown.elements[0].definition = None;
    unknown.elements[0].name = Some("rm_rf".into());
    m.observe(&unknown);
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "other", "ok", "payments")),
        Some(1.0)
    );
    let mut list = tools_call();
    list.family = McpMethod::ToolsList;
    list.elements = vec![element("tools/list", None)];
    list.answer.ttfb = None;
    m.observe(&list);
    assert_eq!(
        op_count(&registry, &op("github", "tools/list", "", "ok", "payments")),
        Some(1.0)
    );
    // No time to first byte, no series for it.
    let ttfb = [("route", "github"), ("method", "tools/list")];
    assert_eq!(value(&registry, "tollgate_time_to_first_byte_seconds", &ttfb), None);
}

#[test]
fn teams_are_bounded() {
    let (registry, m) = metrics();
    let mut s = tools_call();
    s.principal = None;
    m.observe(&s);
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "create_issue", "ok", "none")),
        Some(1.0)
    );
    for i in 0..=MAX_TEAMS {
        s.principal = Some(principal(Some(&format!("team-{i}"))));
        m.observe(&s);
    }
    let last = format!("team-{}", MAX_TEAMS - 1);
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "create_issue", "ok", &last)),
        Some(1.0)
    );
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "create_issue", "ok", "other")),
        Some(1.0)
    );
    // A team seen before the bound keeps its label.
    s.principal = Some(principal(Some("team-0")));
    m.observe(&s);
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "create_issue", "ok", "team-0")),
        Some(2.0)
    );
    assert_eq!(series(&registry, OP), MAX_TEAMS + 2);
}

fn verdict(allowed: bool, enforced: bool, reason: &'static str) -> PolicyVerdict {
    PolicyVerdict {
        allowed,
        enforced,
        reason,
        policies: Arc::from([Arc::<str>::from("p1")]),
    }
}

#[test]
fn denials_are_counted_per_element_with_reason_and_mode() {
    let (registry, m) = metrics();
    let mut s = tools_call();
    s.elements[0].policy = Some(verdict(false, true, "deny_missing_scope"));
    s.answer = Answer {
        status: 403,
        duration: Duration::from_micros(300),
        ..Answer::default()
    };
    m.observe(&s);
    assert_eq!(
        op_count(
            &registry,
            &op("github", "tools/call", "create_issue", "denied", "payments")
        ),
        Some(1.0)
    );
    let denial = [
        ("route", "github"),
        ("reason", "deny_missing_scope"),
        ("mode", "enforce"),
    ];
    assert_eq!(value(&registry, "tollgate_policy_denials_total", &denial), Some(1.0));
    // Observe mode: counted as a denial, but the call went ahead.
    s.elements[0].policy = Some(verdict(false, false, "deny"));
    s.answer.status = 200;
    m.observe(&s);
    let observed = [("route", "github"), ("reason", "deny"), ("mode", "observe")];
    assert_eq!(value(&registry, "tollgate_policy_denials_total", &observed), Some(1.0));
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "create_issue", "ok", "payments")),
        Some(1.0)
    );
    // Allowed: no denial.
    s.elements[0].policy = Some(verdict(true, true, "allow"));
    m.observe(&s);
    assert_eq!(series(&registry, "tollgate_policy_denials_total"), 2);
}

#[test]
fn a_batch_counts_each_element_and_its_bytes_once() {
    let (registry, m) = metrics();
    let mut s = tools_call();
    let mut failed = s.elements[0].clone();
    failed.jsonrpc_id = Some("2".into());
    failed.rpc_error = Some(-32602);
    s.elements.push(failed);
    s.elements.push(element("ping", None));
    m.observe(&s);
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "create_issue", "ok", "payments")),
        Some(1.0)
    );
    assert_eq!(
        op_count(
            &registry,
            &op("github", "tools/call", "create_issue", "error", "payments")
        ),
        Some(1.0)
    );
    assert_eq!(
        op_count(&registry, &op("github", "ping", "", "ok", "payments")),
        Some(1.0)
    );
    let traffic = [("route", "github"), ("method", "tools/call"), ("team", "payments")];
    assert_eq!(value(&registry, "tollgate_request_bytes_total", &traffic), Some(300.0));
}

#[test]
fn a_request_without_elements_is_one_operation_of_its_family() {
    let (registry, m) = metrics();
    let mut s = tools_call();
    s.elements.clear();
    s.family = McpMethod::Other;
    s.principal = None;
    s.forwarded = false;
    s.answer = Answer {
        status: 401,
        error: Some(ErrorKind::Unauthenticated),
        bytes_out: 120,
        duration: Duration::from_micros(50),
        ..Answer::default()
    };
    m.observe(&s);
    assert_eq!(
        op_count(&registry, &op("github", "other", "", "error", "none")),
        Some(1.0)
    );
    // A POST of unknown family that was a tools/call would be `other`.
    s.family = McpMethod::ToolsCall;
    m.observe(&s);
    assert_eq!(
        op_count(&registry, &op("github", "tools/call", "other", "error", "none")),
        Some(1.0)
    );
}

#[test]
fn upstream_failures_and_hidden_entries_are_counted() {
    let (registry, m) = metrics();
    let mut s = tools_call();
    for (error, kind) in [
        (ErrorKind::UpstreamUnavailable, "unavailable"),
        (ErrorKind::UpstreamTimeout, "timeout"),
    ] {
        s.answer.error = Some(error);
        s.answer.status = 502;
        m.observe(&s);
        let labels = [("route", "github"), ("kind", kind)];
        assert_eq!(value(&registry, "tollgate_upstream_errors_total", &labels), Some(1.0));
    }
    s.answer.error = Some(ErrorKind::PolicyDenied);
    m.observe(&s);
    assert_eq!(series(&registry, "tollgate_upstream_errors_total"), 2);

    let mut list = tools_call();
    list.elements = vec![element("tools/list", None)];
    for (entries, enforced) in [(3, true), (2, false), (0, true)] {
        list.hidden = Some(Hidden { entries, enforced });
        m.observe(&list);
    }
    let enforced = [("route", "github"), ("mode", "enforce")];
    let observed = [("route", "github"), ("mode", "observe")];
    assert_eq!(
        value(&registry, "tollgate_policy_hidden_entries_total", &enforced),
        Some(3.0)
    );
    assert_eq!(
        value(&registry, "tollgate_policy_hidden_entries_total", &observed),
        Some(2.0)
    );
}

#[test]
fn forwarding_summaries_are_not_calls() {
    let (registry, m) = metrics();
    let mut s = tools_call();
    s.stage = Stage::Forwarding;
    s.answer = Answer::default();
    m.observe(&s);
    assert!(registry.gather().iter().all(|f| f.get_metric().is_empty()));
}

#[test]
fn every_family_is_registered_once_and_shows_in_debug() {
    let (registry, m) = metrics();
    assert!(CallMetrics::register(&registry).is_err(), "names are already taken");
    let mut s = tools_call();
    s.elements[0].policy = Some(verdict(false, false, "deny"));
    s.answer.error = Some(ErrorKind::UpstreamTimeout);
    s.hidden = Some(Hidden {
        entries: 1,
        enforced: true,
    });
    m.observe(&s);
    let families = registry.gather();
    assert_eq!(families.len(), 7, "one family per metric, each with a sample");
    let debug = format!("{m:?}");
    assert_eq!(debug.matches("MetricVec").count(), 7, "{debug}");
}
