//! Phase 7, authorize: may this caller make this call?
//!
//! Each JSON-RPC request of a POST (every element of a legacy batch) is
//! decided by the route's Cedar policies from what `identify` found — the
//! standard headers or the bounded body scan, never a parsed body — plus
//! what the catalog gate established from the approved definition: the
//! tool's annotations and the `Mcp-Param-*` values it checked (2026-07-28
//! only); and the client address and the era. A GET
//! stream or session DELETE is decided as the method `GET` / `DELETE`. A
//! call a virtual server routed here is decided through that virtual
//! server: the route's entities are then also in its `VirtualServer`. On a
//! `user_oauth` route, policies also see the caller's own upstream grant
//! (`context.upstream_grant`, looked up by `connection`).
//!
//! A denial answers like an unknown name (`policy_denied`, in-band
//! `-32602`) unless it is for a missing scope (403 `insufficient_scope`
//! with a challenge, so the client can step up). A batch with a denied
//! element is not forwarded: each request element gets its own answer. On
//! a route in observe mode the call goes ahead; the decisions are logged
//! and reach the call summary either way.

use std::sync::Arc;

use tollgate_core::{Era, ErrorKind, McpMethod, Principal};
use tollgate_mcp::{McpError, Message, MessageKind};
use tollgate_policy::{CallRequest, Decision, PolicyEngine, UpstreamGrantFacts};

use crate::phase::authenticate::refusal;
use crate::rescue::{ElementRejection, Rejection};
use crate::route::Route;
use crate::stage::{Authorized, Connection, Decisions, Gated, Stage, Stop};

/// Decide the gated call.
///
/// # Errors
///
/// The stop of a call a decision denies (in enforce mode).
pub(crate) fn authorize(route: &Route, gated: Gated) -> Result<Authorized, Stop> {
    let Some(engine) = &route.shared.policy else {
        return Ok(Authorized {
            gated,
            decisions: Decisions::Unchecked,
        });
    };
    let principal = gated.principal().unwrap_or(&route.shared.anonymous).clone();
    let (decisions, refusal) = if gated.messages().is_empty() {
        session(route, engine, &principal, &gated)
    } else {
        messages(route, engine, &principal, &gated)
    };
    let authorized = Authorized {
        gated,
        decisions: Decisions::Decided(decisions),
    };
    match refusal {
        Some(rejection) => Err(authorized.stop(rejection)),
        None => Ok(authorized),
    }
}

/// The decision of each message, and the refusal when one stops the call.
fn messages(
    route: &Route,
    engine: &PolicyEngine,
    principal: &Arc<Principal>,
    gated: &Gated,
) -> (Vec<Option<Decision>>, Option<Rejection>) {
    let facts = &gated.facts;
    let via = facts.arrival.via.as_deref().map(|v| &*v.virtual_server);
    let call = &gated.call;
    let decisions: Vec<Option<Decision>> = call
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            (m.kind != MessageKind::Response).then(|| {
                let fact = gated.gate.get(i).and_then(Option::as_ref);
                // Only `Mcp-Param-*` values the gate checked against the
                // approved schema reach the policies.
                let args: Vec<(&str, &str)> = fact
                    .filter(|_| call.era == Era::Modern)
                    .map(|g| g.args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
                    .unwrap_or_default();
                let req = CallRequest::new(&route.name, &m.method)
                    .name(m.name.as_deref())
                    .era(call.era)
                    .client_ip(facts.arrival.client_ip)
                    .args(&args)
                    .annotations(fact.and_then(|g| g.annotations))
                    .virtual_server(via)
                    .upstream_grant(gated.connection.as_ref().map(Connection::facts));
                decide(engine, principal, &req)
            })
        })
        .collect();
    let exposed = facts.arrival.via.as_deref().and_then(|v| v.exposed_name.as_deref());
    let refusal = refusal_for(route, principal, &call.messages, &decisions, exposed);
    (decisions, refusal)
}

