//! Audit shipping against a real PostgreSQL, with records written by the
//! real audit sink: every line arrives once, a store outage loses nothing
//! (the files are the buffer), a lost position re-ships without
//! duplicates, a rewritten or truncated file is refused, the usage
//! rows the upgrade computes equal those shipping writes, and the
//! overview's counts agree with usage.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{PostgresServer, migrated};
use tollgate_audit::{AuditHandle, AuditSink, AuditWorker, CallRecord, Durability, Hash, Recorded, SinkSettings};
use tollgate_core::{Principal, PrincipalKind};
use tollgate_limit::Prices;
use tollgate_meter::GroupBy;
use tollgate_store::{ActivityStep, ShipSettings, Shipper, Steps, StoreError, UsageQuestion};

/// The real sink on `dir`, rotating every few KiB so that a trail has
/// several files.
fn sink(dir: &Path) -> (AuditHandle, AuditWorker) {
    AuditSink::start(SinkSettings {
        directory: dir.to_owned(),
        file_prefix: "audit".into(),
        durability: Durability::Batch,
        sync_interval: Duration::from_millis(5),
        sync_records: 1000,
        queue_capacity: 1 << 16,
        rotate_bytes: 16 * 1024,
        rotate_interval: Duration::from_secs(3600),
        otlp: None,
        observer: None,
    })
    .unwrap()
}

/// Write `n` `tools/call` records numbered from `from`, and wait until
/// they are in the files.
async fn write(handle: &AuditHandle, from: u64, n: u64) {
    let who = Arc::new(Principal {
        issuer: "https://sso.example.com".into(),
        subject: "alice".into(),
        client_id: None,
        token_id: None,
        audience: Vec::new(),
        groups: Vec::new(),
        team: Some("payments".into()),
        cost_center: Some("cc-7".into()),
        scopes: Vec::new(),
        expires_at: 2_000_000_000,
        kind: PrincipalKind::User,
    });
    for i in from..from + n {
        let mut r = CallRecord::new(SystemTime::now(), format!("req-{i}"), Arc::from("github"));
        r.principal = Some(who.clone());
        r.method = Some("tools/call".into());
        r.name = Some("create_issue".into());
        r.tokens = 100;
        r.bytes_out = 350;
        r.status = Some(if i % 10 == 9 { 502 } else { 200 });
        r.duration_us = i * 997;
        if i % 4 == 0 {
            r.virtual_server = Some("tools".into());
            r.exposed_name = Some("issue".into());
        }
        assert_eq!(handle.record(r), Recorded::Queued);
    }
    handle.flush().await.unwrap();
}

/// Every complete line of the trail in `dir` as `file:line:hash`, in
/// file and line order: what the store must hold.
fn trail(dir: &Path) -> Vec<String> {
    let files = tollgate_audit::trail_files(&[dir.to_owned()]).unwrap();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for (i, line) in text.split_inclusive('\n').filter(|l| l.ends_with('\n')).enumerate() {
            let hash = Hash::of_line(line.trim_end_matches('\n').as_bytes());
            out.push(format!("{name}:{}:{hash}", i + 1));
        }
    }
    out
}

/// What the store holds for replica `r1`, in the same form.
async fn stored(pg: &PostgresServer) -> Vec<String> {
    let text = pg
        .psql(
            "SELECT file || ':' || line_no || ':' || encode(hash, 'hex') FROM audit_records \
             WHERE replica = 'r1' ORDER BY file, line_no",
        )
        .await;
    text.lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn every_line_arrives_once_across_a_store_outage() {
    let mut pg = PostgresServer::start().await;
    let store = migrated(&pg).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = sink(dir.path());
    let mut shipper = Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()));
    let stats = shipper.stats();

    write(&handle, 0, 200).await;
    let first = shipper.pass().await.unwrap();
    assert!(first.files > 1, "the trail rotated: {first:?}");
    assert_eq!(stored(&pg).await, trail(dir.path()));

    // PostgreSQL goes away; calls keep being recorded in the files.
    pg.stop().await;
    write(&handle, 200, 300).await;
    let e = shipper.pass().await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
    assert!(stats.failing() && stats.failures() == 1);
    assert!(stats.lag(SystemTime::now() + Duration::from_secs(5)) >= Duration::from_secs(5));

    pg.start_again().await;
    write(&handle, 500, 10).await;
    let caught_up = shipper.pass().await.unwrap();
    assert!(caught_up.lines >= 310, "{caught_up:?}");
    worker.close().await.unwrap();
    shipper.pass().await.unwrap();
    let all = trail(dir.path());
    assert_eq!(stored(&pg).await, all, "every line, once, in order");
    assert_eq!(
        (stats.pending_bytes(), stats.lag(SystemTime::now())),
        (0, Duration::ZERO)
    );
    assert!(!stats.failing());
    assert_eq!(stats.lines(), u64::try_from(all.len()).unwrap());

    let calls = pg
        .psql(
            "SELECT count(*) FROM audit_records WHERE kind = 'call' AND subject = 'alice' \
             AND issuer = 'https://sso.example.com' AND team = 'payments' AND tokens = 100 AND status IS NOT NULL",
        )
        .await;
    assert_eq!(calls, "510");
    let usage = pg
        .psql(
            "SELECT count(*), sum(failed::int), count(exposed_name) FROM audit_usage \
             WHERE subject = 'alice' AND team = 'payments' AND tokens = 100",
        )
        .await;
    assert_eq!(usage, "510|51|128", "a usage row per call, shipped with it");
    let files = tollgate_audit::trail_files(&[dir.path().to_owned()]).unwrap().len();
    let seals = pg
        .psql("SELECT count(*) FROM audit_records WHERE kind = 'seal' AND route IS NULL")
        .await;
    assert_eq!(
        seals,
        files.to_string(),
        "every file sealed; seals carry no call columns"
    );
    let partitions = pg
        .psql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'audit_records'::regclass")
        .await;
    assert_eq!(partitions, "1", "one month, one partition");
    let usage_partitions = pg
        .psql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'audit_usage'::regclass")
        .await;
    assert_eq!(usage_partitions, "1");
}

