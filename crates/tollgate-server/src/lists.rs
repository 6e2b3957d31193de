//! Part of phase 11 (respond): a caller only sees what it may use.
//!
//! The answers to `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list` on a route with policies or a catalog gate
//! are read whole (they are small and rare), parsed, and every entry the
//! caller may not use is removed — in a JSON answer or in each SSE event
//! carrying the result (read with the one SSE reader, `tollgate_mcp::sse`),
//! on every page. The catalog gate goes first: an entry the lock does not
//! approve at the revision listed is removed under `enforce` (and counted
//! under `observe`); then the policies judge what is left, reading each
//! tool's approved annotations. A result filtered by policy is marked
//! `cacheScope: "private"`: it depends on who asked. An answer that cannot
//! be parsed, or is larger than [`MAX_LIST_BYTES`], is refused with
//! `list_unfilterable`: the caller never gets the unfiltered list. An entry
//! listed at another revision than the latest sync saw asks for a new sync.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http_body_util::{BodyExt, Limited};
use serde_json::Value;
use tollgate_catalog::{Definition, Kind, Lock, Mode, judge_entry};
use tollgate_core::{Era, ErrorKind, Hidden, McpMethod, Principal};
use tollgate_mcp::sse;
use tollgate_policy::{ListItem, ListRequest, PolicyEngine, TargetKind, ToolAnnotations};

use crate::catalog::{Judged, annotations_of};
use crate::rescue::Rejection;
use crate::route::Route;
use crate::stage::Forwarded;

/// Largest list answer the gateway filters.
pub(crate) const MAX_LIST_BYTES: usize = 8 * 1024 * 1024;

/// The list a method returns: its definitions' kind, and how the policies
/// name them.
pub(crate) fn list_of(method: McpMethod) -> Option<(Kind, TargetKind)> {
    match method {
        McpMethod::ToolsList => Some((Kind::Tool, TargetKind::Tool)),
        McpMethod::PromptsList => Some((Kind::Prompt, TargetKind::Prompt)),
        McpMethod::ResourcesList => Some((Kind::Resource, TargetKind::Resource)),
        McpMethod::ResourceTemplatesList => Some((Kind::ResourceTemplate, TargetKind::Resource)),
        _ => None,
    }
}

/// Whether the answer to a call of `family` is a list the route filters.
pub(crate) fn filters(route: &Route, family: McpMethod) -> bool {
    list_of(family).is_some() && (route.shared.policy.is_some() || route.catalog.mode != Mode::Off)
}

/// Filter the list answer `res` for the caller; other answers pass
/// untouched.
///
/// # Errors
///
/// `list_unfilterable` when the answer cannot be read or parsed.
pub(crate) async fn filter(
    route: &Route,
    call: &Forwarded,
    res: Response,
) -> Result<(Response, Option<Hidden>), Rejection> {
    let Some(list) = list_of(call.family) else {
        return Ok((res, None));
    };
    let facts = &call.facts;
    if !res.status().is_success() {
        return Ok((res, None));
    }
    let (mut parts, body) = res.into_parts();
    let is_sse = tollgate_mcp::sse::is_event_stream(&parts.headers);
    let bytes = Limited::new(body, MAX_LIST_BYTES)
        .collect()
        .await
        .map_err(|_| unfilterable("unreadable or too large"))?
        .to_bytes();
    let mut filter = Filter {
        route,
        engine: route.shared.policy.as_deref(),
        lock: route.shared.approvals.current(),
        principal: facts.principal.as_ref().unwrap_or(&route.shared.anonymous),
        request: ListRequest {
            era: call.call.era,
            client_ip: facts.arrival.client_ip,
            virtual_server: facts.arrival.via.as_deref().map(|v| &*v.virtual_server),
            ..ListRequest::new(&route.name, list.1)
        },
        kind: list.0,
        hidden: None,
        private: false,
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
    engine: Option<&'a PolicyEngine>,
    lock: Arc<Lock>,
    principal: &'a Arc<Principal>,
    request: ListRequest<'a>,
    kind: Kind,
    hidden: Option<Hidden>,
    /// Whether the policies filtered this answer for its caller.
    private: bool,
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
        let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut) else {
            return Ok(()); // an error, a notification or a request
        };
        let Some(entries) = result.get_mut(self.kind.result_key()).and_then(Value::as_array_mut) else {
            return Err(unfilterable("result without its list"));
        };
        let definitions: Vec<Definition> = entries
            .iter()
            .map(|e| Definition::new(self.kind, e.clone()))
            .collect::<Result<_, _>>()
            .map_err(|_| unfilterable("entry without its name"))?;
        if self.route.catalog.mode == Mode::Off {
            self.route.catalog.learn(definitions.clone());
        }
        let gate: Vec<bool> = definitions.iter().map(|d| self.passes_gate(d)).collect();
        let keep = self.policy(&definitions, &gate);
        let mut i = 0;
        entries.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        if self.private && (self.request.era == Era::Modern || result.contains_key("cacheScope")) {
            result.insert("cacheScope".into(), Value::from("private"));
        }
        Ok(())
    }

    /// Whether the catalog gate lets an entry through; a revision other
    /// than the latest sync's asks for a new sync.
    fn passes_gate(&self, d: &Definition) -> bool {
        let catalog = &self.route.catalog;
        if catalog.mode != Mode::Off
            && catalog
                .live(d.kind, &d.key)
                .is_none_or(|live| live.revision != d.revision)
        {
            catalog.wake();
        }
        let Some(verdict) = judge_entry(&self.lock, &self.route.name, d, catalog.mode) else {
            return true;
        };
        catalog.count(Judged::Listed, verdict.outcome);
        verdict.proceeds()
    }

    /// Which entries stay: through the gate, then allowed by the policies
    /// (judged on the approved annotations).
    fn policy(&mut self, definitions: &[Definition], gate: &[bool]) -> Vec<bool> {
        let Some(engine) = self.engine else {
            return gate.to_vec();
        };
        let annotations: Vec<Option<ToolAnnotations>> = definitions.iter().map(|d| self.annotations(d)).collect();
        let items: Vec<ListItem<'_>> = definitions
            .iter()
            .zip(&annotations)
            .map(|(d, a)| ListItem {
                name: &d.key,
                annotations: *a,
            })
            .collect();
        let decision = engine.filter(self.principal, &self.request, &items);
        self.private |= decision.enforced;
        if decision.hidden() > 0 {
            let seen = self.hidden.map_or(0, |h| h.entries);
            self.hidden = Some(Hidden {
                entries: seen + decision.hidden(),
                enforced: decision.enforced,
            });
        }
        gate.iter().enumerate().map(|(i, g)| *g && decision.keeps(i)).collect()
    }

    /// A tool's annotations as the policies read them: the approved
    /// definition's under the gate, the listed one's without.
    fn annotations(&self, d: &Definition) -> Option<ToolAnnotations> {
        if d.kind != Kind::Tool {
            return None;
        }
        if self.route.catalog.mode == Mode::Off {
            return Some(annotations_of(&d.body));
        }
        let approved = self.lock.get(&self.route.name, d.kind, &d.key);
        Some(approved.map_or_else(ToolAnnotations::default, |a| annotations_of(&a.definition)))
    }
}
