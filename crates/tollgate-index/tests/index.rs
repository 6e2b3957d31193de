//! The index answers exactly what reading the trail answers: the same
//! lines for every filter, the same usage sums, after incremental updates,
//! with a line being written, and after files go away.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use common::{START, Traffic, write};
use tollgate_audit::{Filter, Outcome, Phase};
use tollgate_index::{Index, IndexError};

fn scan(dir: &std::path::Path, filter: Filter) -> Vec<String> {
    tollgate_audit::query(&[dir.to_owned()], filter)
        .unwrap()
        .map(|e| e.unwrap().raw)
        .collect()
}

fn indexed(index: &Index, filter: Filter) -> Vec<String> {
    index.query(filter).unwrap().map(|e| e.unwrap().raw).collect()
}

fn at(hours: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(START + hours * 3600)
}

fn filters() -> Vec<Filter> {
    let f = Filter::default;
    vec![
        f(),
        Filter {
            subject: Some("user00007@example.com".into()),
            ..f()
        },
        Filter {
            subject: Some("user00007@example.com".into()),
            since: Some(at(2)),
            until: Some(at(5)),
            ..f()
        },
        Filter {
            team: Some("team03".into()),
            decision: Some(Outcome::Deny),
            ..f()
        },
        Filter {
            server: Some("server05".into()),
            tool: Some("tool017".into()),
            ..f()
        },
        Filter {
            trace: Some(format!("{:032x}", 42)),
            ..f()
        },
        Filter {
            status: Some(502),
            since: Some(at(1)),
            ..f()
        },
        Filter {
            since: Some(at(3)),
            ..f()
        },
        Filter {
            subject: Some("nobody".into()),
            ..f()
        },
    ]
}

#[test]
fn every_filter_returns_the_lines_a_scan_returns_after_incremental_updates() {
    let dir = tempfile::tempdir().unwrap();
    let mut traffic = Traffic::new(50, Duration::from_secs(1));
    write(dir.path(), traffic.by_ref().take(12_000));
    let mut index = Index::open(&Index::path_for(dir.path())).unwrap();
    let first = index.update(&[dir.path().to_owned()]).unwrap();
    assert_eq!(first.records, 12_000);

    write(dir.path(), traffic.by_ref().take(8_000));
    let second = index.update(&[dir.path().to_owned()]).unwrap();
    assert_eq!(second.records, 8_000, "only the new records are read");
    assert_eq!(index.update(&[dir.path().to_owned()]).unwrap().records, 0);

    for filter in filters() {
        let want = scan(dir.path(), filter.clone());
        assert_eq!(indexed(&index, filter.clone()), want, "{filter:?}");
        let newest: Vec<String> = index
            .query_newest(filter.clone())
            .unwrap()
            .map(|e| e.unwrap().raw)
            .collect();
        assert_eq!(
            newest,
            want.iter().rev().cloned().collect::<Vec<_>>(),
            "newest first: {filter:?}"
        );
    }
    assert!(
        !scan(dir.path(), filters()[2].clone()).is_empty(),
        "the filters select something"
    );
}

/// Count, tokens, catalog tokens and errors of the complete records in
/// the window, read from the files.
fn scan_sums(dir: &std::path::Path, since: SystemTime, until: SystemTime) -> (u64, u64, u64, u64) {
    let mut sums = (0, 0, 0, 0);
    let filter = Filter {
        since: Some(since),
        until: Some(until),
        ..Filter::default()
    };
    for e in tollgate_audit::query(&[dir.to_owned()], filter).unwrap() {
        let r = e.unwrap().record;
        if r.phase == Phase::Complete {
            sums.0 += 1;
            sums.1 += r.tokens;
            sums.2 += u64::from(r.catalog) * r.tokens;
            sums.3 += u64::from(r.is_error());
        }
    }
    sums
}

fn index_sums(index: &Index, since: SystemTime, until: SystemTime) -> (u64, u64, u64, u64) {
    let mut sums = (0, 0, 0, 0);
    index
        .calls(Some(since), Some(until), |c| {
            sums.0 += 1;
            sums.1 += c.usage.tokens;
            sums.2 += u64::from(c.usage.catalog) * c.usage.tokens;
            sums.3 += u64::from(c.usage.error);
        })
        .unwrap();
    sums
}

#[test]
fn usage_sums_from_the_index_equal_the_trails_even_with_late_records() {
    let dir = tempfile::tempdir().unwrap();
    // Every seventh record arrived 40 minutes before it was written (a
    // long call): rows are not in time order.
    let late = Traffic::new(30, Duration::from_secs(2))
        .take(8_000)
        .enumerate()
        .map(|(i, mut r)| {
            if i % 7 == 0 {
                r.time -= Duration::from_secs(40 * 60);
            }
            r
        });
    write(dir.path(), late);
    let mut index = Index::open(&Index::path_for(dir.path())).unwrap();
    index.update(&[dir.path().to_owned()]).unwrap();
    let windows = [(at(1), at(2)), (at(0), at(5)), (at(3), at(4)), (at(4), at(9))];
    for (since, until) in windows {
        let want = scan_sums(dir.path(), since, until);
        assert_eq!(index_sums(&index, since, until), want, "{since:?}..{until:?}");
    }
    let (calls, _, catalog, errors) = scan_sums(dir.path(), at(1), at(2));
    assert!(calls > 1000 && catalog > 0 && errors > 0);
}

