//! The audit trail's integrity through real gateways: the chain verified
//! and tampering named (library and CLI), and strict durability through
//! kill -9 of the real binary under load.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tollgate_audit::{Phase, Problem, VerifyError};
use tollgate_e2e::audit_support::{load_request, records, stub_trail, tampered, trail_files, trail_lines};
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::stub::Stub;

#[tokio::test]
async fn the_chain_verifies_and_an_edited_deleted_or_swapped_record_is_named() {
    let stub = Stub::spawn().await;
    let gw = stub_trail(&stub, 4).await;
    let dir = gw.audit_dir();
    let report = tollgate_audit::verify(std::slice::from_ref(&dir)).unwrap();
    assert_eq!(
        (report.records, report.lines, report.files.len()),
        (4, 6, 1),
        "genesis, 4 calls, seal"
    );
    assert!(report.sealed, "shut down cleanly");
    assert_eq!((report.dropped, report.continues_from.clone()), (0, None));

    let out = tollgate_cli(&["audit", "verify", "--sealed", dir.to_str().unwrap()]).await;
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let expected = format!(
        "verified 4 records (6 lines) in 1 file(s); last hash {}\n",
        report.last_hash
    );
    assert_eq!(stdout, expected);

    // Line 3 is the second call record.
    let (copy, t) = tampered(&dir, |l| l[2] = l[2].replace("\"status\":200", "\"status\":201"));
    assert_eq!((t.line, t.problem.clone()), (3, Problem::Edited));
    let file = trail_files(copy.path()).pop().unwrap();
    assert_eq!(t.file, file);
    let out = tollgate_cli(&["audit", "verify", copy.path().to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!("{}:3: record was edited", file.display())),
        "{stderr}"
    );

    let (_copy, t) = tampered(&dir, |l| drop(l.remove(2)));
    assert_eq!((t.line, t.problem.clone()), (3, Problem::Deleted { missing: 1 }));
    let (_copy, t) = tampered(&dir, |l| l.swap(2, 3));
    assert_eq!((t.line, t.problem.clone()), (3, Problem::Deleted { missing: 1 }));
    let (_copy, t) = tampered(&dir, |l| l.insert(3, l[1].clone()));
    assert_eq!(
        (t.line, t.problem.clone()),
        (4, Problem::OutOfOrder),
        "a replayed record"
    );
    // A partial last line, as a crash mid-write leaves it, is named as such.
    let original = trail_files(&dir).pop().unwrap();
    let torn = tempfile::tempdir().unwrap();
    let file = torn.path().join(original.file_name().unwrap());
    let bytes = std::fs::read(&original).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 5]).unwrap();
    let seal = trail_lines(&dir).pop().unwrap().len() as u64;
    match tollgate_audit::verify(&[file]) {
        Err(VerifyError::Tampered(t)) => assert_eq!((t.line, t.problem), (6, Problem::Truncated { bytes: seal - 4 })),
        other => panic!("truncation not detected: {other:?}"),
    }
}

/// A strict-mode gateway (the real binary) in front of the stub, killed with
/// SIGKILL while four tasks load it.
struct KilledUnderLoad {
    stub: Stub,
    gw: ChildGateway,
    /// The calls whose answer a load task read in full.
    answered: u64,
}

impl KilledUnderLoad {
    /// Load the gateway until the stub has seen 60 calls, kill it, and stop
    /// the load.
    async fn run() -> KilledUnderLoad {
        let stub = Stub::spawn().await;
        let config = format!(
            "[audit]\ndurability = \"strict\"\n\n[[servers]]\nname = \"s\"\nurl = \"{}/json\"\n",
            stub.base
        );
        let mut gw = ChildGateway::spawn(&config).await;
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = (0..4u64)
            .map(|task| tokio::spawn(load(gw.url("s"), task, stop.clone())))
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while stub.seen().await.len() < 60 {
            assert!(tokio::time::Instant::now() < deadline, "the load did not get going");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        gw.child.start_kill().unwrap();
        let status = gw.child.wait().await.unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
        stop.store(true, Ordering::Relaxed);
        let mut answered = 0;
        for t in tasks {
            answered += t.await.unwrap();
        }
        KilledUnderLoad { stub, gw, answered }
    }

    /// The JSON-RPC ids of the calls the upstream saw, at least one for
    /// every call answered.
    async fn seen_upstream(&self) -> Vec<String> {
        let seen: Vec<String> = self
            .stub
            .seen()
            .await
            .iter()
            .map(|s| serde_json::from_slice::<Value>(&s.body).unwrap()["id"].to_string())
            .collect();
        let answered = self.answered;
        assert!(
            seen.len() as u64 >= answered && answered > 0,
            "{} seen, {answered} answered",
            seen.len()
        );
        seen
    }

    /// Every call the upstream saw has its forwarding record, and every
    /// complete record follows a forwarding record.
    fn check_records(&self, seen: &[String]) {
        let all = records(&self.gw.audit_dir());
        let forwarding: HashSet<(&str, &str)> = all
            .iter()
            .filter(|r| r.phase == Phase::Forwarding)
            .map(|r| (r.request_id.as_str(), r.jsonrpc_id.as_deref().unwrap()))
            .collect();
        for id in seen {
            assert!(
                forwarding.iter().any(|(_, j)| j == id),
                "the upstream saw call {id}, which has no durable record"
            );
        }
        for rec in all.iter().filter(|r| r.phase == Phase::Complete) {
            let key = (rec.request_id.as_str(), rec.jsonrpc_id.as_deref().unwrap());
            assert!(
                forwarding.contains(&key),
                "a complete record without its forwarding record"
            );
            assert_eq!(rec.status, Some(200));
        }
    }

    /// The trail is intact up to where the process died: unsealed, and at
    /// most a partial last line.
    fn check_chain(&self) {
        let last = trail_files(&self.gw.audit_dir()).pop().unwrap();
        match tollgate_audit::verify(&[self.gw.audit_dir()]) {
            Ok(report) => assert!(!report.sealed, "a killed writer cannot seal"),
            Err(VerifyError::Tampered(t)) if matches!(t.problem, Problem::Truncated { .. }) && t.file == last => {}
            Err(e) => panic!("kill -9 left a trail that does not verify: {e}"),
        }
    }
}

/// Load task `task`: send calls to `url` one after another until `stop` is
/// set or the gateway is gone; the number answered in full.
async fn load(url: String, task: u64, stop: Arc<AtomicBool>) -> u64 {
    let mut answered = 0u64;
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(res) = load_request(&url, task, n).send().await else {
            break;
        };
        assert_eq!(res.status(), 200, "refused under load");
        if res.bytes().await.is_err() {
            break;
        }
        answered += 1;
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mode_keeps_a_record_of_every_forwarded_call_through_kill_9() {
    let killed = KilledUnderLoad::run().await;
    let seen = killed.seen_upstream().await;
    killed.check_records(&seen);
    killed.check_chain();
}
