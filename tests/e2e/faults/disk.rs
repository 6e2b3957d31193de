//! The audit disk fills up (a small tmpfs the test mounts; skipped, saying
//! so, where the test may not mount): strict mode refuses calls with 503
//! and turns unready, loses no record of an answered call and recovers when
//! there is room; batch mode keeps serving, moves the alert metric and
//! announces the loss with a `gap` line. The audit directory turns
//! read-only mid-run: strict mode refuses calls until it is writable
//! again. The trail verifies after each.

use std::time::Duration;

use serde_json::json;
use tollgate_e2e::audit_support::{Exchange, modern};
use tollgate_e2e::children::ChildGateway;
use tollgate_e2e::{Demo, modern_body};

use super::{config, echo};

/// A tmpfs of `size` mounted at `dir` (the test's small disk); unmounted on
/// drop. `None` where this process may not mount (not root, no
/// CAP_SYS_ADMIN): the caller then says so and skips.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dir: &std::path::Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallDisk(dir.to_owned()))
    }

    fn grow(&self, size: &str) {
        let status = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// A gateway whose audit directory is a small disk of `size`, with
/// `audit` settings; `None` (after saying so) where the test may not mount.
async fn on_small_disk(demo: &Demo, size: &str, audit: &str) -> Option<(ChildGateway, SmallDisk, tempfile::TempDir)> {
    let place = tempfile::tempdir().unwrap();
    let dir = place.path().join("audit");
    let Some(disk) = SmallDisk::mount(&dir, size) else {
        eprintln!("skipped: cannot mount a small filesystem here (needs root)");
        return None;
    };
    let gw = ChildGateway::spawn(&format!(
        "[audit]\ndirectory = \"{}\"\n{audit}\n\n{}",
        dir.display(),
        config(demo, "")
    ))
    .await;
    Some((gw, disk, place))
}

/// A read-only bind mount laid over `dir` while the gateway runs: the file
/// it has open keeps its writable mount, but no new file can be created
/// there (as when an operator or the kernel remounts the volume
/// read-only). Removed on drop.
struct ReadOnly(std::path::PathBuf);

impl ReadOnly {
    fn over(dir: &std::path::Path) -> ReadOnly {
        for args in [&["--bind"][..], &["-o", "remount,bind,ro"][..]] {
            let status = std::process::Command::new("mount")
                .args(args)
                .args([dir, dir])
                .status()
                .unwrap();
            assert!(status.success(), "mount {args:?}");
        }
        ReadOnly(dir.to_owned())
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// `echo` calls of `text_bytes` with the ids in `ids` until one is not
/// answered 200: how many were, and the first that was not.
async fn until_refused(gw: &ChildGateway, ids: std::ops::Range<u64>, text_bytes: usize) -> (u64, Option<Exchange>) {
    let mut answered = 0;
    for id in ids {
        let text = "x".repeat(text_bytes);
        let body = modern_body(id, "tools/call", json!({"name": "echo", "arguments": {"text": text}}));
        let ex = modern(gw.url("demo"), None, "tools/call", Some("echo"), body).await;
        if ex.status != 200 {
            return (answered, Some(ex));
        }
        answered += 1;
    }
    (answered, None)
}

/// Calls (ids from `first`) until one is answered again, within ten
/// seconds, and the gateway is ready again.
async fn served_again(gw: &ChildGateway, first: u64) {
    for id in first..first + 100 {
        if echo(gw, id).await == 200 {
            assert_eq!(gw.ready_detail().await["ready"], true);
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no recovery: {}", gw.log());
}

/// Every one of `answered` calls has its complete record in the trail at
/// `audit`, and the trail verifies.
async fn every_answer_recorded(audit: &std::path::Path, answered: u64) {
    let recorded = tollgate_e2e::audit_support::records(audit)
        .iter()
        .filter(|r| r.phase == tollgate_audit::Phase::Complete && r.status == Some(200))
        .count() as u64;
    assert!(recorded >= answered, "{recorded} records for {answered} answered calls");
    let out = tollgate_e2e::children::tollgate_cli(&["audit", "verify", audit.to_str().unwrap()]).await;
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_audit_disk_in_strict_mode_refuses_calls_loses_no_record_and_recovers() {
    let demo = Demo::spawn().await;
    let Some((gw, disk, _place)) = on_small_disk(&demo, "96k", "durability = \"strict\"").await else {
        return;
    };
    let audit = disk.0.clone();
    // Calls until the disk is full: each one answered was recorded first.
    let (mut answered, refused) = until_refused(&gw, 0..2000, 200).await;
    let refused = refused.expect("the small disk fills up");
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.message()["error"]["code"], -32000, "{refused:?}");
    let detail = gw.ready_detail().await;
    assert_eq!(
        (detail["ready"].as_bool(), detail["checks"]["audit"].as_bool()),
        (Some(false), Some(false)),
        "{detail}"
    );
    let m = gw.metrics().await;
    assert_eq!(
        tollgate_e2e::audit_support::metric(&m, "tollgate_audit_healthy", &[]),
        0.0
    );
    assert!(answered > 10, "{answered}");

    // More room: the writer recovers by itself and calls are served again.
    disk.grow("4m");
    served_again(&gw, 5000).await;
    answered += 1;

    every_answer_recorded(&audit, answered).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_audit_disk_in_batch_mode_keeps_serving_and_announces_the_loss() {
    let demo = Demo::spawn().await;
    let Some((gw, disk, _place)) = on_small_disk(&demo, "64k", "sync_interval = \"1ms\"").await else {
        return;
    };
    let audit = disk.0.clone();
    // Far more than the disk holds: every call is still answered.
    for id in 0..300 {
        let body = modern_body(
            id,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x".repeat(400)}}),
        );
        let ex = modern(gw.url("demo"), None, "tools/call", Some("echo"), body).await;
        assert_eq!(ex.status, 200, "batch mode never refuses for the audit trail: {ex:?}");
    }
    let m = gw.metrics().await;
    let write_errors =
        tollgate_e2e::audit_support::metric(&m, "tollgate_audit_records_total", &[("kind", "write_errors")]);
    assert!(write_errors >= 1.0, "the alert metric moved: {write_errors}");
    assert_eq!(
        tollgate_e2e::audit_support::metric(&m, "tollgate_audit_healthy", &[]),
        0.0
    );

    // With room again, the writer recovers and a gap line announces what
    // was lost; the trail verifies.
    disk.grow("4m");
    for id in 1000..1020 {
        assert_eq!(echo(&gw, id).await, 200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut gap = false;
    for _ in 0..100 {
        gap = tollgate_e2e::audit_support::trail_lines(&audit)
            .iter()
            .any(|l| l.contains("\"kind\":\"gap\""));
        if gap {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gap, "the loss is announced in the trail: {}", gw.log());
    let out = tollgate_e2e::children::tollgate_cli(&["audit", "verify", audit.to_str().unwrap()]).await;
    let report = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("lost record(s)"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_directory_that_turns_read_only_in_strict_mode_refuses_calls_and_recovers() {
    let demo = Demo::spawn().await;
    // Small files: the writer needs a new one every few records.
    let audit_settings = "durability = \"strict\"\nrotate_bytes = 4096";
    let Some((gw, disk, _place)) = on_small_disk(&demo, "4m", audit_settings).await else {
        return;
    };
    let audit = disk.0.clone();
    let mut answered = 0u64;
    for id in 0..5 {
        assert_eq!(echo(&gw, id).await, 200);
        answered += 1;
    }
    let read_only = ReadOnly::over(&audit);
    let (more, refused) = until_refused(&gw, 10..500, 1).await;
    answered += more;
    assert_eq!(
        refused.map(|ex| ex.status),
        Some(503),
        "calls are refused once no file can be written"
    );
    assert_eq!(gw.ready_detail().await["ready"], false);
    assert_eq!(echo(&gw, 600).await, 503, "and stay refused");

    drop(read_only);
    served_again(&gw, 700).await;
    answered += 1;
    every_answer_recorded(&audit, answered).await;
}
