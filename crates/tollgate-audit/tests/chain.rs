//! Tamper evidence: `verify` passes on a real trail written by the sink and
//! names the first bad record for every kind of tampering.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};

use common::{files, lines, settings, write_lines, write_trail};
use tollgate_audit::{Problem, VerifyError, VerifyOptions, verify, verify_with};

fn problem(paths: &[PathBuf]) -> (PathBuf, u64, Problem) {
    match verify(paths) {
        Err(VerifyError::Tampered(t)) => (t.file, t.line, t.problem),
        other => panic!("expected tampering, got {other:?}"),
    }
}

fn trail(n: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    write_trail(n, settings(dir.path()));
    let file = files(dir.path()).remove(0);
    (dir, file)
}

#[test]
fn a_written_trail_verifies_and_counts_its_records() {
    let (dir, _) = trail(50);
    let report = verify(&[dir.path().to_owned()]).unwrap();
    assert_eq!(report.records, 50);
    assert_eq!(report.lines, 52, "genesis + 50 + seal");
    assert!(report.sealed);
    assert_eq!(report.continues_from, None);
    assert!(report.to_string().starts_with("verified 50 records"));
    verify_with(&[dir.path().to_owned()], VerifyOptions { require_sealed: true }).unwrap();
}

#[test]
fn an_edited_record_is_named() {
    let (dir, file) = trail(10);
    let mut l = lines(&file);
    l[4] = l[4].replace("\"status\":200", "\"status\":201");
    write_lines(&file, &l);
    assert_eq!(problem(&[dir.path().to_owned()]), (file, 5, Problem::Edited));
}

#[test]
fn a_deleted_record_is_named() {
    let (_dir, file) = trail(10);
    let mut l = lines(&file);
    l.remove(3);
    write_lines(&file, &l);
    assert_eq!(
        problem(std::slice::from_ref(&file)),
        (file, 4, Problem::Deleted { missing: 1 })
    );
}

#[test]
fn reordered_records_are_named() {
    let (_dir, file) = trail(10);
    let mut l = lines(&file);
    l.swap(3, 4);
    write_lines(&file, &l);
    let (_, line, _) = problem(std::slice::from_ref(&file));
    assert_eq!(line, 4);
}

#[test]
fn an_inserted_record_is_named_even_when_forged_into_the_chain() {
    let (_dir, file) = trail(10);
    let mut l = lines(&file);
    // A copy of an earlier record.
    l.insert(6, l[2].clone());
    write_lines(&file, &l);
    assert_eq!(
        problem(std::slice::from_ref(&file)),
        (file.clone(), 7, Problem::OutOfOrder)
    );

    // A record forged to continue the chain (the attacker can hash): the
    // next genuine record no longer links to it.
    let mut l = lines(&file);
    l.remove(6);
    let prev = tollgate_audit::Hash::of_line(l[5].as_bytes());
    let mut forged: serde_json::Value = serde_json::from_str(&l[5]).unwrap();
    forged["seq"] = serde_json::json!(6);
    forged["prev"] = serde_json::json!(prev.to_string());
    forged["name"] = serde_json::json!("delete_repo");
    let forged = forged.to_string();
    l.insert(6, forged);
    write_lines(&file, &l);
    assert_eq!(problem(std::slice::from_ref(&file)), (file, 7, Problem::OutOfOrder));
}

#[test]
fn a_file_cut_inside_a_record_is_truncated() {
    let (_dir, file) = trail(10);
    let text = std::fs::read(&file).unwrap();
    std::fs::write(&file, &text[..text.len() - 30]).unwrap();
    let (f, line, p) = problem(std::slice::from_ref(&file));
    assert_eq!((f, line), (file, 12));
    assert!(matches!(p, Problem::Truncated { .. }), "{p:?}");
}

#[test]
fn whole_records_cut_from_a_closed_trail_need_the_seal() {
    let (_dir, file) = trail(10);
    let mut l = lines(&file);
    l.truncate(8);
    write_lines(&file, &l);
    // An open trail looks like this too, so plain verify passes...
    let report = verify(std::slice::from_ref(&file)).unwrap();
    assert!(!report.sealed);
    // ...but not when the trail must be closed.
    let err = verify_with(std::slice::from_ref(&file), VerifyOptions { require_sealed: true }).unwrap_err();
    assert!(err.to_string().contains("without a seal"), "{err}");
}

fn rotated_trail() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    s.rotate_bytes = 4000;
    write_trail(40, s);
    let f = files(dir.path());
    assert!(f.len() >= 4, "expected rotation, got {f:?}");
    (dir, f)
}

