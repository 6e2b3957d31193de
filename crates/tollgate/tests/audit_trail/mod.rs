//! The trail the `audit_cli` tests run the binary on: a dozen calls with
//! different callers, teams, servers, tools, decisions, sizes and times,
//! written by the real audit sink; and helpers to run the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use Outcome::{Allow, Deny, NotEvaluated, ObserveDeny};
use tollgate_audit::{AuditSink, CallRecord, Decision, Durability, Outcome, Phase, PolicyMode, Recorded, SinkSettings};
use tollgate_core::{Principal, PrincipalKind};

/// One call written to the trail; `req-{index}` is its request id.
pub(crate) struct Call {
    pub(crate) who: Option<&'static str>,
    pub(crate) team: Option<&'static str>,
    pub(crate) server: &'static str,
    /// `None`: a `tools/list` (catalog) call.
    pub(crate) tool: Option<&'static str>,
    pub(crate) decision: Outcome,
    pub(crate) status: u16,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) hours_ago: u64,
}

/// Oldest first, as the gateway would write them. `req-11` (a service) is
/// also written as a strict-mode `forwarding` record just before it. The
/// newest is at the trail's `now`, so that a day-long budget period holds
/// spend at any hour of the day.
#[rustfmt::skip]
pub(crate) const CALLS: [Call; 12] = [
    Call { who: Some("alice"),  team: Some("payments"), server: "github", tool: Some("create_issue"), decision: Allow,        status: 200, bytes_in: 300, bytes_out: 4000, hours_ago: 252 },
    Call { who: Some("alice"),  team: Some("payments"), server: "github", tool: Some("list_issues"),  decision: Allow,        status: 200, bytes_in: 120, bytes_out: 9000, hours_ago: 228 },
    Call { who: Some("bob"),    team: Some("payments"), server: "github", tool: Some("delete_repo"),  decision: Deny,         status: 403, bytes_in: 90,  bytes_out: 150,  hours_ago: 192 },
    Call { who: Some("carol"),  team: Some("search"),   server: "jira",   tool: Some("create_issue"), decision: Allow,        status: 200, bytes_in: 500, bytes_out: 2000, hours_ago: 144 },
    Call { who: Some("carol"),  team: Some("search"),   server: "jira",   tool: None,                 decision: Allow,        status: 200, bytes_in: 60,  bytes_out: 7000, hours_ago: 120 },
    Call { who: Some("dave"),   team: Some("platform"), server: "jira",   tool: Some("search"),       decision: Deny,         status: 403, bytes_in: 80,  bytes_out: 150,  hours_ago: 96 },
    Call { who: Some("dave"),   team: Some("platform"), server: "github", tool: Some("list_issues"),  decision: ObserveDeny,  status: 200, bytes_in: 110, bytes_out: 6000, hours_ago: 72 },
    Call { who: None,           team: None,             server: "docs",   tool: Some("search"),       decision: NotEvaluated, status: 401, bytes_in: 70,  bytes_out: 200,  hours_ago: 48 },
    Call { who: Some("erin"),   team: None,             server: "docs",   tool: Some("search"),       decision: Allow,        status: 200, bytes_in: 150, bytes_out: 3000, hours_ago: 30 },
    Call { who: Some("bob"),    team: Some("payments"), server: "github", tool: Some("create_issue"), decision: Allow,        status: 502, bytes_in: 310, bytes_out: 100,  hours_ago: 20 },
    Call { who: Some("carol"),  team: Some("search"),   server: "jira",   tool: Some("search"),       decision: Allow,        status: 200, bytes_in: 140, bytes_out: 5000, hours_ago: 10 },
    Call { who: Some("ci-bot"), team: Some("platform"), server: "github", tool: Some("list_issues"),  decision: Allow,        status: 200, bytes_in: 100, bytes_out: 8000, hours_ago: 0 },
];

/// Request ids of the calls at these indexes.
pub(crate) fn ids(indexes: &[usize]) -> Vec<String> {
    indexes.iter().map(|i| format!("req-{i}")).collect()
}

