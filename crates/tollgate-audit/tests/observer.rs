//! The audit observer over a real sink: a complete call's records are
//! queued without waiting, a strict-mode call's `forwarding` records are on
//! disk before `before_forwarding` returns, and batch mode (or a disabled
//! trail) writes nothing before forwarding.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{principal, settings};
use tollgate_audit::{
    AuditHandle, AuditObserver, AuditSink, CaptureSettings, CredentialKind, Durability, Filter, Phase, RouteAudit,
    RouteAuditSettings, query,
};
use tollgate_core::{Answer, CallElement, CallObserver, CallSummary, McpMethod, Stage};

/// The `github` route: no credential, nothing captured.
fn route() -> RouteAudit {
    RouteAudit::new(&RouteAuditSettings {
        route: "github".into(),
        upstream: "https://mcp.github.example.com/mcp".into(),
        server_version: None,
        approved_by: None,
        credential: CredentialKind::None,
        capture: CaptureSettings {
            arguments: false,
            results: false,
            max_bytes: 4096,
            redact_keys: Vec::new(),
        },
        bytes_per_token: 3.5,
    })
}

/// A legacy batch of two `tools/call`s.
fn batch(stage: Stage) -> CallSummary {
    let element = |id: &str| CallElement {
        jsonrpc_id: Some(id.into()),
        method: "tools/call".into(),
        family: McpMethod::ToolsCall,
        name: Some("create_issue".into()),
        policy: None,
        definition: None,
        catalog: None,
        rpc_error: None,
    };
    CallSummary {
        stage,
        principal: Some(principal("alice", "payments")),
        elements: vec![element("1"), element("2")],
        forwarded: stage == Stage::Complete,
        bytes_in: 200,
        answer: if stage == Stage::Complete {
            Answer {
                status: 200,
                bytes_out: 700,
                duration: Duration::from_millis(2),
                ..Answer::default()
            }
        } else {
            Answer::default()
        },
        ..CallSummary::new("req-1", "github", SystemTime::now(), McpMethod::ToolsCall)
    }
}

fn phases(dir: &Path) -> Vec<(Phase, Option<u32>)> {
    query(&[dir.to_owned()], Filter::default())
        .unwrap()
        .map(|e| {
            let r = e.unwrap().record;
            (r.phase, r.batch_index)
        })
        .collect()
}

#[tokio::test]
async fn strict_mode_writes_forwarding_records_before_the_complete_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.durability = Durability::Strict;
    let (handle, worker) = AuditSink::start(s).unwrap();
    let observer = AuditObserver::new(handle, route());
    observer.before_forwarding(&batch(Stage::Forwarding)).await.unwrap();
    // Durable already: readable before the writer is closed.
    assert_eq!(
        phases(dir.path()),
        [(Phase::Forwarding, Some(0)), (Phase::Forwarding, Some(1))]
    );
    observer.observe(&batch(Stage::Complete));
    worker.close().await.unwrap();
    assert_eq!(
        phases(dir.path()),
        [
            (Phase::Forwarding, Some(0)),
            (Phase::Forwarding, Some(1)),
            (Phase::Complete, Some(0)),
            (Phase::Complete, Some(1))
        ]
    );
}

#[tokio::test]
async fn batch_mode_writes_only_complete_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = AuditSink::start(settings(dir.path())).unwrap();
    let observer = AuditObserver::new(handle.clone(), route());
    observer.before_forwarding(&batch(Stage::Forwarding)).await.unwrap();
    observer.observe(&batch(Stage::Forwarding));
    observer.observe(&batch(Stage::Complete));
    worker.close().await.unwrap();
    assert_eq!(
        phases(dir.path()),
        [(Phase::Complete, Some(0)), (Phase::Complete, Some(1))]
    );
    let recs: Vec<u64> = query(&[dir.path().to_owned()], Filter::default())
        .unwrap()
        .map(|e| e.unwrap().record.bytes_out)
        .collect();
    assert_eq!(recs, [350, 350]);
}

#[tokio::test]
async fn a_disabled_trail_records_nothing() {
    let observer = AuditObserver::new(AuditHandle::disabled(), route());
    observer.before_forwarding(&batch(Stage::Forwarding)).await.unwrap();
    observer.observe(&batch(Stage::Complete));
    assert_eq!(observer.records(&batch(Stage::Complete)).len(), 2);
}