impl Connection {
    /// As `context.upstream_grant`.
    fn facts(&self) -> UpstreamGrantFacts<'_> {
        UpstreamGrantFacts {
            present: self.scopes.is_some(),
            scopes: self.scopes.as_deref().unwrap_or_default(),
        }
    }
}

/// A GET stream or session DELETE, decided as its HTTP method.
fn session(
    route: &Route,
    engine: &PolicyEngine,
    principal: &Arc<Principal>,
    gated: &Gated,
) -> (Vec<Option<Decision>>, Option<Rejection>) {
    let method = if gated.family == McpMethod::StreamGet {
        "GET"
    } else {
        "DELETE"
    };
    let arrival = &gated.facts.arrival;
    let req = CallRequest::new(&route.name, method)
        .era(Era::Legacy)
        .client_ip(arrival.client_ip)
        .virtual_server(arrival.via.as_deref().map(|v| &*v.virtual_server));
    let decision = decide(engine, principal, &req);
    let refusal =
        (!decision.proceeds()).then(|| Rejection::new(ErrorKind::PolicyDenied, "Method not allowed by policy"));
    (vec![Some(decision)], refusal)
}

fn decide(engine: &PolicyEngine, principal: &Arc<Principal>, req: &CallRequest<'_>) -> Decision {
    let d = engine.decide(principal, req);
    if !d.allowed {
        tracing::info!(
            subject = %principal.subject,
            reason = d.reason.as_str(),
            policies = ?d.determining_policy_ids,
            enforced = d.enforced,
            "policy denied call"
        );
    }
    d
}

/// The refusal when some decision stops the request.
fn refusal_for(
    route: &Route,
    principal: &Principal,
    messages: &[Message],
    decisions: &[Option<Decision>],
    exposed: Option<&str>,
) -> Option<Rejection> {
    let stops = |d: &Option<Decision>| d.as_ref().is_some_and(|d| !d.proceeds());
    let first = decisions.iter().position(stops)?;
    if messages.len() > 1 {
        return Some(batch_refusal(messages, decisions));
    }
    let m = &messages[first];
    if let Some(scopes) = decisions[first].as_ref().and_then(Decision::missing_scopes)
        && let Some(resource) = &route.resource
        && route.shared.authn.is_some()
    {
        let extra: Vec<&str> = scopes.iter().map(String::as_str).collect();
        if let Err(e) = resource.check_scopes(principal, &extra) {
            return Some(refusal(resource, &e).with_id(m.id.clone()));
        }
    }
    Some(Rejection::from(denied(m, exposed)).with_id(m.id.clone()))
}

/// The error for a denied message: what an unknown name would get. A call
/// through a virtual server is told the name it used (`exposed`), never
/// the member's own.
pub(crate) fn denied(m: &Message, exposed: Option<&str>) -> McpError {
    let name = exposed.or(m.name.as_deref()).unwrap_or("");
    let message = match McpMethod::from_name(&m.method) {
        McpMethod::ToolsCall => format!("Unknown tool: {name}"),
        McpMethod::PromptsGet => format!("Unknown prompt: {name}"),
        McpMethod::ResourcesRead => format!("Resource not found: {name}"),
        _ => "Method not allowed by policy".to_owned(),
    };
    McpError::new(ErrorKind::PolicyDenied, message)
}

/// A batch with a denied element: every request element is answered,
/// denied ones as unknown names, the others as not forwarded.
fn batch_refusal(messages: &[Message], decisions: &[Option<Decision>]) -> Rejection {
    let answers = messages
        .iter()
        .zip(decisions)
        .enumerate()
        .filter(|(_, (m, _))| m.kind == MessageKind::Request)
        .map(|(index, (m, d))| match d {
            Some(d) if !d.proceeds() => ElementRejection {
                index,
                id: m.id.clone(),
                kind: ErrorKind::PolicyDenied,
                message: denied(m, None).message.into(),
            },
            _ => ElementRejection::not_forwarded(index, m.id.clone()),
        })
        .collect();
    Rejection::batch(ErrorKind::PolicyDenied, answers)
}
