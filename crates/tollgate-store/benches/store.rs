//! The fleet store on a large generated fleet (`bench/store.sh`): three
//! replicas' trails written through the real audit sink, each shipped by
//! the real shipper into a real PostgreSQL (records/s per replica), then
//! the two questions of issue 26 timed on the store: one subject's month
//! (what `tollgate audit query --store --subject --since --until` reads:
//! every matching stored line, parsed) and a month's spend by team (what
//! `tollgate usage --store --by team` sums in SQL), with the console's
//! search beside them. Prints a Markdown table.
//!
//! STORE_BENCH_RECORDS (default 10,000,000) records over 92 days from
//! 2026-09-01 by 1,000 subjects in 20 teams (the audit index benchmark's
//! traffic), every third record on each replica. A replica's files are
//! written, shipped, then deleted before the next, so the disk holds one
//! replica's files beside the database. STORE_BENCH_DIR (default
//! `$CARGO_TARGET_DIR/store-bench`) holds the files; the database lives
//! in `$TMPDIR` and is removed at the end.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark")]
#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark's size and place come from bench/store.sh"
)]

#[path = "../../tollgate-index/tests/common/mod.rs"]
mod common;
#[allow(
    unused_imports,
    unreachable_pub,
    dead_code,
    reason = "the tests' PostgreSQL, in part"
)]
#[path = "../../../tests/src/postgres.rs"]
mod postgres;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use common::{Traffic, bench_size, subject_month, write};
use tollgate_audit::Filter;
use tollgate_config::Price;
use tollgate_limit::Prices;
use tollgate_meter::GroupBy;
use tollgate_store::{ShipSettings, Shipper, Store, StoreSettings, UsageQuestion};

const DAYS: u64 = 92;
const REPLICAS: u64 = 3;

/// PostgreSQL settings for a database of this size (the rest as the
/// tests run it: fsync and synchronous commit off).
const TUNING: [&str; 4] = [
    "shared_buffers = '4GB'",
    "work_mem = '64MB'",
    "max_wal_size = '2GB'",
    "max_parallel_workers_per_gather = 2",
];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (records, root) = bench_size("STORE_BENCH", "store-bench");
    let mut pg = postgres::PostgresServer::start().await;
    for setting in TUNING {
        pg.psql(&format!("ALTER SYSTEM SET {setting}")).await;
    }
    pg.stop().await;
    pg.start_again().await;
    let store = Store::new(&StoreSettings::new(pg.url())).unwrap();
    store.prepare(true).await.unwrap();

    let mut rows = Vec::new();
    let mut file_bytes = 0;
    for k in 0..REPLICAS {
        let (line, bytes) = replica(&store, &root, records, k).await;
        rows.push(line);
        file_bytes += bytes;
    }
    pg.psql("VACUUM ANALYZE audit_records").await;
    let table = pg
        .psql("SELECT pg_size_pretty(pg_total_relation_size('audit_records_2026_10')), pg_size_pretty(sum(pg_total_relation_size(inhrelid))) FROM pg_inherits WHERE inhparent = 'audit_records'::regclass")
        .await;

    if let Some(secs) = std::env::var("STORE_BENCH_PAUSE").ok().and_then(|v| v.parse().ok()) {
        // Room to look at the plans: `psql URL` while it waits.
        eprintln!("the store: {} (for {secs} s)", pg.url());
        tokio::time::sleep(Duration::from_secs(secs)).await;
    }
    let (month, filter) = subject_month();
    let (query_time, hits) = best_of(3, || async {
        let mut records = store.records(filter.clone()).await.unwrap();
        let mut n = 0;
        while let Some(e) = records.next().await {
            e.unwrap();
            n += 1;
        }
        n
    })
    .await;
    let (search_time, (found, _)) = best_of(3, || async { store.search(&filter, 1000, false).await.unwrap() }).await;
    assert_eq!(found.len(), hits.min(1000));

    let prices = Prices::new(
        vec![Price {
            routes: vec!["server01".into()],
            tools: vec![],
            per_million_tokens: 3.0,
        }],
        "EUR",
    );
    let question = UsageQuestion {
        by: GroupBy::Team,
        since: Some(month.0),
        until: Some(month.1),
        step: None,
    };
    let (usage_time, (report, _)) = best_of(3, || async { store.usage(question, &prices).await.unwrap() }).await;
    let series = UsageQuestion {
        step: Some(86_400),
        ..question
    };
    let (console_time, _) = best_of(3, || async { store.usage(series, &prices).await.unwrap() }).await;
    // Prices that name tools: the price of each call decided by its name.
    let per_tool = Prices::new(
        vec![Price {
            routes: vec![],
            tools: vec!["search*".into()],
            per_million_tokens: 3.0,
        }],
        "EUR",
    );
    let (per_tool_time, _) = best_of(3, || async { store.usage(series, &per_tool).await.unwrap() }).await;
    let (stream_time, streamed) = timed(|| async { streamed_usage(&store, month, &prices).await }).await;
    assert_eq!(report, streamed, "SQL sums equal the sums of the stored lines");

    println!("| Measure | Result | Target |");
    println!("|---|---|---|");
    println!(
        "| Records | {records} over {REPLICAS} replicas ({:.1} GiB of JSON lines; in PostgreSQL: {}) | 10,000,000 |",
        gib(file_bytes),
        table.replace('|', ", all months ")
    );
    for r in rows {
        println!("{r}");
    }
    println!(
        "| One subject's month, `audit query --store` ({hits} records, read and parsed) | {} | ≤ 1 s |",
        ms(query_time)
    );
    println!(
        "| The same, console search (first 1,000) | {} | ≤ 1 s |",
        ms(search_time)
    );
    println!(
        "| A month's spend by team, `usage --store --by team` in SQL ({} teams, {} calls) | {} | ≤ 3 s |",
        report.rows.len(),
        report.total.calls,
        ms(usage_time)
    );
    println!(
        "| The same with the console's daily series (prices per server) | {} | ≤ 3 s |",
        ms(console_time)
    );
    println!("| The same with prices per tool | {} | ≤ 3 s |", ms(per_tool_time));
    println!(
        "| The same summed from every stored line (before: streaming and parsing) | {} | |",
        ms(stream_time)
    );
}

