//! Step 8 of the request path: may this caller make this call?
//!
//! Each JSON-RPC request of a POST (every element of a legacy batch) is
//! decided by the route's Cedar policies from what step 4 identified — the
//! `Mcp-Method`/`Mcp-Name` headers or the bounded body scan, never a parsed
//! body — plus the decoded `Mcp-Param-*` headers, the client address, the
//! era and the tool's annotations as the upstream last listed them. GET
//! streams and session DELETEs are decided as `other_method`.
//!
//! A denial answers like an unknown name (`policy_denied`, in-band `-32602`)
//! unless it is for a missing scope (403 `insufficient_scope` with a
//! challenge, so the client can step up). On a route in observe mode the
//! call goes ahead and the decision is only logged, counted and audited.

use std::net::IpAddr;
use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use tollgate_core::{Era, ErrorKind, McpMethod, Principal};
use tollgate_mcp::headers::PARAM_PREFIX;
use tollgate_mcp::{Call, McpError, Message, MessageKind, decode_header_value};
use tollgate_policy::{CallRequest, Decision, PolicyEngine};

use crate::identity::refusal;
use crate::rescue::{error_response, status_and_code};
use crate::{Shared, Upstream};

/// The decisions of one request, in message order (`None`: a message that
/// is not decided, e.g. a client response in a legacy batch).
pub(crate) type Decisions = Vec<Option<Decision>>;

/// Why a request is not forwarded.
pub(crate) enum Refused {
    /// A denial or malformed input, as a JSON-RPC error.
    Error(McpError),
    /// A finished response (403 challenge, batch of errors).
    Response(Response),
}

/// The decisions of a request, and whether they stop it.
pub(crate) struct Verdict<D, R> {
    /// For the audit record.
    pub(crate) decisions: D,
    /// `None`: forward (allowed, or the route observes).
    pub(crate) refused: Option<R>,
}

/// Decide every request of `call`.
pub(crate) fn authorize_call(
    shared: &Shared,
    up: &Upstream,
    principal: Option<&Arc<Principal>>,
    headers: &HeaderMap,
    client_ip: Option<IpAddr>,
    call: &Call,
) -> Verdict<Decisions, Refused> {
    let Some(engine) = &shared.policy else {
        return Verdict {
            decisions: Vec::new(),
            refused: None,
        };
    };
    let principal = principal.unwrap_or(&shared.anonymous);
    let params = match mcp_params(headers) {
        Ok(p) => p,
        Err(e) => {
            let id = call.messages.first().and_then(|m| m.id.clone());
            return Verdict {
                decisions: Vec::new(),
                refused: Some(Refused::Error(e.with_id(id))),
            };
        }
    };
    let args: Vec<(&str, &str)> = params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let decisions: Decisions = call
        .messages
        .iter()
        .map(|m| {
            (m.kind != MessageKind::Response).then(|| {
                let annotations = (m.method == "tools/call")
                    .then(|| m.name.as_deref().and_then(|n| shared.catalog.annotations(&up.name, n)))
                    .flatten();
                let req = CallRequest::new(&up.name, &m.method)
                    .name(m.name.as_deref())
                    .era(call.era)
                    .client_ip(client_ip)
                    .args(if call.era == Era::Modern { &args } else { &[] })
                    .annotations(annotations);
                decide(engine, principal, &req, shared)
            })
        })
        .collect();
    let refused = refusal_for(shared, up, principal, call, &decisions);
    Verdict { decisions, refused }
}

/// Decide a GET stream or session DELETE (`other_method` on the server).
pub(crate) fn authorize_session(
    shared: &Shared,
    up: &Upstream,
    principal: Option<&Arc<Principal>>,
    client_ip: Option<IpAddr>,
    method: McpMethod,
) -> Verdict<Option<Decision>, McpError> {
    let Some(engine) = &shared.policy else {
        return Verdict {
            decisions: None,
            refused: None,
        };
    };
    let principal = principal.unwrap_or(&shared.anonymous);
    let name = if method == McpMethod::StreamGet {
        "GET"
    } else {
        "DELETE"
    };
    let req = CallRequest::new(&up.name, name).era(Era::Legacy).client_ip(client_ip);
    let decision = decide(engine, principal, &req, shared);
    let refused =
        (!decision.proceeds()).then(|| McpError::new(ErrorKind::PolicyDenied, "Method not allowed by policy"));
    Verdict {
        decisions: Some(decision),
        refused,
    }
}

