//! The decision cache's promise of no work per lookup beyond a hash and a
//! probe: a decision found in the cache makes no heap allocation, and a
//! cached list costs the same allocations however many entries it has.
//!
//! `allocation_counter` replaces this binary's global allocator and counts
//! the allocations of the measuring thread only.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::time::{Duration, UNIX_EPOCH};

use allocation_counter::measure;
use common::{engine, user};
use tollgate_policy::{CallRequest, ListItem, ListRequest, TargetKind};

/// Reads every context input that goes into a cache key (method, era,
/// client address, time, annotations, arguments), and permits only
/// read-only tools: a destructive one is denied by default, so its decision
/// has no determining policy and cloning it allocates nothing.
const READS_EVERYTHING: &str = r#"
@id("read-only")
permit (principal, action == Tollgate::Action::"call_tool", resource in Tollgate::Server::"demo")
when {
  context.method == "tools/call" && context.era == "modern" && !(context has client_ip) &&
  context.minute >= 0 && context.hour >= 0 && context.weekday >= 1 &&
  context.annotations.read_only && !context.args.hasTag("force")
};
"#;

/// A fixed time, so the minute in the key does not move between calls.
fn noon() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_796_212_800)
}

#[test]
fn a_cached_decision_is_found_without_allocating() {
    let (_d, e) = engine(&[("reads.cedar", READS_EVERYTHING)]);
    let alice = user("alice", &["dev"], Some("payments"), &["mcp:tools"]);
    let args = [("Repo", "prod-ledger"), ("Branch", "main")];
    let req = CallRequest::new("demo", "tools/call")
        .name(Some("delete_everything"))
        .args(&args)
        .at(noon());
    let first = measure(|| assert!(!e.decide(&alice, &req).allowed));
    assert!(first.count_total > 0, "the first decision is computed: {first:?}");
    let mut hit = None;
    let cached = measure(|| hit = Some(e.decide(&alice, &req)));
    assert_eq!(cached.count_total, 0, "{cached:?}");
    let hit = hit.unwrap();
    assert!(!hit.allowed && hit.determining_policy_ids.is_empty());
    // Through a virtual server: a decision of its own, found the same way.
    let through = req.virtual_server(Some("engineering"));
    let first = measure(|| assert!(!e.decide(&alice, &through).allowed));
    assert!(first.count_total > 0, "not the route's decision: {first:?}");
    let cached = measure(|| assert!(!e.decide(&alice, &through).allowed));
    assert_eq!(cached.count_total, 0, "{cached:?}");
}

#[test]
fn a_cached_list_allocates_the_same_for_any_length() {
    let (_d, e) = engine(&[("reads.cedar", READS_EVERYTHING)]);
    let alice = user("alice", &[], None, &[]);
    let mut list = ListRequest::new("demo", TargetKind::Tool);
    list.time = Some(noon());
    let names: Vec<String> = (0..64).map(|i| format!("tool_{i}")).collect();
    let items: Vec<ListItem<'_>> = names.iter().map(|n| ListItem::from(n.as_str())).collect();
    let cached = |n: usize| {
        e.filter(&alice, &list, &items[..n]);
        measure(|| assert_eq!(e.filter(&alice, &list, &items[..n]).hidden(), n)).count_total
    };
    assert_eq!(
        cached(4),
        cached(64),
        "allocations of a cached list of 4 and of 64 entries"
    );
}
