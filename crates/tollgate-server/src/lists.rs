//! Part of phase 11 (respond): a caller only sees what it may use.
//!
//! The answers to `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list` on a route with policies are read whole
//! (they are small and rare), parsed, and every entry the caller may not
//! use is removed — in a JSON answer or in each SSE event carrying the
//! result (read with the one SSE reader, `tollgate_mcp::sse`), on every
//! page. A filtered result is marked `cacheScope: "private"`: it depends on
//! who asked. An answer that cannot be parsed, or is larger than
//! [`MAX_LIST_BYTES`], is refused with `list_unfilterable`: the caller
//! never gets the unfiltered list. `tools/list` answers also teach the
//! catalog each tool's annotations and definition revision.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;
use tollgate_core::{Era, ErrorKind, Hidden, McpMethod, Principal};
use tollgate_mcp::sse;
use tollgate_policy::{ListItem, ListRequest, PolicyEngine, TargetKind};

use crate::catalog::{Tool, annotations};
use crate::facts::Facts;
use crate::rescue::Rejection;
use crate::route::Route;

/// Largest list answer the gateway filters.
pub(crate) const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;

/// The list a method returns: kind of entry, result key, entry name key.
pub(crate) fn list_of(method: McpMethod) -> Option<(TargetKind, &'static str, &'static str)> {
    match method {
        McpMethod::ToolsList => Some((TargetKind::Tool, "tools", "name")),
        McpMethod::PromptsList => Some((TargetKind::Prompt, "prompts", "name")),
        McpMethod::ResourcesList => Some((TargetKind::Resource, "resources", "uri")),
        McpMethod::ResourceTemplatesList => Some((TargetKind::Resource, "resourceTemplates", "uriTemplate")),
        _ => None,
    }
}

/// Whether the answer to the call of `facts` is a list the route's
/// policies filter.
pub(crate) fn filters(route: &Route, facts: &Facts) -> bool {
    route.shared.policy.is_some() && list_of(facts.family()).is_some()
}

/// Filter the list answer `res` for the caller of `facts`; other answers
/// pass untouched.
///
/// # Errors
///
/// `list_unfilterable` when the answer cannot be read or parsed.
pub(crate) async fn filter(
    route: &Route,
    facts: &Facts,
    res: Response,
) -> Result<(Response, Option<Hidden>), Rejection> {
    let (Some(engine), Some(list), Some(identified)) =
        (&route.shared.policy, list_of(facts.family()), facts.identified.as_ref())
    else {
        return Ok((res, None));
    };
    if !res.status().is_success() {
        return Ok((res, None));
    }
    let (mut parts, body) = res.into_parts();
    let is_sse = parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let bytes = Limited::new(body, MAX_LIST_BYTES)
        .collect()
        .await
        .map_err(|_| unfilterable("unreadable or too large"))?
        .to_bytes();
    let mut filter = Filter {
        route,
        engine,
        principal: facts.principal.as_ref().unwrap_or(&route.shared.anonymous),
        request: ListRequest {
            era: identified.call.era,
            client_ip: facts.arrival.client_ip,
            ..ListRequest::new(&route.name, list.0)
        },
        list,
        hidden: None,
    };
    let out = if is_sse {
        filter.sse(&bytes)?
    } else {
        filter.json(&bytes)?
    };
    parts.headers.remove(CONTENT_LENGTH);
    Ok((Response::from_parts(parts, Body::from(out)), filter.hidden))
}

fn unfilterable(why: &str) -> Rejection {
    tracing::warn!(reason = why, "list answer could not be filtered");
    Rejection::new(ErrorKind::ListUnfilterable, "Upstream list could not be filtered")
}

struct Filter<'a> {
    route: &'a Route,
    engine: &'a PolicyEngine,
    principal: &'a std::sync::Arc<Principal>,
    request: ListRequest<'a>,
    list: (TargetKind, &'static str, &'static str),
    hidden: Option<Hidden>,
}

impl Filter<'_> {
    fn json(&mut self, bytes: &[u8]) -> Result<Bytes, Rejection> {
        let mut msg: Value = serde_json::from_slice(bytes).map_err(|_| unfilterable("not JSON"))?;
        self.message(&mut msg)?;
        serde_json::to_vec(&msg)
            .map(Bytes::from)
            .map_err(|_| unfilterable("serialization"))
    }

    /// Filter each event of an SSE stream whose data is a list result;
    /// every other field of every event is kept as sent.
    fn sse(&mut self, bytes: &[u8]) -> Result<Bytes, Rejection> {
        if std::str::from_utf8(bytes).is_err() {
            return Err(unfilterable("SSE not UTF-8"));
        }
        let mut out = Vec::with_capacity(bytes.len());
        for mut event in sse::events(bytes) {
            if event.has_data && !event.data.trim().is_empty() {
                let mut msg: Value =
                    serde_json::from_str(&event.data).map_err(|_| unfilterable("SSE data not JSON"))?;
                self.message(&mut msg)?;
                event.data = msg.to_string();
            }
            event.write_to(&mut out);
        }
        Ok(Bytes::from(out))
    }

    /// Filter one JSON-RPC message, if it is a list result.
    fn message(&mut self, msg: &mut Value) -> Result<(), Rejection> {
        let (kind, key, name_key) = self.list;
        let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut) else {
            return Ok(()); // an error, a notification or a request
        };
        let Some(entries) = result.get_mut(key).and_then(Value::as_array_mut) else {
            return Err(unfilterable("result without its list"));
        };
        let items: Option<Vec<ListItem<'_>>> = entries
            .iter()
            .map(|e| {
                let name = e.get(name_key)?.as_str()?;
                let annotations = (kind == TargetKind::Tool).then(|| annotations(e));
                Some(ListItem { name, annotations })
            })
            .collect();
        let items = items.ok_or_else(|| unfilterable("entry without its name"))?;
        if kind == TargetKind::Tool {
            let learned = items
                .iter()
                .zip(entries.iter())
                .map(|(i, e)| (i.name, Tool::from_entry(e, i.annotations.unwrap_or_default())));
            self.route.shared.catalog.learn(&self.route.name, learned);
        }
        let decision = self.engine.filter(self.principal, &self.request, &items);
        if decision.hidden() > 0 {
            let seen = self.hidden.map_or(0, |h| h.entries);
            self.hidden = Some(Hidden {
                entries: seen + decision.hidden(),
                enforced: decision.enforced,
            });
        }
        let mut i = 0;
        entries.retain(|_| {
            i += 1;
            decision.keeps(i - 1)
        });
        if decision.enforced && (self.request.era == Era::Modern || result.contains_key("cacheScope")) {
            result.insert("cacheScope".into(), Value::from("private"));
        }
        Ok(())
    }
}