#[test]
fn a_line_being_written_waits_and_removed_files_leave_the_index() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), Traffic::new(5, Duration::from_secs(1)).take(100));
    let file: PathBuf = tollgate_audit::trail_files(&[dir.path().to_owned()])
        .unwrap()
        .pop()
        .unwrap();
    let full = std::fs::read(&file).unwrap();
    let last_call = full[..full.len() - 1].iter().rposition(|b| *b == b'\n').unwrap() + 1;
    // The same trail, its last line cut in half: as if still being written.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    let copied = copy.join(file.file_name().unwrap());
    std::fs::write(&copied, &full[..last_call + 10]).unwrap();
    let mut index = Index::open(&copy.join("index.sqlite")).unwrap();
    let before = index.update(std::slice::from_ref(&copy)).unwrap().records;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&copied)
        .unwrap()
        .write_all(&full[last_call + 10..])
        .unwrap();
    let after = index.update(std::slice::from_ref(&copy)).unwrap().records;
    assert_eq!(indexed(&index, Filter::default()), scan(&copy, Filter::default()));
    assert!(after <= 1 && before + after == scan(&copy, Filter::default()).len() as u64);

    std::fs::remove_file(&copied).unwrap();
    std::fs::write(copy.join("audit-0000000000000999-20260901T000000Z.jsonl"), b"").unwrap();
    assert_eq!(index.update(std::slice::from_ref(&copy)).unwrap().removed, 1);
    assert!(indexed(&index, Filter::default()).is_empty());
}

#[test]
fn a_rewritten_or_malformed_trail_is_refused_with_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit-0000000000000000-20260901T000000Z.jsonl");
    std::fs::write(&file, b"{\"kind\":\"call\",\"time\":5}\n").unwrap();
    let mut index = Index::open(&dir.path().join("index.sqlite")).unwrap();
    let err = index.update(&[dir.path().to_owned()]).unwrap_err();
    assert!(matches!(&err, IndexError::Malformed { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("audit-0000000000000000"), "{err}");

    write(
        dir.path().join("t").as_path(),
        Traffic::new(5, Duration::from_secs(1)).take(10),
    );
    let trail = dir.path().join("t");
    let mut index = Index::open(&trail.join("index.sqlite")).unwrap();
    index.update(std::slice::from_ref(&trail)).unwrap();
    let f = tollgate_audit::trail_files(std::slice::from_ref(&trail))
        .unwrap()
        .pop()
        .unwrap();
    std::fs::write(&f, b"").unwrap();
    let err = index.update(&[trail]).unwrap_err();
    assert!(matches!(err, IndexError::Shrunk { .. }), "{err}");
}

/// The files' sizes in `dir`, the index left out.
fn trail_bytes(dir: &std::path::Path) -> u64 {
    let files = tollgate_audit::trail_files(&[dir.to_owned()]).unwrap();
    files.iter().map(|f| f.metadata().unwrap().len()).sum()
}

#[test]
fn indexing_reports_growing_positions_up_to_what_the_files_grew_by() {
    let dir = tempfile::tempdir().unwrap();
    let mut traffic = Traffic::new(50, Duration::from_secs(1));
    // More records than a transaction holds: several reports.
    write(dir.path(), traffic.by_ref().take(30_000));
    let paths = [dir.path().to_owned()];
    let mut index = Index::open(&Index::path_for(dir.path())).unwrap();
    let mut seen = Vec::new();
    let first = index.update_with_progress(&paths, &mut |p| seen.push(p)).unwrap();
    let size = trail_bytes(dir.path());
    assert_eq!(first.bytes, size);
    assert!(seen.len() >= 3, "the start, a batch and the end: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].done <= w[1].done), "{seen:?}");
    assert!(seen.iter().all(|p| p.total == size), "{seen:?}");
    assert_eq!(seen.last().map(|p| p.done), Some(size));

    // An update reports only what was added since.
    write(dir.path(), traffic.by_ref().take(1_000));
    let mut again = Vec::new();
    index.update_with_progress(&paths, &mut |p| again.push(p)).unwrap();
    let grown = trail_bytes(dir.path()) - size;
    assert_eq!(again.last().map(|p| (p.done, p.total)), Some((grown, grown)));

    let mut rebuilt = Vec::new();
    index.rebuild_with_progress(&paths, &mut |p| rebuilt.push(p)).unwrap();
    assert_eq!(rebuilt.last().map(|p| p.done), Some(size + grown));
}
