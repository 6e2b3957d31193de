//! Helpers shared by the integration tests: sink settings in a temporary
//! directory and realistic records.

#![allow(dead_code, unreachable_pub, reason = "each test binary uses a subset")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tollgate_audit::{CallRecord, CredentialKind, Decision, Durability, Outcome, PolicyMode, SinkSettings};
use tollgate_core::{Era, Principal, PrincipalKind};

pub fn settings(dir: &Path) -> SinkSettings {
    SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "audit".into(),
        durability: Durability::Batch,
        sync_interval: Duration::from_millis(5),
        sync_records: 1000,
        queue_capacity: 1 << 20,
        rotate_bytes: 1 << 30,
        rotate_interval: Duration::from_secs(3600),
        otlp: None,
        observer: None,
    }
}

pub fn principal(subject: &str, team: &str) -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://sso.example.com".into(),
        subject: subject.into(),
        client_id: Some("claude-desktop".into()),
        token_id: Some(format!("jti-{subject}")),
        audience: vec!["https://gw.example.com/mcp/github".into()],
        groups: vec!["dev".into()],
        team: Some(team.into()),
        cost_center: Some(format!("cc-{team}")),
        scopes: vec!["mcp:tools".into()],
        expires_at: 2_000_000_000,
        kind: PrincipalKind::User,
    })
}

/// A complete `tools/call` record.
pub fn call(i: u64, who: &Arc<Principal>, tool: &str) -> CallRecord {
    let mut r = CallRecord::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + i),
        format!("req-{i}"),
        Arc::from("github"),
    );
    r.upstream = Some(Arc::from("https://mcp.github.example.com/mcp"));
    r.server_version = Some(Arc::from("1.4.2"));
    r.approved_by = Some(Arc::from("alice@example.com"));
    r.trace_id = Some(format!("{:032x}", i / 2));
    r.principal = Some(who.clone());
    r.era = Some(Era::Modern);
    r.protocol_version = Some("2026-07-28".into());
    r.method = Some("tools/call".into());
    r.name = Some(tool.into());
    r.definition_hash = Some(Arc::from("sha256:3b1f"));
    r.decision = Decision {
        outcome: Outcome::Allow,
        mode: PolicyMode::Enforce,
        policies: vec![Arc::from("policy0")],
        reason: None,
    };
    r.credential = CredentialKind::TokenExchange;
    r.status = Some(200);
    r.bytes_in = 300;
    r.bytes_out = 4000;
    r.tokens = 1143;
    r.ttfb_us = Some(900);
    r.duration_us = 1000 + i;
    r
}

pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut f: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    f.sort();
    f
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// Write `n` records with the batch sink and close it (sealed trail).
pub fn write_trail(n: u64, settings: SinkSettings) {
    let (handle, worker) = tollgate_audit::AuditSink::start(settings).unwrap();
    let alice = principal("alice", "payments");
    for i in 0..n {
        assert_eq!(
            handle.record(call(i, &alice, "create_issue")),
            tollgate_audit::Recorded::Queued
        );
    }
    worker.close_blocking().unwrap();
}
