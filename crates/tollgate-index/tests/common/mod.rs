//! Generated audit traffic, written through the real audit sink: shared by
//! the index tests and the index benchmark.

#![allow(dead_code, unreachable_pub, reason = "each target uses a subset")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tollgate_audit::{AuditSink, CallRecord, Decision, Durability, Filter, Outcome, Phase, PolicyMode, SinkSettings};
use tollgate_core::{Era, Principal, PrincipalKind};

/// 2026-09-01T00:00:00Z.
pub const START: u64 = 1_788_220_800;

/// A deterministic generator (64-bit LCG): the same records every run.
pub struct Traffic {
    state: u64,
    principals: Vec<Arc<Principal>>,
    spacing: Duration,
    n: u64,
}

impl Traffic {
    /// `subjects` users in 20 teams and 8 cost centres, one call every
    /// `spacing` from [`START`].
    pub fn new(subjects: usize, spacing: Duration) -> Traffic {
        let principals = (0..subjects)
            .map(|i| {
                Arc::new(Principal {
                    issuer: "https://sso.example.com".into(),
                    subject: format!("user{i:05}@example.com"),
                    client_id: Some("claude-desktop".into()),
                    token_id: Some(format!("jti-{i}")),
                    audience: vec!["https://gw.example.com/mcp".into()],
                    groups: vec!["dev".into()],
                    team: Some(format!("team{:02}", i % 20)),
                    cost_center: Some(format!("cc{}", i % 8)),
                    scopes: vec!["mcp:tools".into()],
                    expires_at: 2_000_000_000,
                    kind: PrincipalKind::User,
                })
            })
            .collect();
        Traffic {
            state: 0x9E37_79B9_7F4A_7C15,
            principals,
            spacing,
            n: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.state >> 33
    }
}

impl Iterator for Traffic {
    type Item = CallRecord;

    fn next(&mut self) -> Option<CallRecord> {
        let i = self.n;
        self.n += 1;
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(START) + self.spacing * u32::try_from(i).ok()?;
        let r = self.next_u64();
        let route = format!("server{:02}", r % 20);
        let mut rec = CallRecord::new(time, format!("req-{i}"), Arc::from(route.as_str()));
        if !r.is_multiple_of(50) {
            let who = (self.next_u64() as usize) % self.principals.len();
            rec.principal = Some(self.principals[who].clone());
        }
        rec.trace_id = Some(format!("{:032x}", i / 3));
        rec.era = Some(Era::Modern);
        rec.protocol_version = Some("2026-07-28".into());
        rec.upstream = Some(Arc::from(format!("https://{route}.example.com/mcp").as_str()));
        if r.is_multiple_of(10) {
            rec.method = Some("tools/list".into());
            rec.catalog = true;
            rec.tokens = 4000 + r % 1000;
        } else {
            rec.method = Some("tools/call".into());
            rec.name = Some(format!("tool{:03}", self.next_u64() % 200));
            rec.tokens = 50 + r % 2000;
        }
        let denied = r.is_multiple_of(23);
        rec.decision = Decision {
            outcome: if denied { Outcome::Deny } else { Outcome::Allow },
            mode: PolicyMode::Enforce,
            policies: vec![Arc::from(if denied { "deny-writes" } else { "allow-team" })],
            reason: None,
        };
        rec.status = Some(if denied {
            403
        } else if r.is_multiple_of(97) {
            502
        } else {
            200
        });
        rec.phase = if r.is_multiple_of(101) {
            Phase::Forwarding
        } else {
            Phase::Complete
        };
        rec.bytes_in = 200 + r % 300;
        rec.bytes_out = rec.tokens * 7 / 2;
        rec.duration_us = 500 + r % 20_000;
        Some(rec)
    }
}

/// Batch-mode sink settings writing into `dir`.
pub fn settings(dir: &Path) -> SinkSettings {
    SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "audit".into(),
        durability: Durability::Batch,
        sync_interval: Duration::from_millis(50),
        sync_records: 100_000,
        queue_capacity: 1 << 16,
        rotate_bytes: 256 << 20,
        rotate_interval: Duration::from_secs(365 * 86_400),
        otlp: None,
        observer: None,
    }
}

/// Write `records` to the trail in `dir` through the real sink, waiting
/// for room in its queue so none is dropped.
pub fn write(dir: &Path, records: impl IntoIterator<Item = CallRecord>) {
    let (handle, worker) = AuditSink::start(settings(dir)).unwrap();
    for r in records {
        while handle.queue_depth() > (1 << 15) {
            std::thread::sleep(Duration::from_micros(500));
        }
        assert!(matches!(handle.record(r), tollgate_audit::Recorded::Queued));
    }
    worker.close_blocking().unwrap();
}

/// A benchmark's size and scratch directory, from the environment its
/// script sets: `{prefix}_RECORDS` records (default 10 million) under
/// `{prefix}_DIR` (default `$CARGO_TARGET_DIR/{name}`).
#[allow(
    clippy::disallowed_methods,
    reason = "a benchmark's size and place come from its script"
)]
pub fn bench_size(prefix: &str, name: &str) -> (u64, PathBuf) {
    let records = std::env::var(format!("{prefix}_RECORDS"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let root = std::env::var(format!("{prefix}_DIR")).map_or_else(
        |_| {
            let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
            PathBuf::from(target).join(name)
        },
        PathBuf::from,
    );
    (records, root)
}

/// `days` days after [`START`].
pub fn day(days: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(START + days * 86_400)
}

/// The benchmarks' first question, asked of every source the same way:
/// one subject's calls over a month of the generated traffic (days 30 to
/// 60), and that month.
pub fn subject_month() -> ((SystemTime, SystemTime), Filter) {
    let month = (day(30), day(60));
    let filter = Filter {
        subject: Some("user00421@example.com".into()),
        since: Some(month.0),
        until: Some(month.1),
        ..Filter::default()
    };
    (month, filter)
}