fn decide(engine: &PolicyEngine, principal: &Arc<Principal>, req: &CallRequest<'_>, shared: &Shared) -> Decision {
    let d = engine.decide(principal, req);
    if !d.allowed {
        shared.calls.denial(
            req.route,
            d.reason.as_str(),
            if d.enforced { "enforce" } else { "observe" },
        );
        tracing::info!(
            route = req.route,
            method = req.method,
            name = req.name.unwrap_or(""),
            subject = %principal.subject,
            reason = d.reason.as_str(),
            policies = ?d.determining_policy_ids,
            enforced = d.enforced,
            "policy denied call"
        );
    }
    d
}

/// The answer when some decision stops the request.
fn refusal_for(
    shared: &Shared,
    up: &Upstream,
    principal: &Principal,
    call: &Call,
    decisions: &Decisions,
) -> Option<Refused> {
    let stopped = |d: &Option<Decision>| d.as_ref().is_some_and(|d| !d.proceeds());
    let first = decisions.iter().position(stopped)?;
    if let Some(scopes) = decisions[first].as_ref().and_then(Decision::missing_scopes)
        && call.messages.len() == 1
        && let Some(resource) = &up.resource
        && shared.authn.is_some()
    {
        let extra: Vec<&str> = scopes.iter().map(String::as_str).collect();
        if let Err(e) = resource.check_scopes(principal, &extra) {
            return Some(Refused::Response(refusal(resource, &e)));
        }
    }
    if call.messages.len() == 1 {
        let m = &call.messages[first];
        return Some(Refused::Error(denied(m).with_id(m.id.clone())));
    }
    Some(Refused::Response(batch_refusal(&call.messages, decisions)))
}

/// The error for a denied message: what an unknown name would get.
pub(crate) fn denied(m: &Message) -> McpError {
    let name = m.name.as_deref().unwrap_or("");
    let message = match McpMethod::from_name(&m.method) {
        McpMethod::ToolsCall => format!("Unknown tool: {name}"),
        McpMethod::PromptsGet => format!("Unknown prompt: {name}"),
        McpMethod::ResourcesRead => format!("Resource not found: {name}"),
        _ => "Method not allowed by policy".to_owned(),
    };
    McpError::new(ErrorKind::PolicyDenied, message)
}

/// A batch with a denied element is not forwarded: each request element
/// gets an error, denied ones as unknown names.
fn batch_refusal(messages: &[Message], decisions: &Decisions) -> Response {
    let (_, code) = status_and_code(ErrorKind::PolicyDenied);
    let entries: Vec<serde_json::Value> = messages
        .iter()
        .zip(decisions)
        .filter(|(m, _)| m.kind == MessageKind::Request)
        .map(|(m, d)| {
            let id: serde_json::Value =
                m.id.as_ref()
                    .and_then(|id| serde_json::from_str(id.as_json()).ok())
                    .unwrap_or(serde_json::Value::Null);
            let (code, message) = match d {
                Some(d) if !d.proceeds() => (code, denied(m).message),
                _ => (-32000, "Batch not forwarded: another element was refused".to_owned()),
            };
            serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        })
        .collect();
    let body = serde_json::to_vec(&entries).map_or_else(|_| Bytes::from_static(b"[]"), Bytes::from);
    let mut res = error_response(&McpError::new(ErrorKind::PolicyDenied, ""));
    // Each element has its own code: the audit reads them from the body.
    res.extensions_mut().remove::<ErrorKind>();
    *res.body_mut() = axum::body::Body::from(body);
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// The decoded `Mcp-Param-*` headers: (lowercase name after the prefix,
/// value).
///
/// # Errors
///
/// `header_mismatch` for a value with invalid characters or a bad
/// `=?base64?…?=` payload.
fn mcp_params(headers: &HeaderMap) -> Result<Vec<(String, String)>, McpError> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let Some(arg) = name.as_str().strip_prefix(PARAM_PREFIX) else {
            continue;
        };
        let text = value
            .to_str()
            .map_err(|_| McpError::header(format!("Header mismatch: {name} has invalid characters")))?;
        out.push((arg.to_owned(), decode_header_value(text.trim())?));
    }
    Ok(out)
}
