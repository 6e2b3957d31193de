//! Step 12 of the request path: a caller only sees what it may use.
//!
//! The answers to `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list` on a route with policies are read whole
//! (they are small and rare), parsed, and every entry the caller may not
//! use is removed — in a JSON answer or in each SSE event carrying the
//! result, on every page. A filtered result is marked `cacheScope:
//! "private"`: it depends on who asked. An answer that cannot be parsed, or
//! is larger than [`MAX_LIST_BYTES`], is refused with `list_unfilterable`:
//! the caller never gets the unfiltered list. `tools/list` answers also
//! teach the [`Catalog`](crate::catalog::Catalog) each tool's annotations
//! and definition hash.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;
use tollgate_core::{Era, ErrorKind, McpMethod, Principal};
use tollgate_mcp::McpError;
use tollgate_policy::{ListItem, ListRequest, PolicyEngine, TargetKind};

use crate::catalog::{Tool, annotations};
use crate::{Shared, Upstream};

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

/// Who asked for the list, and how.
pub(crate) struct Asker<'a> {
    pub(crate) principal: &'a Arc<Principal>,
    pub(crate) era: Era,
    pub(crate) client_ip: Option<IpAddr>,
    pub(crate) method: McpMethod,
}

/// Filter the list answer `res` for `asker`; other answers pass untouched.
///
/// # Errors
///
/// `list_unfilterable` when the answer cannot be read or parsed.
pub(crate) async fn filter_response(
    shared: &Shared,
    up: &Upstream,
    asker: &Asker<'_>,
    res: Response,
) -> Result<Response, McpError> {
    let (Some(engine), Some(list)) = (&shared.policy, list_of(asker.method)) else {
        return Ok(res);
    };
    if !res.status().is_success() {
        return Ok(res);
    }
    let (mut parts, body) = res.into_parts();
    let sse = parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let bytes = Limited::new(body, MAX_LIST_BYTES)
        .collect()
        .await
        .map_err(|_| unfilterable(up, "unreadable or too large"))?
        .to_bytes();
    let filter = Filter {
        shared,
        engine,
        up,
        asker,
        list,
    };
    let out = if sse { filter.sse(&bytes)? } else { filter.json(&bytes)? };
    parts.headers.remove(CONTENT_LENGTH);
    Ok(Response::from_parts(parts, Body::from(out)))
}

fn unfilterable(up: &Upstream, why: &str) -> McpError {
    tracing::warn!(route = %up.name, reason = why, "list answer could not be filtered");
    McpError::new(ErrorKind::ListUnfilterable, "Upstream list could not be filtered")
}

struct Filter<'a> {
    shared: &'a Shared,
    engine: &'a PolicyEngine,
    up: &'a Upstream,
    asker: &'a Asker<'a>,
    list: (TargetKind, &'static str, &'static str),
}

impl Filter<'_> {
    fn json(&self, bytes: &[u8]) -> Result<Bytes, McpError> {
        let mut msg: Value = serde_json::from_slice(bytes).map_err(|_| unfilterable(self.up, "not JSON"))?;
        self.message(&mut msg)?;
        serde_json::to_vec(&msg)
            .map(Bytes::from)
            .map_err(|_| unfilterable(self.up, "serialization"))
    }

    /// Filter each event of an SSE stream whose data is a list result.
    fn sse(&self, bytes: &[u8]) -> Result<Bytes, McpError> {
        let text = std::str::from_utf8(bytes).map_err(|_| unfilterable(self.up, "SSE not UTF-8"))?;
        let text = text.replace("\r\n", "\n");
        let mut out = String::with_capacity(text.len());
        for event in text.split_terminator("\n\n") {
            let (mut other, mut data) = (Vec::new(), Vec::new());
            for line in event.lines() {
                match line.strip_prefix("data:") {
                    Some(d) => data.push(d.strip_prefix(' ').unwrap_or(d)),
                    None => other.push(line),
                }
            }
            for line in other {
                out.push_str(line);
                out.push('\n');
            }
            let joined = data.join("\n");
            if joined.trim().is_empty() {
                // A priming or keep-alive event: kept as sent.
                data.iter().for_each(|d| {
                    out.push_str("data: ");
                    out.push_str(d);
                    out.push('\n');
                });
            } else {
                let mut msg: Value =
                    serde_json::from_str(&joined).map_err(|_| unfilterable(self.up, "SSE data not JSON"))?;
                self.message(&mut msg)?;
                out.push_str("data: ");
                out.push_str(&msg.to_string());
                out.push('\n');
            }
            out.push('\n');
        }
        Ok(Bytes::from(out))
    }

    /// Filter one JSON-RPC message, if it is a list result.
    fn message(&self, msg: &mut Value) -> Result<(), McpError> {
        let (kind, key, name_key) = self.list;
        let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut) else {
            return Ok(()); // an error, a notification or a request
        };
        let Some(entries) = result.get_mut(key).and_then(Value::as_array_mut) else {
            return Err(unfilterable(self.up, "result without its list"));
        };
        let items: Option<Vec<ListItem<'_>>> = entries
            .iter()
            .map(|e| {
                let name = e.get(name_key)?.as_str()?;
                let annotations = (kind == TargetKind::Tool).then(|| annotations(e));
                Some(ListItem { name, annotations })
            })
            .collect();
        let items = items.ok_or_else(|| unfilterable(self.up, "entry without its name"))?;
        if kind == TargetKind::Tool {
            let learned = items
                .iter()
                .zip(entries.iter())
                .map(|(i, e)| (i.name, Tool::from_entry(e, i.annotations.unwrap_or_default())));
            self.shared.catalog.learn(&self.up.name, learned);
        }
        let request = ListRequest {
            era: self.asker.era,
            client_ip: self.asker.client_ip,
            ..ListRequest::new(&self.up.name, kind)
        };
        let decision = self.engine.filter(self.asker.principal, &request, &items);
        if decision.hidden() > 0 {
            let mode = if decision.enforced { "enforce" } else { "observe" };
            self.shared.calls.hidden(&self.up.name, decision.hidden(), mode);
        }
        let mut i = 0;
        entries.retain(|_| {
            i += 1;
            decision.keeps(i - 1)
        });
        if decision.enforced && (self.asker.era == Era::Modern || result.contains_key("cacheScope")) {
            result.insert("cacheScope".into(), Value::from("private"));
        }
        Ok(())
    }
}
