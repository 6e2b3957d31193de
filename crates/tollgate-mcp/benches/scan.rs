//! Body scan cost (request path step 6): a typical 1 KiB `tools/call`
//! whose arguments the scan skips, read for its method, tool name and
//! `_meta` version.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "benchmark harness")]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tollgate_mcp::{Scanned, scan};

/// A `tools/call` of about 1 KiB: a few scalar arguments, a nested filter
/// object, an array of strings and a text payload.
fn tools_call() -> Vec<u8> {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(12);
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {
            "name": "search_issues",
            "arguments": {
                "repository": "example-org/example-repo",
                "query": "label:bug state:open sort:updated-desc",
                "limit": 50,
                "include_closed": false,
                "filter": {"author": "alice", "labels": ["bug", "p1", "regression"], "since": "2026-01-01T00:00:00Z"},
                "fields": ["title", "body", "labels", "assignees", "milestone", "comments"],
                "note": text,
            },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "progressToken": 17,
            },
        },
    });
    serde_json::to_vec(&body).unwrap()
}

fn bench(c: &mut Criterion) {
    let body = tools_call();
    assert!((900..1200).contains(&body.len()), "body is {} bytes", body.len());
    let Ok(Scanned::Single(m)) = scan(&body) else {
        panic!("the body must scan")
    };
    assert_eq!(m.name.as_deref(), Some("search_issues"));
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("tools_call_1k", |b| b.iter(|| scan(black_box(&body)).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
