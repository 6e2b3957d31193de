//! The audit index on a large generated trail (`make bench`, through
//! `bench/index.sh`): indexing rate, a filtered query (one subject, one
//! month), a month's usage grouped by team, and the same two questions
//! answered by reading the files, for comparison. Prints a Markdown table.
//!
//! INDEX_BENCH_RECORDS (default 10,000,000) records spread over 92 days
//! from 2026-09-01, by 1,000 subjects in 20 teams; the trail is written
//! once through the real audit sink into INDEX_BENCH_DIR (default
//! `$CARGO_TARGET_DIR/index-bench`) and reused while the count is the same.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark")]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark's size and place come from bench/index.sh"
)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use common::{Traffic, bench_size, subject_month, write};
use tollgate_audit::{Filter, Phase};
use tollgate_index::{Index, IndexedCall};
use tollgate_meter::{GroupBy, Usage};

const DAYS: u64 = 92;

fn main() {
    let (records, root) = bench_size("INDEX_BENCH", "index-bench");
    let trail = root.join(format!("trail-{records}"));
    let written = ensure_trail(&trail, records);
    let bytes: u64 = tollgate_audit::trail_files(std::slice::from_ref(&trail))
        .unwrap()
        .iter()
        .map(|f| f.metadata().unwrap().len())
        .sum();

    let index_path = root.join(format!("index-{records}.sqlite"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index_path.display()));
    }
    let mut index = Index::open(&index_path).unwrap();
    let started = Instant::now();
    let progress = index.update(std::slice::from_ref(&trail)).unwrap();
    let indexing = started.elapsed();
    assert_eq!(progress.records, records);
    let index_bytes = index_path.metadata().unwrap().len();

    let (month, filter) = subject_month();
    let (query_time, hits) = best_of(3, || index.query(filter.clone()).unwrap().filter(Result::is_ok).count());
    let (usage_time, teams) = best_of(3, || usage_from_index(&index, month));
    let (scan_query, scan_hits) = timed(|| {
        tollgate_audit::query(std::slice::from_ref(&trail), filter.clone())
            .unwrap()
            .count()
    });
    assert_eq!(scan_hits, hits, "the index and the files agree");
    let (scan_usage, scan_teams) = timed(|| usage_from_files(&trail, month));
    assert_eq!(scan_teams, teams);

    let rate = records as f64 / indexing.as_secs_f64();
    println!("| Measure | Index | Reading the files | Target |");
    println!("|---|---|---|---|");
    println!(
        "| Records | {records} ({:.1} GiB of JSON lines; trail {}) | | 10,000,000 |",
        gib(bytes),
        if written { "written now" } else { "reused" }
    );
    println!(
        "| Indexing | {:.1} s, {:.0} records/s; index {:.2} GiB | | ≥ 50,000 records/s |",
        indexing.as_secs_f64(),
        rate,
        gib(index_bytes)
    );
    println!(
        "| One subject, one month ({hits} records) | {} | {} | ≤ 1 s |",
        ms(query_time),
        ms(scan_query)
    );
    println!(
        "| A month's usage by team ({teams} teams) | {} | {} | ≤ 3 s |",
        ms(usage_time),
        ms(scan_usage)
    );
}

fn ensure_trail(trail: &Path, records: u64) -> bool {
    let done = trail.join(".complete");
    if done.exists() {
        return false;
    }
    let _ = std::fs::remove_dir_all(trail);
    std::fs::create_dir_all(trail).unwrap();
    let spacing = Duration::from_nanos(DAYS * 86_400 * 1_000_000_000 / records);
    let started = Instant::now();
    write(trail, Traffic::new(1000, spacing).take(records as usize));
    eprintln!("wrote {records} records in {:.1} s", started.elapsed().as_secs_f64());
    std::fs::write(&done, b"").unwrap();
    true
}

fn usage_from_index(index: &Index, (since, until): (SystemTime, SystemTime)) -> usize {
    let mut usage = Usage::new(GroupBy::Team);
    index.calls(Some(since), Some(until), |c| usage.add(&c.usage)).unwrap();
    usage.finish().rows.len()
}

fn usage_from_files(trail: &Path, (since, until): (SystemTime, SystemTime)) -> usize {
    let mut usage = Usage::new(GroupBy::Team);
    let filter = Filter {
        since: Some(since),
        until: Some(until),
        ..Filter::default()
    };
    for e in tollgate_audit::query(&[trail.to_owned()], filter).unwrap() {
        let r = e.unwrap().record;
        if r.phase != Phase::Complete {
            continue;
        }
        usage.add(&IndexedCall::from(&r).usage);
    }
    usage.finish().rows.len()
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = None;
    for _ in 0..n {
        let (d, v) = timed(&mut f);
        if best.as_ref().is_none_or(|(b, _)| d < *b) {
            best = Some((d, v));
        }
    }
    best.unwrap()
}

fn timed<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let started = Instant::now();
    let v = f();
    (started.elapsed(), v)
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}
