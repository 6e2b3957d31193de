//! The progress bars of the long passes over the trail are drawn only on a
//! terminal: run with stderr piped (as in scripts, tests and CI), `audit
//! index`, `audit verify`, and the index catch-up of `audit query` and
//! `usage` write nothing to stderr, on a trail large enough to take longer
//! than the bar's delay.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

#[allow(dead_code, reason = "this binary uses part of the shared trail helpers")]
mod audit_trail;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use audit_trail::{CALLS, path, record, stderr, stdout, tollgate};
use tollgate_audit::{AuditSink, Durability, Recorded, SinkSettings};

/// Write `n` calls (the shared ones, over and over) in files of 4 MiB.
fn big_trail(dir: &Path, n: usize) {
    let settings = SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "audit".into(),
        durability: Durability::Batch,
        sync_interval: Duration::from_millis(5),
        sync_records: 4096,
        queue_capacity: 1 << 16,
        rotate_bytes: 4 << 20,
        rotate_interval: Duration::from_secs(3600),
        otlp: None,
        observer: None,
    };
    let (handle, worker) = AuditSink::start(settings).unwrap();
    let now = SystemTime::now();
    for i in 0..n {
        while handle.queue_depth() > 1 << 15 {
            std::thread::sleep(Duration::from_micros(500));
        }
        let c = i % CALLS.len();
        assert_eq!(handle.record(record(c, &CALLS[c], now)), Recorded::Queued);
    }
    worker.close_blocking().unwrap();
}

#[test]
fn long_passes_write_nothing_to_a_piped_stderr() {
    let dir = tempfile::tempdir().unwrap();
    big_trail(dir.path(), 40_000);
    let d = path(dir.path());
    let runs: [&[&str]; 4] = [
        &["audit", "index", d],
        &["audit", "index", d, "--rebuild"],
        &["audit", "verify", d],
        &["usage", d, "--by", "team"],
    ];
    for args in runs {
        let started = Instant::now();
        let out = tollgate(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?} took {:?}", started.elapsed());
        assert!(!stdout(&out).is_empty(), "{args:?}");
    }
    // A catch-up of the index by `audit query`: a new file to index.
    big_trail(dir.path(), 20_000);
    let out = tollgate(&["audit", "query", d, "--team", "payments", "--limit", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}
