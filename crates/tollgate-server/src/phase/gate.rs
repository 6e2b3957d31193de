//! Phase 6, the catalog gate: may this call reach the definition it
//! names, and what did that definition declare when it was approved?
//!
//! For each `tools/call`, `prompts/get`, `resources/read`,
//! `resources/subscribe` and `completion/complete` (every element of a
//! batch), the definition it uses — for a completion, the prompt or
//! resource its `ref` names — is judged against `catalog.lock` and the
//! latest sync: approved, quarantined (new), blocked (changed since it was
//! approved) or unlisted. On a route that enforces the gate, a quarantined
//! call is answered like an unknown name and a blocked one with a message
//! saying it changed and awaits approval (both `-32602`). The phase also
//! hands the next phases what the *approved* definition says — never what
//! the upstream says today: the tool's annotations for the policies, and
//! for a 2026-07-28 `tools/call` the `Mcp-Param-*` headers checked against
//! the approved schema (and, on a verified route, the body): a missing,
//! malformed or disagreeing header is refused with 400 `-32020`. With the
//! gate off the listed definition stands in for the approved one.

use std::borrow::Cow;
use std::sync::Arc;

use http::HeaderMap;
use serde_json::Value;
use tollgate_catalog::{Definition, Kind, Lock, Mode, Outcome, Snapshot, Verdict, judge_revision, template};
use tollgate_core::{Era, ErrorKind, McpMethod};
use tollgate_mcp::{CompletionRef, Message, MessageKind, check_params, completion_ref, param_headers, tool_arguments};
use tollgate_policy::ToolAnnotations;

use crate::catalog::{Judged, annotations_of};
use crate::facts::GateFact;
use crate::rescue::{ElementRejection, Rejection};
use crate::route::Route;
use crate::stage::{Gated, Identified, Stage, Stop};

/// Judge the definitions the identified call names.
///
/// # Errors
///
/// The stop of a call that uses a definition the route does not let
/// through, or whose `Mcp-Param-*` headers the approved schema refuses.
pub(crate) fn gate(route: &Route, identified: Identified, headers: &HeaderMap) -> Result<Gated, Stop> {
    let (gate, refusal) = judge(route, &identified, headers);
    let gated = Gated {
        identified,
        gate,
        connection: None,
    };
    match refusal {
        Some(rejection) => Err(gated.stop(rejection)),
        None => Ok(gated),
    }
}

/// Each message's fact (`None`: it names no definition), and the refusal
/// when they stop the call.
fn judge(route: &Route, identified: &Identified, headers: &HeaderMap) -> (Vec<Option<GateFact>>, Option<Rejection>) {
    let messages = identified.messages();
    let facts = &identified.facts;
    let body = facts.body.bytes.as_deref();
    let targets: Vec<Option<(Kind, Cow<'_, str>)>> =
        messages.iter().enumerate().map(|(i, m)| target(m, body, i)).collect();
    if targets.iter().all(Option::is_none) {
        return (vec![None; messages.len()], None);
    }
    let lock = route.shared.approvals.current();
    let snapshot = route.catalog.snapshot();
    let judge = Judge {
        route,
        lock: &lock,
        snapshot: &snapshot,
    };
    let modern = identified.call.era == Era::Modern;
    let mut out = Vec::with_capacity(messages.len());
    for (m, target) in messages.iter().zip(&targets) {
        let Some((kind, key)) = target else {
            out.push(None);
            continue;
        };
        let headers = (modern && *kind == Kind::Tool).then_some(headers);
        match judge.fact(*kind, key, headers, body) {
            Ok(fact) => out.push(Some(fact)),
            Err(e) => return (out, Some(Rejection::from(e).with_id(m.id.clone()))),
        }
    }
    let exposed = facts.arrival.via.as_deref().and_then(|v| v.exposed_name.as_deref());
    let refusal = refusal(messages, &targets, &out, exposed);
    (out, refusal)
}

/// The definition the `index`th message names: its kind and key. A
/// completion names the prompt or resource whose argument it completes
/// (read from the body), a subscription the resource it watches. A
/// completion whose reference cannot be read names an empty key, which
/// no catalog holds: under enforcement it is refused, never let through
/// unjudged.
fn target<'a>(m: &'a Message, body: Option<&[u8]>, index: usize) -> Option<(Kind, Cow<'a, str>)> {
    (m.kind == MessageKind::Request).then_some(())?;
    let kind = match McpMethod::from_name(&m.method) {
        McpMethod::ToolsCall => Kind::Tool,
        McpMethod::PromptsGet => Kind::Prompt,
        McpMethod::ResourcesRead => Kind::Resource,
        _ if m.method == "resources/subscribe" => Kind::Resource,
        _ if m.method == "completion/complete" => {
            return Some(match body.and_then(|b| completion_ref(b, index)) {
                Some(CompletionRef::Prompt(name)) => (Kind::Prompt, Cow::Owned(name)),
                Some(CompletionRef::Resource(uri)) => (Kind::Resource, Cow::Owned(uri)),
                None => (Kind::Prompt, Cow::Borrowed("")),
            });
        }
        _ => return None,
    };
    Some((kind, Cow::Borrowed(m.name.as_deref()?)))
}

/// The lock and snapshot a request is judged against.
struct Judge<'a> {
    route: &'a Route,
    lock: &'a Lock,
    snapshot: &'a Snapshot,
}

