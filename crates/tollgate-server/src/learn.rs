//! What the gateway learns from answers it passed on unread, once they
//! have been sent (off the request's latency): the tools of an unfiltered
//! `tools/list` answer (for the catalog: annotations and definition
//! revisions) and the protocol versions an upstream announces in its
//! `server/discover` or `initialize` answers (for the `supported` list of
//! `-32022` errors).
//!
//! A `tools/list` answer is learned once per change: its result is
//! fingerprinted and an answer identical to the last one learned for the
//! route is not parsed again.

use tollgate_core::McpMethod;

use crate::facts::Facts;
use crate::route::Route;
use crate::summary::Sent;

/// Most of an unfiltered `tools/list` answer kept aside to learn from.
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Whether the whole answer of this call is wanted: an unfiltered
/// `tools/list` (routes with policies learn while filtering).
pub(crate) fn wants_whole_answer(route: &Route, facts: &Facts, family: McpMethod) -> bool {
    family == McpMethod::ToolsList && route.shared.policy.is_none() && facts.forwarded.is_some()
}

/// Learn from a sent answer, when it is one the gateway learns from.
pub(crate) fn from_answer(route: &Route, facts: &Facts, sent: &Sent) {
    if facts.forwarded.is_none() || sent.status >= 300 || sent.tee.is_empty() {
        return;
    }
    match facts.family() {
        McpMethod::ToolsList if sent.complete && wants_whole_answer(route, facts, McpMethod::ToolsList) => {
            route
                .shared
                .catalog
                .learn_answer(&route.name, &sent.tee_bytes(), sent.sse);
        }
        McpMethod::Discover | McpMethod::Initialize => route.learn_versions(&sent.tee_bytes(), sent.sse),
        _ => {}
    }
}
