//! What the gateway learns from answers it passed on unread, once they
//! have been sent (off the request's latency): the protocol versions an
//! upstream announces in its `server/discover` or `initialize` answers (for
//! the `supported` list of `-32022` errors); a change an upstream announces
//! (`notifications/*/list_changed`), which asks the route's catalog for a
//! new sync; and, on a route with the catalog gate off (not synced), the
//! definitions its list answers show — parsed only when an answer differs
//! from the last one learned.

use std::sync::LazyLock;

use bytes::Bytes;
use memchr::memmem::Finder;
use serde_json::Value;
use tollgate_catalog::{Definition, Kind, Mode};
use tollgate_core::McpMethod;
use tollgate_mcp::answer_messages;

use crate::facts::Facts;
use crate::lists;
use crate::route::Route;
use crate::summary::Sent;

/// Most of an unfiltered list answer kept aside to learn from.
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Whether the whole answer of this call is wanted: a list answer on a
/// route that learns its catalog from answers and does not filter it
/// (filtering learns as it parses).
pub(crate) fn wants_whole_answer(route: &Route, facts: &Facts) -> bool {
    route.catalog.mode == Mode::Off
        && facts.forwarded.is_some()
        && lists::list_of(facts.family()).is_some()
        && !lists::filters(route, facts.family())
}

/// Learn from a sent answer, when it is one the gateway learns from.
pub(crate) fn from_answer(route: &Route, facts: &Facts, sent: &Sent) {
    if facts.forwarded.is_none() || sent.status >= 300 || sent.tee.is_empty() {
        return;
    }
    match facts.family() {
        McpMethod::Discover | McpMethod::Initialize => route.learn_versions(&sent.tee_bytes(), sent.sse),
        family if sent.complete && wants_whole_answer(route, facts) => {
            if let Some((kind, _)) = lists::list_of(family) {
                learn_list(route, kind, &sent.tee_bytes(), sent.sse);
            }
        }
        _ => {}
    }
}

/// Learn the definitions of a list answer, when it changed.
fn learn_list(route: &Route, kind: Kind, answer: &Bytes, sse: bool) {
    if !route.catalog.page_changed(kind, answer) {
        return;
    }
    for msg in answer_messages(answer, sse) {
        let Ok(msg) = serde_json::from_slice::<Value>(&msg) else {
            continue;
        };
        let Some(entries) = msg
            .pointer(&format!("/result/{}", kind.result_key()))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let definitions = entries
            .iter()
            .filter_map(|e| Definition::new(kind, e.clone()).ok())
            .collect();
        route.catalog.learn(definitions);
    }
}

/// Whether a frame of an upstream's SSE stream announces that one of its
/// lists changed.
pub(crate) fn announces_change(frame: &Bytes) -> bool {
    static LIST_CHANGED: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"/list_changed\""));
    LIST_CHANGED.find(frame).is_some()
}
