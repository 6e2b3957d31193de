//! Tool search quality on a labelled set: the catalog of
//! `tests/fixtures/search/tools.json` (tools modelled on real MCP servers,
//! exposed as `{server}_{name}` the way a virtual server prefixes them) and
//! the natural-language queries of `queries.json`, each with the tools that
//! would answer it.
//!
//! Reports recall@5 (the share of queries with a relevant tool among the
//! first five results) and the mean reciprocal rank of the first relevant
//! tool, and requires recall@5 ≥ 0.85. The queries missed are printed for
//! whoever tunes the ranker (`cargo test -p tollgate-catalog --test
//! search_quality -- --nocapture`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

use std::collections::HashSet;

use serde_json::Value;
use tollgate_catalog::ToolIndex;

const TOOLS: &str = include_str!("../../../tests/fixtures/search/tools.json");
const QUERIES: &str = include_str!("../../../tests/fixtures/search/queries.json");

/// The exposed name and definition of every tool in the catalog.
fn catalog() -> Vec<(String, Value)> {
    let doc: Value = serde_json::from_str(TOOLS).unwrap();
    let mut tools = Vec::new();
    for server in doc["servers"].as_array().unwrap() {
        let prefix = server["server"].as_str().unwrap();
        for tool in server["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            tools.push((format!("{prefix}_{name}"), tool.clone()));
        }
    }
    tools
}

/// Each query with the exposed names of its relevant tools.
fn queries() -> Vec<(String, Vec<String>)> {
    let doc: Value = serde_json::from_str(QUERIES).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let relevant = q["relevant"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_owned())
                .collect();
            (q["query"].as_str().unwrap().to_owned(), relevant)
        })
        .collect()
}

#[test]
fn recall_at_5_over_the_labelled_queries() {
    let tools = catalog();
    let queries = queries();
    assert!(tools.len() >= 500, "the catalog has {} tools", tools.len());
    assert!(queries.len() >= 60, "{} labelled queries", queries.len());
    let names: HashSet<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), tools.len(), "exposed names are unique");
    for (query, relevant) in &queries {
        assert!(!relevant.is_empty(), "{query:?} has no relevant tool");
        for name in relevant {
            assert!(names.contains(name.as_str()), "{query:?}: no tool {name}");
        }
    }

    let index = ToolIndex::build(tools.iter().map(|(n, d)| (n.as_str(), d)));
    assert_eq!(index.len(), tools.len());
    let (mut hits_at_5, mut reciprocal_ranks) = (0usize, 0.0f64);
    for (query, relevant) in &queries {
        let ranked: Vec<&str> = index
            .search(query, 100, |_| true)
            .iter()
            .map(|(pos, _)| tools[*pos].0.as_str())
            .collect();
        let first = ranked.iter().position(|name| relevant.iter().any(|r| r == name));
        if let Some(rank) = first {
            reciprocal_ranks += 1.0 / (rank as f64 + 1.0);
        }
        if first.is_some_and(|rank| rank < 5) {
            hits_at_5 += 1;
        } else {
            println!(
                "miss: {query:?} (first relevant at {first:?}), top 5: {:?}",
                &ranked[..ranked.len().min(5)]
            );
        }
    }
    let recall = hits_at_5 as f64 / queries.len() as f64;
    let mrr = reciprocal_ranks / queries.len() as f64;
    println!(
        "tool search over {} tools, {} queries: recall@5 = {recall:.3}, MRR = {mrr:.3}",
        tools.len(),
        queries.len()
    );
    assert!(recall >= 0.85, "recall@5 = {recall:.3} < 0.85");
}
