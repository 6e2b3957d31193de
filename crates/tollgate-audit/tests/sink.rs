//! The file sink: strict durability, batch group commit and drops, flush,
//! rotation by age, failure and recovery, throughput.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{call, files, lines, principal, settings};
use tollgate_audit::{AuditError, AuditHandle, AuditSink, Durability, Phase, Recorded, verify};
use tollgate_core::{Classify, ErrorKind};

#[tokio::test]
async fn a_strict_record_is_on_disk_when_the_call_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.durability = Durability::Strict;
    // A long interval: only the strict path can explain a prompt sync.
    s.sync_interval = Duration::from_secs(3600);
    s.sync_records = 1_000_000;
    let commits = Arc::new(AtomicUsize::new(0));
    let seen = commits.clone();
    s.observer = Some(Arc::new(move |_c| {
        seen.fetch_add(1, Ordering::SeqCst);
    }));
    let (handle, worker) = AuditSink::start(s).unwrap();
    assert_eq!(handle.durability(), Durability::Strict);
    let alice = principal("alice", "payments");
    for i in 0..20 {
        let mut rec = call(i, &alice, "create_issue");
        rec.phase = Phase::Forwarding;
        let before = commits.load(Ordering::SeqCst);
        handle.record_durable(rec).await.unwrap();
        // The commit covering it happened before the call returned, and the
        // record can be read back from the file (a new reader, not our buffer).
        assert!(commits.load(Ordering::SeqCst) > before);
        let file = files(dir.path()).pop().unwrap();
        let last = lines(&file).pop().unwrap();
        assert!(last.contains(&format!("\"request_id\":\"req-{i}\"")), "{last}");
        assert!(last.contains("\"phase\":\"forwarding\""));
    }
    // Many concurrent strict callers share group commits.
    let tasks: Vec<_> = (100..300)
        .map(|i| {
            let h = handle.clone();
            let rec = call(i, &alice, "x");
            tokio::spawn(async move { h.record_durable(rec).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert!(handle.stats().commits < 220, "{:?}", handle.stats());
    worker.close().await.unwrap();
    assert_eq!(verify(&[dir.path().to_owned()]).unwrap().records, 220);
}

#[tokio::test]
async fn batch_records_are_committed_within_the_interval_and_flush_waits() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = AuditSink::start(settings(dir.path())).unwrap();
    let alice = principal("alice", "payments");
    for i in 0..10 {
        assert_eq!(handle.record(call(i, &alice, "t")), Recorded::Queued);
    }
    handle.flush().await.unwrap();
    assert_eq!(lines(&files(dir.path())[0]).len(), 11);
    let stats = handle.stats();
    assert_eq!((stats.written, stats.dropped, stats.queue_depth), (10, 0, 0));
    assert!(stats.healthy && stats.commits >= 1);
    worker.close().await.unwrap();
    // After close nothing is accepted.
    assert_eq!(handle.record(call(99, &alice, "t")), Recorded::Dropped);
    assert!(matches!(
        handle.record_durable(call(99, &alice, "t")).await,
        Err(AuditError::Closed)
    ));
}

#[test]
fn a_full_queue_drops_records_counts_them_and_the_trail_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.queue_capacity = 10;
    let (handle, worker) = AuditSink::start(s).unwrap();
    let alice = principal("alice", "payments");
    let mut dropped = 0;
    for i in 0..50_000 {
        if handle.record(call(i, &alice, "t")) == Recorded::Dropped {
            dropped += 1;
        }
    }
    assert!(dropped > 0, "the writer kept up with 50k records in a 10-slot queue");
    assert_eq!(handle.stats().dropped, dropped);
    worker.close_blocking().unwrap();
    let report = verify(&[dir.path().to_owned()]).unwrap();
    assert_eq!(report.dropped, dropped);
    assert_eq!(report.records + dropped, 50_000);
}

#[test]
fn files_rotate_by_age() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.rotate_interval = Duration::from_millis(50);
    let (handle, worker) = AuditSink::start(s).unwrap();
    let alice = principal("alice", "payments");
    for i in 0..3 {
        let _ = handle.record(call(i, &alice, "t"));
        std::thread::sleep(Duration::from_millis(120));
    }
    worker.close_blocking().unwrap();
    assert!(files(dir.path()).len() >= 3, "{:?}", files(dir.path()));
    assert_eq!(verify(&[dir.path().to_owned()]).unwrap().records, 3);
}

#[tokio::test]
async fn strict_mode_fails_closed_while_files_cannot_be_written_then_recovers() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("audit");
    let mut s = settings(&dir);
    s.durability = Durability::Strict;
    s.rotate_bytes = 1; // every record starts a new file
    let (handle, worker) = AuditSink::start(s).unwrap();
    let alice = principal("alice", "payments");
    handle.record_durable(call(0, &alice, "t")).await.unwrap();

    // The directory disappears (a file in its place): no new file can open.
    let moved = base.path().join("moved");
    std::fs::rename(&dir, &moved).unwrap();
    std::fs::write(&dir, b"not a directory").unwrap();
    // The file already open (in the moved directory) may take one more.
    let mut written = 1;
    let mut failure = None;
    for i in 1..4 {
        match handle.record_durable(call(i, &alice, "t")).await {
            Ok(()) => written += 1,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let err = failure.expect("a record could not be written");
    assert_eq!(err.kind(), ErrorKind::Overloaded, "{err}");
    assert!(!handle.is_healthy());

    // It comes back: the next record is written, after a gap line.
    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(&moved, &dir).unwrap();
    handle.record_durable(call(9, &alice, "t")).await.unwrap();
    assert!(handle.is_healthy());
    worker.close().await.unwrap();
    let report = verify(std::slice::from_ref(&dir)).unwrap();
    assert_eq!((report.records, report.dropped), (written + 1, 1));
}

#[test]
fn a_disabled_handle_records_nothing() {
    let h = AuditHandle::disabled();
    let alice = principal("alice", "payments");
    assert_eq!(h.record(call(0, &alice, "t")), Recorded::Disabled);
    assert!(h.is_healthy());
}

#[test]
fn the_setup_fails_loudly_when_the_directory_cannot_be_made() {
    let base = tempfile::tempdir().unwrap();
    let blocker = base.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let err = AuditSink::start(settings(&blocker.join("audit"))).err().unwrap();
    assert!(matches!(err, AuditError::Setup { .. }), "{err}");
}

#[test]
fn batch_mode_takes_a_large_burst_and_chains_every_record() {
    // The rate itself is measured by the criterion bench (`cargo bench -p
    // tollgate-audit --bench sink`, docs/benchmarks.md), not asserted here.
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = AuditSink::start(settings(dir.path())).unwrap();
    let alice = principal("alice", "payments");
    let n = 50_000;
    let recs: Vec<_> = (0..n).map(|i| call(i, &alice, "create_issue")).collect();
    for r in recs {
        assert_eq!(handle.record(r), Recorded::Queued);
    }
    worker.close_blocking().unwrap();
    assert_eq!(verify(&[dir.path().to_owned()]).unwrap().records, n);
}
