//! Signed checkpoints over real software: a replica with a key made by
//! `tollgate audit checkpoint-key` signs its chain head every second and
//! at shutdown, stores each checkpoint in a real PostgreSQL and logs it;
//! `tollgate audit verify --checkpoints --store` proves its files up to
//! the sealed end; and after the files are rewritten consistently (a
//! record changed, every hash recomputed, so the chain alone still
//! verifies) the checkpoints catch the rewrite. The console's fleet view
//! shows the newest checkpoint with its signature checked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tollgate_e2e::Demo;
use tollgate_e2e::audit_support::try_metric;
use tollgate_e2e::children::{ChildGateway, tollgate_cli};
use tollgate_e2e::postgres::PostgresServer;

use super::{call, replica_config, terminate};

/// `tollgate ARGS`: (exit code, stdout, stderr).
async fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = tollgate_cli(args).await;
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

/// The audit files of `dir`, in chain order.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    out.sort();
    out
}

/// Change alice's first call into mallory's and recompute every `prev`
/// after it, across files, as someone with the host would.
fn rewrite(dir: &Path) {
    let mut before: Option<String> = None;
    let mut edited = false;
    for file in files(dir) {
        let mut out = Vec::new();
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let mut line = line.to_owned();
            if !edited && line.contains("\"kind\":\"call\"") && line.contains("\"subject\":\"alice\"") {
                line = line.replacen("\"subject\":\"alice\"", "\"subject\":\"mallory\"", 1);
                edited = true;
            }
            if let Some(prev) = &before {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                let hash = tollgate_audit::Hash::of_line(prev.as_bytes()).to_string();
                line = line.replacen(v["prev"].as_str().unwrap(), &hash, 1);
            }
            before = Some(line.clone());
            out.push(line);
        }
        std::fs::write(&file, out.join("\n") + "\n").unwrap();
    }
    assert!(edited, "a call of alice's to change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_prove_a_replicas_files_and_catch_a_consistent_rewrite() {
    let (pg, demo, keys) = (
        PostgresServer::start().await,
        Demo::spawn().await,
        tempfile::tempdir().unwrap(),
    );
    let key_file = keys.path().join("checkpoint.pem");
    let (code, made, err) = run(&["audit", "checkpoint-key", "--out", key_file.to_str().unwrap()]).await;
    assert_eq!(code, Some(0), "{err}");
    let public = made.lines().last().unwrap().trim().to_owned();
    let (_, shown, _) = run(&["audit", "checkpoint-key", "--public-of", key_file.to_str().unwrap()]).await;
    assert_eq!(shown.trim(), public, "the key's public half, shown again");

    let config = replica_config("r1", &demo, &pg.url(), keys.path()).replace(
        "[audit]\ndirectory = \"audit\"\n",
        &format!(
            "[audit]\ndirectory = \"audit\"\ncheckpoint_interval = \"1s\"\n\
             checkpoint_key = {{ file = \"{}\" }}\ncheckpoint_public_keys = [\"{public}\"]\n",
            key_file.display()
        ),
    ) + "[console]\nenabled = true\n[console.roles]\nauditor = [\"audit\"]\n";
    let mut gw = ChildGateway::spawn_logging(&config, "warn,tollgate::audit::checkpoint=info").await;
    let token = gw.mint("alice", &["--team", "payments"]).await;
    for id in 0..10 {
        assert_eq!(call(&gw, &token, id).await.status, 200);
    }
    let stored = wait_for_checkpoints(&pg).await;
    assert!(stored >= 1);
    let metrics = gw.metrics().await;
    let count = |outcome| try_metric(&metrics, "tollgate_audit_checkpoints_total", &[("outcome", outcome)]);
    assert!(count("stored").unwrap() >= 1.0, "{metrics}");
    assert!(count("signed").unwrap() >= count("stored").unwrap());
    assert!(try_metric(&metrics, "tollgate_audit_checkpoint_stored_timestamp_seconds", &[]).unwrap() > 0.0);

    // The console's fleet view shows the newest checkpoint, its signature
    // checked against the configured keys.
    let reviewer = gw.mint("ada", &["--console", "--group", "audit"]).await;
    let fleet = super::console::console(&gw, &reviewer, "fleet").await;
    let r1 = &fleet["replicas"][0];
    assert_eq!(r1["replica"], "r1", "{fleet:#}");
    assert_eq!(r1["checkpoint"]["signature"]["valid"], true, "{fleet:#}");
    assert!(
        r1["checkpoint"]["file"].as_str().unwrap().starts_with("audit-"),
        "{fleet:#}"
    );
    terminate(&mut gw).await;
    assert!(gw.log().contains("audit checkpoint signed"), "{}", gw.log());

    let audit = gw.dir.path().join("audit");
    let dir = audit.to_str().unwrap();
    let url = pg.url();
    let verify = [
        "audit",
        "verify",
        dir,
        "--checkpoints",
        "--store",
        &url,
        "--public-key",
        &public,
    ];
    let (code, out, err) = run(&verify).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("checkpoint(s) of replica r1 match"), "{out}");
    let last = files(&audit).pop().unwrap();
    let lines = std::fs::read_to_string(&last).unwrap().lines().count();
    let name = last.file_name().unwrap().to_str().unwrap();
    assert!(
        out.contains(&format!("proven up to {name}:{lines} ")),
        "the seal written at shutdown is checkpointed: {out}"
    );

    rewrite(&audit);
    let (code, out, err) = run(&["audit", "verify", dir]).await;
    assert_eq!(code, Some(0), "the re-hashed chain verifies on its own: {out}{err}");
    let (code, _, err) = run(&verify).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("rewritten after it was signed"), "{err}");

    let (code, _, err) = run(&["audit", "verify", dir, "--checkpoints", "--store", &url]).await;
    assert_eq!(code, Some(2), "no trusted key is a usage error: {err}");
    assert!(err.contains("--public-key"), "{err}");
}

/// Wait (20 s at most) for the store to hold a checkpoint; how many.
async fn wait_for_checkpoints(pg: &PostgresServer) -> usize {
    for _ in 0..200 {
        let n: usize = pg
            .psql("SELECT count(*) FROM audit_checkpoints")
            .await
            .parse()
            .unwrap_or(0);
        if n > 0 {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no checkpoint reached the store");
}
