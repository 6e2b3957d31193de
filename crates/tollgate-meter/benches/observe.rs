//! What the call metrics cost a request (request path step 13; the whole
//! hot path's target is ≤ 20 µs CPU per request, `PERF.md`).
//!
//! - `observe/tools_call`: [`CallMetrics::observe`] of a typical complete,
//!   allowed one-element `tools/call` summary (known tool, a team, time to
//!   first byte), after the first call created its handles.
//! - `observe/batch_of_3`: a legacy batch of three elements.
//! - `reference/with_label_values`: the same updates made the way the
//!   server made them before the handle caches (one `with_label_values` per
//!   metric, a team set lookup per labelled metric), for comparison.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark harness")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use dashmap::DashSet;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use tollgate_core::{
    Answer, CallElement, CallObserver, CallSummary, Era, McpMethod, PolicyVerdict, Principal, PrincipalKind,
};
use tollgate_meter::{BUCKETS, CallMetrics};

fn principal() -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://sso.example.com/realms/acme".into(),
        subject: "f1c2a9d0-5b7e-4c1a-9f4e-2d8b3a6c7e10".into(),
        client_id: Some("claude-desktop".into()),
        token_id: Some("9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4".into()),
        audience: vec!["https://mcp.example.com/mcp/github".into()],
        groups: vec!["dev".into()],
        team: Some("payments".into()),
        cost_center: Some("CC-4711".into()),
        scopes: vec!["mcp:tools".into()],
        expires_at: 2_000_000_000,
        kind: PrincipalKind::User,
    })
}

fn element(id: u32) -> CallElement {
    CallElement {
        jsonrpc_id: Some(id.to_string().into()),
        method: "tools/call".into(),
        family: McpMethod::ToolsCall,
        name: Some("create_issue".into()),
        policy: Some(PolicyVerdict {
            allowed: true,
            enforced: true,
            reason: "allow",
            policies: Arc::from([Arc::<str>::from("payments-may-file-issues")]),
        }),
        definition: Some(Arc::from("sha256:3b1f0c")),
        catalog: None,
        rpc_error: None,
    }
}

fn summary(elements: u32) -> CallSummary {
    CallSummary {
        principal: Some(principal()),
        era: Some(Era::Modern),
        protocol_version: Some("2026-07-28"),
        elements: (1..=elements).map(element).collect(),
        trace_id: Some(Arc::from("4bf92f3577b34da6a3ce929d0e0e4736")),
        forwarded: true,
        bytes_in: 412,
        answer: Answer {
            status: 200,
            bytes_out: 8192,
            tokens: 2341,
            ttfb: Some(Duration::from_micros(850)),
            duration: Duration::from_micros(1200),
            ..Answer::default()
        },
        ..CallSummary::new(
            "0191b2c3-d4e5-7f60-8a9b-000000000001",
            "github",
            SystemTime::now(),
            McpMethod::ToolsCall,
        )
    }
}

/// The metrics as the server kept them before, updated per call the way it
/// did.
struct Reference {
    operation: HistogramVec,
    ttfb: HistogramVec,
    bytes_in: IntCounterVec,
    bytes_out: IntCounterVec,
    teams: DashSet<String>,
}

impl Reference {
    fn new() -> Reference {
        let h = |name: &str, labels: &[&str]| {
            HistogramVec::new(HistogramOpts::new(name, "h").buckets(BUCKETS.to_vec()), labels).unwrap()
        };
        let c = |name: &str| IntCounterVec::new(Opts::new(name, "c"), &["route", "method", "team"]).unwrap();
        Reference {
            operation: h(
                "op",
                &["route", "mcp_method_name", "gen_ai_tool_name", "outcome", "team"],
            ),
            ttfb: h("ttfb", &["route", "method"]),
            bytes_in: c("bytes_in"),
            bytes_out: c("bytes_out"),
            teams: DashSet::new(),
        }
    }

    fn team<'a>(&self, team: Option<&'a str>) -> &'a str {
        let Some(team) = team else { return "none" };
        if self.teams.contains(team) {
            return team;
        }
        if self.teams.len() < 100 {
            self.teams.insert(team.to_owned());
            return team;
        }
        "other"
    }

    fn observe(&self, s: &CallSummary) {
        let route = &*s.route;
        let family = s.family.as_str();
        let team = s.team();
        let labels = [route, family, self.team(team)];
        self.bytes_in.with_label_values(&labels).inc_by(s.bytes_in);
        self.bytes_out.with_label_values(&labels).inc_by(s.answer.bytes_out);
        if let Some(t) = s.answer.ttfb {
            self.ttfb.with_label_values(&[route, family]).observe(t.as_secs_f64());
        }
        for e in &s.elements {
            let tool = e.name.as_deref().filter(|_| e.definition.is_some()).unwrap_or("other");
            self.operation
                .with_label_values(&[route, e.family.as_str(), tool, s.outcome(Some(e)), self.team(team)])
                .observe(s.answer.duration.as_secs_f64());
        }
    }
}

fn bench(c: &mut Criterion) {
    let registry = Registry::new();
    let metrics = CallMetrics::register(&registry).unwrap();
    let (one, three) = (summary(1), summary(3));
    // Other routes and teams in the caches, as in a running gateway.
    for route in ["jira", "docs", "search", "slack"] {
        let mut other = summary(1);
        other.route = Arc::from(route);
        metrics.observe(&other);
    }
    c.bench_function("observe/tools_call", |b| b.iter(|| metrics.observe(black_box(&one))));
    c.bench_function("observe/batch_of_3", |b| b.iter(|| metrics.observe(black_box(&three))));
    let reference = Reference::new();
    c.bench_function("reference/with_label_values", |b| {
        b.iter(|| reference.observe(black_box(&one)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
