//! Terms, field weighting, filtering and truncation of the tool index.

use serde_json::{Value, json};

use super::*;

fn all_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    text::terms(text, |t| out.push(t.to_owned()));
    out
}

fn tool(description: &str, properties: Value) -> Value {
    json!({ "description": description, "inputSchema": { "type": "object", "properties": properties } })
}

fn names(index: &ToolIndex, tools: &[(&str, Value)], query: &str) -> Vec<String> {
    index
        .search(query, 10, |_| true)
        .into_iter()
        .map(|(pos, _)| tools[pos].0.to_owned())
        .collect()
}

#[test]
fn words_split_on_case_and_separators() {
    assert_eq!(all_terms("createIssue"), ["creat", "issu"]);
    assert_eq!(all_terms("create_issue"), ["creat", "issu"]);
    assert_eq!(all_terms("get-pull-request"), ["get", "pull", "request"]);
    assert_eq!(
        all_terms("HTTPServer s3Bucket ec2"),
        ["http", "server", "s3", "bucket", "ec2"]
    );
    assert_eq!(
        all_terms("Creating issues, the user's ISSUES"),
        ["creat", "issu", "user", "issu"]
    );
    assert_eq!(all_terms("Grüße"), ["grüße"]);
}

#[test]
fn inflections_meet_their_stem() {
    let stem = |w: &str| {
        let mut s = w.to_owned();
        text::stem(&mut s);
        s
    };
    for group in [
        &["create", "creates", "created", "creating"][..],
        &["policy", "policies"],
        &["reply", "replies", "replied"],
        &["run", "running", "runs"],
        &["branch", "branches"],
        &["address", "addresses"],
        &["schedule", "scheduled", "scheduling"],
        &["bill", "billing", "bills"],
        &["status", "statuses"],
        &["id", "ids"],
    ] {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        assert!(stems.iter().all(|s| *s == stems[0]), "{group:?} → {stems:?}");
    }
    assert_eq!(stem("slowest"), "slow");
    assert_eq!(stem("latest"), stem("late"));
    assert_eq!(stem("request"), "request");
    assert_eq!(stem("string"), "string");
    assert_eq!(stem("need"), "need");
}

#[test]
fn stop_words_are_sorted_and_dropped() {
    assert!(text::STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(all_terms("what is the weather in a city"), ["weather", "city"]);
}

#[test]
fn the_name_outweighs_the_description() {
    let tools = [
        (
            "docs_search",
            tool("Search the documentation for a page about an issue.", json!({})),
        ),
        (
            "github_create_issue",
            tool("Open a new ticket in a repository.", json!({})),
        ),
    ];
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (*n, d)));
    assert_eq!(index.len(), 2);
    assert_eq!(
        names(&index, &tools, "create an issue"),
        ["github_create_issue", "docs_search"]
    );
}

#[test]
fn arguments_and_titles_are_searched() {
    let tools = [
        (
            "a",
            tool("Does one thing.", json!({ "timezone": { "type": "string" } })),
        ),
        (
            "b",
            tool(
                "Does another.",
                json!({ "x": { "type": "string", "description": "The invoice number" } }),
            ),
        ),
        ("c", json!({ "annotations": { "title": "Page the on-call engineer" } })),
        (
            "d",
            json!({ "title": "Nothing relevant", "inputSchema": { "properties": {
            "items": { "type": "array", "items": { "properties": { "sku": { "description": "Stock keeping unit" } } } }
        } } }),
        ),
    ];
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (*n, d)));
    assert_eq!(names(&index, &tools, "timezone"), ["a"]);
    assert_eq!(names(&index, &tools, "invoices"), ["b"]);
    assert_eq!(names(&index, &tools, "paging on call"), ["c"]);
    assert_eq!(names(&index, &tools, "stock keeping"), ["d"]);
}

#[test]
fn a_query_term_matches_the_terms_it_begins() {
    let tools = [
        ("list_repositories", tool("Lists repositories.", json!({}))),
        ("list_reviews", tool("Lists reviews.", json!({}))),
    ];
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (*n, d)));
    assert_eq!(names(&index, &tools, "repo"), ["list_repositories"]);
}

#[test]
fn filtering_happens_before_truncation() {
    let tools: Vec<(String, Value)> = (0..20)
        .map(|i| (format!("tool_{i}"), tool(&format!("Send message {i}"), json!({}))))
        .collect();
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (n.as_str(), d)));
    let hits = index.search("send a message", 3, |pos| pos % 2 == 1);
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        [1, 3, 5],
        "equal scores keep build order"
    );
    assert!(hits.iter().all(|h| h.1 > 0.0));
    assert!(index.search("send", 0, |_| true).is_empty());
    assert!(index.search("the of and", 5, |_| true).is_empty());
    assert!(index.search("unrelated", 5, |_| true).is_empty());
}

#[test]
fn results_are_best_first_and_bounded() {
    let tools = [
        (
            "slack_post_message",
            tool("Post a message to a channel.", json!({ "channel": {}, "text": {} })),
        ),
        (
            "slack_list_channels",
            tool("List the channels of the workspace.", json!({})),
        ),
        (
            "email_send",
            tool("Send an email message.", json!({ "to": {}, "subject": {} })),
        ),
    ];
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (*n, d)));
    let hits = index.search("post a message to a channel", 2, |_| true);
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].0, 0);
    assert!(hits[0].1 >= hits[1].1);
}

#[test]
fn an_empty_index_finds_nothing() {
    let index = ToolIndex::build(std::iter::empty());
    assert!(index.is_empty());
    assert!(index.search("anything", 5, |_| true).is_empty());
}

#[test]
fn only_the_first_query_terms_count() {
    let tools = [("target_tool", tool("Finds the needle.", json!({})))];
    let index = ToolIndex::build(tools.iter().map(|(n, d)| (*n, d)));
    let filler: Vec<String> = (0..MAX_QUERY_TERMS).map(|i| format!("word{i}")).collect();
    let late = format!("{} needle", filler.join(" "));
    assert!(index.search(&late, 5, |_| true).is_empty());
    let early = format!("needle {}", filler.join(" "));
    assert_eq!(index.search(&early, 5, |_| true).len(), 1);
    let repeated = "needle ".repeat(10_000);
    assert_eq!(index.search(&repeated, 5, |_| true).len(), 1);
}