/// The usage rows as text, in order, to compare.
async fn usage_rows(pg: &PostgresServer) -> String {
    pg.psql("SELECT string_agg(u::text, ';' ORDER BY file, line_no) FROM audit_usage u")
        .await
}

#[tokio::test]
async fn upgrading_fills_the_usage_table_as_shipping_does() {
    let pg = PostgresServer::start().await;
    let store = migrated(&pg).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = sink(dir.path());
    write(&handle, 0, 300).await;
    worker.close().await.unwrap();
    Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()))
        .pass()
        .await
        .unwrap();
    let shipped = usage_rows(&pg).await;
    assert_eq!(shipped.matches(';').count(), 299);

    // The store as schema version 1 left it, then upgraded through
    // version 2 (buckets of 32 a power of two) to 3 (the HDR histogram's).
    pg.psql(
        "DROP TABLE audit_usage; DELETE FROM schema_migrations WHERE version >= 2; \
         CREATE INDEX audit_records_team ON audit_records (team, time) \
         INCLUDE (tokens, bytes_in, bytes_out, duration_us) WHERE team IS NOT NULL",
    )
    .await;
    let applied = store.migrate().await.unwrap();
    assert_eq!(applied.iter().map(|m| m.version).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(
        usage_rows(&pg).await,
        shipped,
        "the migration computes what the shipper does"
    );
}

#[tokio::test]
async fn a_lost_position_reships_without_duplicates() {
    let pg = PostgresServer::start().await;
    let store = migrated(&pg).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = sink(dir.path());
    write(&handle, 0, 100).await;
    worker.close().await.unwrap();
    let mut shipper = Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()));
    let shipped = shipper.pass().await.unwrap().lines;

    // A fresh shipper resumes from the positions in the store: nothing new.
    let mut again = Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()));
    assert_eq!(again.pass().await.unwrap().lines, 0);

    // Positions lost (a batch committed, its acknowledgement lost): the
    // lines are offered again and skipped.
    pg.psql("DELETE FROM audit_shipping").await;
    let mut third = Shipper::new(store, ShipSettings::new("r1", dir.path()));
    assert_eq!(third.pass().await.unwrap().lines, shipped);
    assert_eq!(stored(&pg).await, trail(dir.path()));
    assert_eq!(pg.psql("SELECT count(*) FROM audit_usage").await, "100");
}

#[tokio::test]
async fn a_rewritten_or_truncated_file_is_refused() {
    let pg = PostgresServer::start().await;
    let store = migrated(&pg).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = sink(dir.path());
    write(&handle, 0, 20).await;
    worker.close().await.unwrap();
    Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()))
        .pass()
        .await
        .unwrap();
    let file = tollgate_audit::trail_files(&[dir.path().to_owned()]).unwrap().remove(0);
    let text = std::fs::read_to_string(&file).unwrap();

    // The same length, one record edited, then offered again.
    std::fs::write(&file, text.replacen("req-3", "req-X", 1)).unwrap();
    pg.psql("DELETE FROM audit_shipping").await;
    let e = Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()))
        .pass()
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Conflict { line: 5, .. }), "{e}");

    // Cut short after it was shipped (by another replica name, which has
    // its own positions).
    std::fs::write(&file, &text).unwrap();
    let mut r2 = Shipper::new(store, ShipSettings::new("r2", dir.path()));
    r2.pass().await.unwrap();
    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    let e = r2.pass().await.unwrap_err();
    assert!(matches!(e, StoreError::Shrunk { .. }), "{e}");
}

#[tokio::test]
async fn the_overviews_counts_agree_with_usage_per_step_server_and_tool() {
    let pg = PostgresServer::start().await;
    let store = migrated(&pg).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, worker) = sink(dir.path());
    let since = SystemTime::now() - Duration::from_secs(1);
    write(&handle, 0, 100).await;
    worker.close().await.unwrap();
    Shipper::new(store.clone(), ShipSettings::new("r1", dir.path()))
        .pass()
        .await
        .unwrap();
    let until = SystemTime::now() + Duration::from_secs(1);
    let start = since.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let steps = Steps {
        start,
        seconds: 1,
        count: 60,
    };
    let activity = store.activity(since, until, steps).await.unwrap();
    let sum = |f: fn(&ActivityStep) -> u64| activity.steps.iter().map(f).sum::<u64>();
    assert_eq!(activity.steps.len(), 60);
    assert_eq!(
        (
            sum(|s| s.calls),
            sum(|s| s.errors),
            sum(|s| s.denied),
            sum(|s| s.failed)
        ),
        (100, 10, 0, 10),
        "every tenth call answered 502"
    );
    assert_eq!(activity.failed_by_server.get("github"), Some(&10));
    assert_eq!(activity.failed_by_tool.get("github/create_issue"), Some(&10));
    let question = UsageQuestion {
        by: GroupBy::Tool,
        since: Some(since),
        until: Some(until),
        step: None,
    };
    let (tools, _) = store.usage(question, &Prices::default()).await.unwrap();
    let keys: Vec<&str> = tools.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["github/create_issue"], "a tool is keyed by its server");
    assert_eq!((tools.total.calls, tools.total.errors), (100, 10));
}
