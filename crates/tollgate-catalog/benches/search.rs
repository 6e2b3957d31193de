//! What `find_tools` costs on a large catalog (target: ≤ 1 ms p50 over
//! 5,000 tools).
//!
//! The 5,000 tools are the quality fixture's catalog
//! (`tests/fixtures/search/tools.json`, modelled on real MCP servers)
//! repeated under ten member prefixes (`github0_…` to `github9_…`), so
//! every term's postings are ten times longer than in a catalog of 5,000
//! different tools: a pessimistic case. The queries are the fixture's
//! labelled natural-language queries.
//!
//! Before criterion runs, the bench times every query on its own many
//! times and prints the p50 and p99 of those single searches.
//!
//! - `find_tools/5000_tools`: one search for the top 10, round-robin over
//!   the queries, all tools allowed.
//! - `find_tools/5000_tools_filtered`: the same with a per-caller filter
//!   that hides one tool in three.
//! - `build/5000_tools`: building the index (done when the catalog
//!   changes, not per request).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark harness")]

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use tollgate_catalog::ToolIndex;

const TOOLS: &str = include_str!("../../../tests/fixtures/search/tools.json");
const QUERIES: &str = include_str!("../../../tests/fixtures/search/queries.json");

/// The fixture's tools, repeated under ten prefixes until there are 5,000.
fn catalog() -> Vec<(String, Value)> {
    let doc: Value = serde_json::from_str(TOOLS).unwrap();
    let mut base = Vec::new();
    for server in doc["servers"].as_array().unwrap() {
        let prefix = server["server"].as_str().unwrap();
        for tool in server["tools"].as_array().unwrap() {
            base.push((prefix.to_owned(), tool.clone()));
        }
    }
    let mut tools = Vec::new();
    for copy in 0.. {
        for (prefix, tool) in &base {
            if tools.len() == 5_000 {
                return tools;
            }
            tools.push((
                format!("{prefix}{copy}_{}", tool["name"].as_str().unwrap()),
                tool.clone(),
            ));
        }
    }
    tools
}

fn queries() -> Vec<String> {
    let doc: Value = serde_json::from_str(QUERIES).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .map(|q| q["query"].as_str().unwrap().to_owned())
        .collect()
}

/// The p50 and p99 of single searches, each query timed on its own.
fn print_percentiles(index: &ToolIndex, queries: &[String]) {
    let mut samples = Vec::new();
    for _ in 0..200 {
        for query in queries {
            let start = Instant::now();
            black_box(index.search(black_box(query), 10, |_| true));
            samples.push(start.elapsed());
        }
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "find_tools over {} tools, {} queries x 200: p50 {:?}, p99 {:?}, max {:?}",
        index.len(),
        queries.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

fn bench(c: &mut Criterion) {
    let tools = catalog();
    let queries = queries();
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (n.as_str(), d)));
    print_percentiles(&index, &queries);

    let mut group = c.benchmark_group("find_tools");
    let mut next = 0usize;
    group.bench_function("5000_tools", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            black_box(index.search(black_box(&queries[next]), 10, |_| true))
        })
    });
    group.bench_function("5000_tools_filtered", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            black_box(index.search(black_box(&queries[next]), 10, |pos| pos % 3 != 0))
        })
    });
    group.finish();

    c.bench_function("build/5000_tools", |b| {
        b.iter(|| ToolIndex::build(tools.iter().map(|(n, d)| (n.as_str(), d))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