impl Judge<'_> {
    /// The gate's fact for one definition; the param headers are checked
    /// when `headers` is given (a 2026-07-28 call).
    fn fact(
        &self,
        kind: Kind,
        key: &str,
        headers: Option<&HeaderMap>,
        body: Option<&[u8]>,
    ) -> Result<GateFact, tollgate_mcp::McpError> {
        let (kind, key) = self.resolve(kind, key);
        let live = self.snapshot.get(kind, key);
        let mode = self.route.catalog.mode;
        let verdict = judge_revision(self.lock, &self.route.name, kind, key, live.map(|d| &d.revision), mode);
        if let Some(v) = &verdict {
            self.route.catalog.count(Judged::Call, v.outcome);
        }
        // What the policies and the header check read: the approved
        // definition under governance, the listed one without.
        let declared: Option<&Value> = match &verdict {
            Some(v) => v.approval.map(|a| &a.definition),
            None => live.map(|d| &d.body),
        };
        let args = match (kind, headers, declared) {
            (Kind::Tool, Some(h), Some(d)) => self.checked_args(d, h, body)?,
            _ => Vec::new(),
        };
        Ok(fact(kind, verdict.as_ref(), live, declared, args, mode))
    }

    /// Check the param headers against the declared schema.
    fn checked_args(
        &self,
        declared: &Value,
        headers: &HeaderMap,
        body: Option<&[u8]>,
    ) -> Result<Vec<(String, String)>, tollgate_mcp::McpError> {
        let params = declared.get("inputSchema").map(param_headers).unwrap_or_default();
        if params.is_empty() {
            return Ok(Vec::new());
        }
        let args = body.map(tool_arguments).transpose()?;
        check_params(&params, headers, args.as_ref())
    }

    /// A resource URI that is neither listed nor approved as such is
    /// judged as the resource template it matches, if any.
    fn resolve<'x>(&'x self, kind: Kind, key: &'x str) -> (Kind, &'x str) {
        let server = &*self.route.name;
        let known = |kind| self.snapshot.get(kind, key).is_some() || self.lock.get(server, kind, key).is_some();
        if kind != Kind::Resource || known(kind) {
            return (kind, key);
        }
        // A completion names a template by its own URI template.
        if known(Kind::ResourceTemplate) {
            return (Kind::ResourceTemplate, key);
        }
        let approved = self
            .lock
            .of_server(server)
            .filter(|a| a.kind == Kind::ResourceTemplate)
            .map(|a| a.key.as_str());
        let listed = self.snapshot.of_kind(Kind::ResourceTemplate).map(|d| d.key.as_str());
        match approved.chain(listed).find(|t| template::matches(t, key)) {
            Some(t) => (Kind::ResourceTemplate, t),
            None => (kind, key),
        }
    }
}

/// The fact of one judged definition.
fn fact(
    kind: Kind,
    verdict: Option<&Verdict<'_>>,
    live: Option<&Definition>,
    declared: Option<&Value>,
    args: Vec<(String, String)>,
    mode: Mode,
) -> GateFact {
    let revision = verdict
        .and_then(|v| v.revision())
        .or(live.map(|d| &d.revision))
        .map(|r| Arc::from(r.as_str()));
    let approved = verdict
        .and_then(|v| v.approval)
        .map(|a| (Arc::from(a.approved_by.as_str()), a.approved_at));
    GateFact {
        outcome: verdict.map(|v| v.outcome),
        enforced: mode == Mode::Enforce,
        revision,
        approved,
        annotations: (kind == Kind::Tool).then(|| declared.map_or_else(ToolAnnotations::default, annotations_of)),
        args,
    }
}

/// The refusal when a definition the route does not let through is
/// called: like an unknown name when it is new, saying so when it changed.
fn refusal(
    messages: &[Message],
    targets: &[Option<(Kind, Cow<'_, str>)>],
    facts: &[Option<GateFact>],
    exposed: Option<&str>,
) -> Option<Rejection> {
    let stops = |f: &Option<GateFact>| f.as_ref().is_some_and(|f| !f.proceeds());
    let first = facts.iter().position(stops)?;
    let target = |i: usize| targets.get(i).and_then(Option::as_ref);
    if messages.len() == 1 {
        let m = &messages[first];
        return Some(refused(target(first), facts[first].as_ref(), exposed).with_id(m.id.clone()));
    }
    let answers = messages
        .iter()
        .zip(facts)
        .enumerate()
        .filter(|(_, (m, _))| m.kind == MessageKind::Request)
        .map(|(index, (m, f))| match f {
            Some(f) if !f.proceeds() => {
                let r = refused(target(index), Some(f), None);
                ElementRejection {
                    index,
                    id: m.id.clone(),
                    kind: r.kind,
                    message: r.message,
                }
            }
            _ => ElementRejection::not_forwarded(index, m.id.clone()),
        })
        .collect();
    Some(Rejection::batch(ErrorKind::NotApproved, answers))
}

/// The answer to a use of a definition that is not let through: like an
/// unknown name, or saying that it changed.
fn refused(target: Option<&(Kind, Cow<'_, str>)>, fact: Option<&GateFact>, exposed: Option<&str>) -> Rejection {
    let (kind, key) = target.map_or((Kind::Tool, ""), |(k, n)| (*k, n.as_ref()));
    let name = exposed.unwrap_or(key);
    let noun = match kind {
        Kind::Tool => "tool",
        Kind::Prompt => "prompt",
        _ => "resource",
    };
    let message = match (fact.and_then(|f| f.outcome), kind) {
        (Some(Outcome::Blocked), _) => format!("The {noun} {name} changed and awaits approval"),
        (_, Kind::Tool | Kind::Prompt) => format!("Unknown {noun}: {name}"),
        _ => format!("Resource not found: {name}"),
    };
    Rejection::new(ErrorKind::NotApproved, message)
}