#[test]
fn rotation_chains_files_through_genesis_and_seal() {
    let (dir, f) = rotated_trail();
    let report = verify(&[dir.path().to_owned()]).unwrap();
    assert_eq!(report.records, 40);
    assert!(report.files.iter().all(|f| f.sealed));
    let genesis = &lines(&f[1])[0];
    assert!(genesis.contains("\"kind\":\"genesis\""), "{genesis}");
    let first_name = f[0].file_name().unwrap().to_str().unwrap();
    assert!(genesis.contains(&format!("\"previous_file\":\"{first_name}\"")));
    // Verifying from a later file onwards (older files removed) passes and says so.
    let report = verify(&f[2..]).unwrap();
    assert_eq!(report.continues_from.as_deref(), f[1].file_name().unwrap().to_str());
}

#[test]
fn tampering_across_rotation_is_detected() {
    // Records cut from the end of a rotated file.
    let (_dir, f) = rotated_trail();
    let mut l = lines(&f[1]);
    let n = l.len();
    l.truncate(n - 2);
    write_lines(&f[1], &l);
    let (file, line, p) = problem(&f);
    assert_eq!((file, line), (f[2].clone(), 1));
    assert!(matches!(p, Problem::Discontinuity { .. }), "{p:?}");

    // A whole file deleted from the middle.
    let (_dir, f) = rotated_trail();
    std::fs::remove_file(&f[1]).unwrap();
    let rest: Vec<PathBuf> = f.iter().filter(|p| p.exists()).cloned().collect();
    let (file, line, _) = problem(&rest);
    assert_eq!((file, line), (f[2].clone(), 1));

    // The last record of a rotated file edited (its seal).
    let (_dir, f) = rotated_trail();
    let mut l = lines(&f[0]);
    let last = l.len() - 1;
    l[last] = l[last].replace("\"reason\":\"rotate\"", "\"reason\":\"shutdown\"");
    write_lines(&f[0], &l);
    assert_eq!(problem(&f), (f[0].clone(), last as u64 + 1, Problem::Edited));
}

#[test]
fn a_restart_continues_the_chain_and_accounts_for_a_torn_record() {
    let dir = tempfile::tempdir().unwrap();
    write_trail(5, settings(dir.path()));
    // A crash in the middle of the next write: unsealed, a partial line.
    let f = files(dir.path()).remove(0);
    let mut l = lines(&f);
    l.pop();
    write_lines(&f, &l);
    let mut text = std::fs::read(&f).unwrap();
    text.extend_from_slice(b"{\"v\":1,\"seq\":6,\"prev\":\"");
    std::fs::write(&f, &text).unwrap();
    assert_eq!(
        problem(std::slice::from_ref(&f)),
        (f.clone(), 7, Problem::Truncated { bytes: 23 })
    );

    write_trail(5, settings(dir.path()));
    let all = files(dir.path());
    assert_eq!(all.len(), 2);
    assert!(lines(&all[1])[0].contains("\"torn_tail\":23"));
    let report = verify(&[dir.path().to_owned()]).unwrap();
    assert_eq!(report.records, 10);
    assert_eq!(report.files[0].torn_tail, 23);
}

#[test]
fn an_empty_file_left_by_a_crash_is_removed_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    write_trail(3, settings(dir.path()));
    std::fs::write(dir.path().join("audit-9999999999999999-20990101T000000Z.jsonl"), b"").unwrap();
    write_trail(3, settings(dir.path()));
    assert_eq!(files(dir.path()).len(), 2);
    assert_eq!(verify(&[dir.path().to_owned()]).unwrap().records, 6);
}

#[test]
fn nothing_to_verify_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(verify(&[dir.path().to_owned()]), Err(VerifyError::NoFiles)));
    assert!(matches!(
        verify(&[Path::new("/nonexistent").to_owned()]),
        Err(VerifyError::Io { .. })
    ));
}

#[test]
fn verifying_reports_growing_positions_up_to_the_trail_size() {
    let dir = tempfile::tempdir().unwrap();
    // Enough records for several steps, in more than one file.
    let mut s = settings(dir.path());
    s.rotate_bytes = 2 * tollgate_audit::PROGRESS_STEP;
    write_trail(12_000, s);
    let paths = [dir.path().to_owned()];
    let size: u64 = files(dir.path()).iter().map(|f| f.metadata().unwrap().len()).sum();
    let mut seen = Vec::new();
    let report = tollgate_audit::verify_with_progress(&paths, VerifyOptions::default(), &mut |p| seen.push(p)).unwrap();
    assert_eq!(report.records, 12_000);
    assert!(seen.len() > 3, "a report per step: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].done <= w[1].done), "{seen:?}");
    assert!(seen.iter().all(|p| p.total == size && p.done <= size), "{seen:?}");
    assert_eq!(seen.last().map(|p| p.done), Some(size));
}
