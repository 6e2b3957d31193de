//! Audit cost (request path step 13), PERF.md targets: batch mode ≥ 100k
//! records/s sustained with group commit every 10 ms / 1000 records, and
//! ≤ 3 µs CPU per record on the caller side.
//!
//! - `caller/record`: start a record from the route, fill a realistic
//!   `tools/call` record and queue it, with the writer running on the other
//!   core.
//! - `caller/observe`: what a request pays now: the route's
//!   `AuditObserver` turns the call's summary into that record and queues
//!   it.
//! - `sustained/{disk,tmpfs}`: 100k records queued as fast as possible,
//!   until the last is written and synced (close).
//! - `strict/record_durable`: one strict record end to end (fdatasync).
//!
//! A summary line also reports the caller thread's CPU time per record from
//! `/proc/thread-self/schedstat` (wall time can include preemption by the
//! writer on a 2-core box).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark harness")]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tollgate_audit::{
    AuditHandle, AuditObserver, AuditSink, CaptureSettings, CredentialKind, Decision, Durability, Outcome, PolicyMode,
    Recorded, RouteAudit, RouteAuditSettings, SinkSettings,
};
use tollgate_core::{
    Answer, CallElement, CallObserver, CallSummary, Era, McpMethod, PolicyVerdict, Principal, PrincipalKind,
};

fn settings(dir: &Path, durability: Durability) -> SinkSettings {
    SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "bench".into(),
        durability,
        sync_interval: Duration::from_millis(10),
        sync_records: 1000,
        queue_capacity: 1 << 20,
        rotate_bytes: 256 << 20,
        rotate_interval: Duration::from_secs(3600),
        otlp: None,
        observer: None,
    }
}

