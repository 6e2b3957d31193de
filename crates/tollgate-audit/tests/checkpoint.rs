//! Signed checkpoints against a real trail: the sink's published head,
//! signed, matches the files; a rewrite that re-hashes the whole chain
//! still verifies as a chain but no longer matches the checkpoint.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use common::{call, files, lines, principal, settings, write_lines};
use tollgate_audit::{AuditSink, Checkpoint, CheckpointKeys, CheckpointSigner, Hash, check, verify};

/// Write `n` records, returning the head the sink published before and
/// after closing (the seal).
fn trail(dir: &Path, n: u64) -> Vec<tollgate_audit::ChainHead> {
    let (handle, worker) = AuditSink::start(settings(dir)).unwrap();
    assert_eq!(handle.head(), None, "nothing is durable before the first commit");
    let alice = principal("alice", "payments");
    let mut heads = Vec::new();
    for i in 0..n {
        assert_eq!(
            handle.record(call(i, &alice, "create_issue")),
            tollgate_audit::Recorded::Queued
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(handle.flush()).unwrap();
    heads.push(handle.head().unwrap());
    worker.close_blocking().unwrap();
    heads.push(handle.head().unwrap());
    heads
}

/// Every line's `prev` recomputed from the line before, as someone
/// rewriting the trail would, keeping the rest of each line's bytes.
fn rechain(path: &Path) {
    let mut out: Vec<String> = Vec::new();
    for line in lines(path) {
        let line = match out.last() {
            None => line,
            Some(before) => {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                let new = Hash::of_line(before.as_bytes()).to_string();
                line.replacen(v["prev"].as_str().unwrap(), &new, 1)
            }
        };
        out.push(line);
    }
    write_lines(path, &out);
}

fn sign(heads: &[tollgate_audit::ChainHead]) -> (Vec<Checkpoint>, CheckpointKeys) {
    let (signer, _) = CheckpointSigner::generate().unwrap();
    let keys = CheckpointKeys::parse(&[signer.public_key()]).unwrap();
    let cps = heads
        .iter()
        .map(|h| signer.sign("replica-1", h.clone(), SystemTime::now()))
        .collect();
    (cps, keys)
}

#[test]
fn the_published_head_is_the_files_last_line_and_its_checkpoint_matches() {
    let dir = tempfile::tempdir().unwrap();
    let heads = trail(dir.path(), 20);
    let file = files(dir.path()).remove(0);
    let all = lines(&file);
    let sealed = heads.last().unwrap();
    assert_eq!(sealed.line, all.len() as u64, "genesis + 20 + seal");
    assert_eq!(sealed.hash, Hash::of_line(all.last().unwrap().as_bytes()));
    assert_eq!(sealed.seq, 21);
    assert_eq!(heads[0].line, 21, "after the flush: genesis + 20");

    let (cps, keys) = sign(&heads);
    let report = check(&[dir.path().to_owned()], &cps, &keys).unwrap();
    assert_eq!(report.checked, 2);
    assert_eq!(report.latest.unwrap().head, *sealed);
}

#[test]
fn a_consistent_rewrite_verifies_as_a_chain_but_fails_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let heads = trail(dir.path(), 10);
    let (cps, keys) = sign(&heads);
    let file: PathBuf = files(dir.path()).remove(0);

    let mut all = lines(&file);
    all[3] = all[3].replacen("\"subject\":\"alice\"", "\"subject\":\"mallory\"", 1);
    write_lines(&file, &all);
    rechain(&file);
    verify(&[dir.path().to_owned()]).expect("the re-hashed chain is consistent");

    let failure = check(&[dir.path().to_owned()], &cps, &keys).unwrap_err();
    assert_eq!(failure.file, file);
    assert_eq!(failure.line, heads[0].line, "the first checkpoint after the edit");
    assert!(failure.message.contains("rewritten"), "{failure}");
}

#[test]
fn a_cut_trail_or_a_missing_file_or_a_foreign_key_fails() {
    let dir = tempfile::tempdir().unwrap();
    let heads = trail(dir.path(), 5);
    let (cps, keys) = sign(&heads);
    let file = files(dir.path()).remove(0);

    let (stranger, _) = CheckpointSigner::generate().unwrap();
    let foreign = CheckpointKeys::parse(&[stranger.public_key()]).unwrap();
    let e = check(&[dir.path().to_owned()], &cps, &foreign).unwrap_err();
    assert!(e.message.contains("not among"), "{e}");

    let mut all = lines(&file);
    all.truncate(4);
    write_lines(&file, &all);
    let e = check(&[dir.path().to_owned()], &cps, &keys).unwrap_err();
    assert!(e.message.contains("records were cut"), "{e}");

    std::fs::remove_file(&file).unwrap();
    std::fs::write(dir.path().join("audit-0000000000000000-19700101T000000Z.jsonl"), "").unwrap();
    let e = check(&[dir.path().to_owned()], &cps, &keys).unwrap_err();
    assert!(e.message.contains("file is missing"), "{e}");
}