/// The ids of the policies that decided a call: none when not evaluated or
/// for callers outside payments.
pub(crate) fn policies(c: &Call) -> &'static [&'static str] {
    match (c.decision, c.team) {
        (Allow, Some("payments")) => &["payments-tools", "default-read"],
        (Deny | ObserveDeny, _) => &["forbid-destructive"],
        _ => &[],
    }
}

pub(crate) fn tokens(c: &Call) -> u64 {
    c.bytes_out / 4
}

pub(crate) fn duration_us(i: usize) -> u64 {
    (i as u64 + 1) * 1000
}

pub(crate) fn principal(c: &Call) -> Option<Arc<Principal>> {
    let subject = c.who?;
    Some(Arc::new(Principal {
        issuer: "https://sso.example.com".into(),
        subject: subject.into(),
        client_id: Some("claude-desktop".into()),
        token_id: Some(format!("jti-{subject}")),
        audience: vec!["https://gw.example.com/mcp".into()],
        groups: vec![],
        team: c.team.map(str::to_owned),
        cost_center: c.team.map(|t| format!("cc-{t}")),
        scopes: vec![],
        expires_at: 2_000_000_000,
        kind: if subject == "ci-bot" {
            PrincipalKind::Service
        } else {
            PrincipalKind::User
        },
    }))
}

pub(crate) fn record(i: usize, c: &Call, now: SystemTime) -> CallRecord {
    let time = now - Duration::from_secs(c.hours_ago * 3600);
    let mut r = CallRecord::new(time, format!("req-{i}"), Arc::from(c.server));
    r.trace_id = Some(format!("{:032x}", i / 3 + 1));
    r.principal = principal(c);
    r.method = Some(if c.tool.is_some() { "tools/call" } else { "tools/list" }.into());
    r.name = c.tool.map(str::to_owned);
    r.catalog = c.tool.is_none();
    r.decision = Decision {
        outcome: c.decision,
        mode: if c.decision == ObserveDeny {
            PolicyMode::Observe
        } else {
            PolicyMode::Enforce
        },
        policies: policies(c).iter().map(|p| Arc::from(*p)).collect(),
        reason: None,
    };
    r.status = Some(c.status);
    r.rpc_error = (c.who == Some("erin")).then_some(-32602);
    // Refused by the gateway: budgets do not count these.
    r.error = (c.decision == Deny).then_some("policy_denied".into());
    r.bytes_in = c.bytes_in;
    r.bytes_out = c.bytes_out;
    r.tokens = tokens(c);
    r.duration_us = duration_us(i);
    r
}

/// Write the calls with the sink, close it (sealed trail); the trail's file.
pub(crate) fn write_trail(dir: &Path) -> PathBuf {
    let settings = SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "audit".into(),
        durability: Durability::Batch,
        sync_interval: Duration::from_millis(5),
        sync_records: 1000,
        queue_capacity: 1024,
        rotate_bytes: 1 << 30,
        rotate_interval: Duration::from_secs(3600),
        otlp: None,
        observer: None,
    };
    let (handle, worker) = AuditSink::start(settings).unwrap();
    let now = SystemTime::now();
    for (i, c) in CALLS.iter().enumerate() {
        let rec = record(i, c, now);
        if i == 11 {
            let mut forwarding = CallRecord::new(rec.time, rec.request_id.clone(), rec.route.clone());
            forwarding.phase = Phase::Forwarding;
            forwarding.principal = rec.principal.clone();
            forwarding.method = rec.method.clone();
            forwarding.name = rec.name.clone();
            forwarding.decision = rec.decision.clone();
            assert_eq!(handle.record(forwarding), Recorded::Queued);
        }
        assert_eq!(handle.record(rec), Recorded::Queued);
    }
    worker.close_blocking().unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// A trail in a fresh directory: (directory, its file).
pub(crate) fn trail() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = write_trail(dir.path());
    (dir, file)
}

pub(crate) fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub(crate) fn write_lines(file: &Path, lines: &[String]) {
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
}

pub(crate) fn tollgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .output()
        .unwrap()
}

pub(crate) fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}