/// The `github` route, approved at 1.4.2, nothing captured.
fn route() -> RouteAudit {
    RouteAudit::new(&RouteAuditSettings {
        route: "github".into(),
        upstream: "https://mcp.github.example.com/mcp".into(),
        server_version: Some("1.4.2".into()),
        approved_by: Some("alice".into()),
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

fn principal() -> Arc<Principal> {
    Arc::new(Principal {
        issuer: "https://sso.example.com/realms/acme".into(),
        subject: "f1c2a9d0-5b7e-4c1a-9f4e-2d8b3a6c7e10".into(),
        client_id: Some("claude-desktop".into()),
        token_id: Some("9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4".into()),
        audience: vec!["https://mcp.example.com/mcp/github".into()],
        groups: vec!["dev".into(), "payments-eng".into()],
        team: Some("payments".into()),
        cost_center: Some("CC-4711".into()),
        scopes: vec!["mcp:tools".into()],
        expires_at: 2_000_000_000,
        kind: PrincipalKind::User,
    })
}

/// What the server does per call: start, fill, queue.
fn record_one(handle: &AuditHandle, route: &RouteAudit, who: &Arc<Principal>, policy: &Arc<str>, i: u64) -> Recorded {
    let mut r = route.record(SystemTime::now(), format!("0191b2c3-d4e5-7f60-8a9b-{i:012x}"));
    r.trace_id = Some(format!("{i:032x}"));
    r.principal = Some(who.clone());
    r.era = Some(Era::Modern);
    r.protocol_version = Some("2026-07-28".into());
    r.method = Some("tools/call".into());
    r.name = Some("create_issue".to_owned());
    r.decision = Decision {
        outcome: Outcome::Allow,
        mode: PolicyMode::Enforce,
        policies: vec![policy.clone()],
        reason: None,
    };
    r.credential = CredentialKind::TokenExchange;
    r.status = Some(200);
    r.bytes_in = 412;
    r.bytes_out = 8192;
    r.tokens = 2341;
    r.ttfb_us = Some(850);
    r.duration_us = 1200;
    handle.record(r)
}

/// The summary of the call `record_one` records.
fn summary(who: &Arc<Principal>, policy: &Arc<str>) -> CallSummary {
    CallSummary {
        principal: Some(who.clone()),
        era: Some(Era::Modern),
        protocol_version: Some("2026-07-28"),
        elements: vec![CallElement {
            jsonrpc_id: Some("7".into()),
            method: "tools/call".into(),
            family: McpMethod::ToolsCall,
            name: Some("create_issue".into()),
            policy: Some(PolicyVerdict {
                allowed: true,
                enforced: true,
                reason: "allow",
                policies: Arc::from([policy.clone()]),
            }),
            definition: Some(Arc::from("sha256:3b1f0c")),
            catalog: None,
            rpc_error: None,
        }],
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

/// Time `call` `iters` times in chunks; between chunks (untimed) let the
/// writer drain the queue, so that every timed call takes the queueing
/// path, not the cheaper drop path.
fn drained(handle: &AuditHandle, iters: u64, mut call: impl FnMut()) -> Duration {
    let mut timed = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let chunk = left.min(10_000);
        let start = Instant::now();
        for _ in 0..chunk {
            call();
        }
        timed += start.elapsed();
        left -= chunk;
        while handle.queue_depth() > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    timed
}

fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = text.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    Duration::from_nanos(ns)
}

fn sustained(dir: &Path, n: u64) -> (Duration, Duration, u64) {
    let (route, who, policy) = (route(), principal(), Arc::<str>::from("policy0"));
    let (handle, worker) = AuditSink::start(settings(dir, Durability::Batch)).unwrap();
    let (start, cpu0) = (Instant::now(), thread_cpu());
    for i in 0..n {
        let _ = black_box(record_one(&handle, &route, &who, &policy, i));
    }
    let caller_cpu = thread_cpu() - cpu0;
    worker.close_blocking().unwrap();
    (start.elapsed(), caller_cpu, handle.stats().dropped)
}

fn bench(c: &mut Criterion) {
    let disk = tempfile::tempdir().unwrap();
    let shm = tempfile::tempdir_in("/dev/shm").ok();

    // Summary: caller CPU and sustained rate for 200k records.
    for (name, dir) in [("disk", Some(disk.path())), ("tmpfs", shm.as_ref().map(|d| d.path()))] {
        let Some(dir) = dir else { continue };
        let n = 200_000;
        let (wall, cpu, dropped) = sustained(&dir.join("summary"), n);
        println!(
            "audit summary ({name}): {n} records in {:.3} s = {:.0} records/s sustained; caller CPU {:.2} µs/record; dropped {dropped}",
            wall.as_secs_f64(),
            n as f64 / wall.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / n as f64,
        );
    }

    let (route, who, policy) = (route(), principal(), Arc::<str>::from("policy0"));
    let (handle, worker) = AuditSink::start(settings(&disk.path().join("caller"), Durability::Batch)).unwrap();
    let mut i = 0u64;
    c.bench_function("caller/record", |b| {
        b.iter_custom(|iters| {
            drained(&handle, iters, || {
                i += 1;
                let _ = black_box(record_one(&handle, &route, &who, &policy, i));
            })
        });
    });
    let observer = AuditObserver::new(handle.clone(), route.clone());
    let call = summary(&who, &policy);
    c.bench_function("caller/observe", |b| {
        b.iter_custom(|iters| {
            i += iters;
            drained(&handle, iters, || observer.observe(black_box(&call)))
        });
    });
    worker.close_blocking().unwrap();
    println!("caller/record: dropped {} of {i}", handle.stats().dropped);

    let mut group = c.benchmark_group("sustained");
    group.sample_size(10).throughput(Throughput::Elements(100_000));
    for (name, dir) in [("disk", Some(disk.path())), ("tmpfs", shm.as_ref().map(|d| d.path()))] {
        let Some(dir) = dir else { continue };
        let mut run = 0;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        run += 1;
                        sustained(&dir.join(format!("s{run}")), 100_000).0
                    })
                    .sum()
            });
        });
    }
    group.finish();

    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let (handle, worker) = AuditSink::start(settings(&disk.path().join("strict"), Durability::Strict)).unwrap();
    c.bench_function("strict/record_durable", |b| {
        b.iter(|| {
            let r = route.record(SystemTime::now(), "req");
            rt.block_on(handle.record_durable(r)).unwrap();
        });
    });
    worker.close_blocking().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