/// Write replica `k`'s records through the real sink, ship them with the
/// real shipper, delete the files; its table row and the files' size.
async fn replica(store: &Store, root: &Path, records: u64, k: u64) -> (String, u64) {
    let dir = root.join(format!("r{}", k + 1));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let spacing = Duration::from_nanos(DAYS * 86_400 * 1_000_000_000 / records);
    let (write_dir, count) = (dir.clone(), records);
    let started = Instant::now();
    tokio::task::spawn_blocking(move || {
        let mine = Traffic::new(1000, spacing)
            .take(usize::try_from(count).unwrap())
            .skip(usize::try_from(k).unwrap())
            .step_by(REPLICAS as usize);
        write(&write_dir, mine);
    })
    .await
    .unwrap();
    let writing = started.elapsed();
    let bytes: u64 = tollgate_audit::trail_files(std::slice::from_ref(&dir))
        .unwrap()
        .iter()
        .map(|f| f.metadata().unwrap().len())
        .sum();
    let mut shipper = Shipper::new(store.clone(), ShipSettings::new(format!("r{}", k + 1), &dir));
    let started = Instant::now();
    let mut lines = 0;
    loop {
        let p = shipper.pass().await.unwrap();
        lines += p.lines;
        if p.lines == 0 {
            break;
        }
    }
    let shipping = started.elapsed();
    std::fs::remove_dir_all(&dir).unwrap();
    let row = format!(
        "| Replica r{}: {lines} lines written through the sink in {:.1} s, shipped in {:.1} s | {:.0} records/s | ≥ 20,000 records/s |",
        k + 1,
        writing.as_secs_f64(),
        shipping.as_secs_f64(),
        lines as f64 / shipping.as_secs_f64()
    );
    eprintln!("{row}");
    (row, bytes)
}

/// The report summed from every stored line of the window, as
/// `tollgate usage --store` did before it summed in SQL.
async fn streamed_usage(
    store: &Store,
    (since, until): (SystemTime, SystemTime),
    prices: &Prices,
) -> tollgate_meter::UsageReport {
    let filter = Filter {
        since: Some(since),
        until: Some(until),
        ..Filter::default()
    };
    let mut records = store.records(filter).await.unwrap();
    let mut usage = tollgate_meter::Usage::new(GroupBy::Team);
    while let Some(e) = records.next().await {
        let r = e.unwrap().record;
        if r.phase == tollgate_audit::Phase::Complete {
            usage.add(&tollgate_report::spend::sample(&r, prices));
        }
    }
    let mut report = usage.finish();
    report.currency = prices.currency().map(str::to_owned);
    report
}

async fn best_of<T, F: Future<Output = T>>(n: usize, mut f: impl FnMut() -> F) -> (Duration, T) {
    let mut best: Option<(Duration, T)> = None;
    for _ in 0..n {
        let (d, v) = timed(&mut f).await;
        if best.as_ref().is_none_or(|(b, _)| d < *b) {
            best = Some((d, v));
        }
    }
    best.unwrap()
}

async fn timed<T, F: Future<Output = T>>(f: impl FnOnce() -> F) -> (Duration, T) {
    let started = Instant::now();
    let v = f().await;
    (started.elapsed(), v)
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}
