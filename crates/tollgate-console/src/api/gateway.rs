//! The pages about the running gateway: the catalog and its approvals,
//! the policies and "would this be allowed", upstream health; and the five
//! answers of one call record.
//!
//! `POST /console/api/catalog/approve` needs the approver role, from a
//! browser the CSRF token, and the revision the approver reviewed (409 when
//! the live definition is another, or the lock file is not as the gateway
//! loaded it); the approval, or its refusal, is written to the audit trail
//! before it is answered.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_audit::{CallRecord, Filter, Outcome};
use tollgate_meter::{GroupBy, Usage};

use super::overview::Failed;
use super::{record_action, with_index};
use crate::backend::{ApprovalError, ApprovalRequest, CheckRequest};
use crate::caller::Caller;
use crate::error::ConsoleError;
use crate::roles::Role;
use crate::state::Shared;

/// Recent denials shown on the policies page.
const RECENT_DENIALS: usize = 20;
/// Denials read to count per policy.
const DENIALS_READ: usize = 10_000;

/// `GET /console/api/catalog`.
pub(crate) async fn catalog(State(s): State<Arc<Shared>>, caller: Caller) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    Ok(Json(s.backend.catalog()))
}

/// What `POST /console/api/catalog/approve` is sent; `revision` may be
/// missing on the wire, and is then refused.
#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalBody {
    server: String,
    kind: String,
    key: String,
    #[serde(default)]
    revision: Option<String>,
}

/// `POST /console/api/catalog/approve`.
pub(crate) async fn approve(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Json<ApprovalBody>, JsonRejection>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Approver)?;
    caller.check_csrf(&headers)?;
    let Json(body) = body.map_err(bad_body)?;
    let what = format!("{}/{}/{}", body.server, body.kind, body.key);
    let result = match body.revision.filter(|r| !r.is_empty()) {
        Some(revision) => {
            let request = ApprovalRequest {
                server: body.server,
                kind: body.kind,
                key: body.key,
                revision,
            };
            let (backend, by) = (Arc::clone(&s.backend), caller.subject.clone());
            tokio::task::spawn_blocking(move || backend.approve(&request, &by))
                .await
                .map_err(|e| ConsoleError::Gateway(format!("console task failed: {e}")))?
        }
        None => Err(ApprovalError::NoRevision),
    };
    // Refused approvals are recorded too.
    record_action(&s, &caller, "console/approve", what, result.is_ok()).await?;
    Ok(Json(json!({"approved": result?})))
}

/// `GET /console/api/policies`: the loaded set, denials per policy over
/// the last day, and the most recent denials.
pub(crate) async fn policies(State(s): State<Arc<Shared>>, caller: Caller) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let mut answer = s.backend.policies();
    let since = SystemTime::now() - Duration::from_secs(86_400);
    let denials = with_index(&s, move |index| {
        let filter = Filter {
            since: Some(since),
            decision: Some(Outcome::Deny),
            ..Filter::default()
        };
        let mut counts: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
        let mut recent = std::collections::VecDeque::new();
        for entry in index.query(filter)?.take(DENIALS_READ) {
            let e = entry?;
            let r = &e.record;
            let ids: Vec<String> = r.decision.policies.iter().map(|p| p.to_string()).collect();
            for id in ids.iter().cloned().chain(ids.is_empty().then(|| no_policy(r))) {
                *counts.entry(id).or_default() += 1;
            }
            recent.push_back(json!({
                "ref": super::audit::reference(&e),
                "time": humantime::format_rfc3339_seconds(r.time).to_string(),
                "subject": r.principal.as_deref().map(|p| &p.subject),
                "server": r.route, "name": r.name, "policies": ids, "reason": r.decision.reason,
            }));
            if recent.len() > RECENT_DENIALS {
                recent.pop_front();
            }
        }
        let counts: Vec<Value> = counts
            .into_iter()
            .map(|(policy, count)| json!({"policy": policy, "count": count}))
            .collect();
        Ok((counts, recent.into_iter().rev().collect::<Vec<_>>()))
    })
    .await;
    // Without an audit trail the page still shows the policies.
    let (counts, recent) = denials.unwrap_or_default();
    if let Some(obj) = answer.as_object_mut() {
        obj.insert("denials".into(), Value::from(counts));
        obj.insert("recent".into(), Value::from(recent));
    }
    Ok(Json(answer))
}

/// A request body that is not the JSON expected (read after the CSRF
/// check, so a forged request learns nothing from it).
fn bad_body(e: JsonRejection) -> ConsoleError {
    ConsoleError::BadRequest(e.body_text())
}

/// A denial no policy decided: by its reason (`default deny`, ...).
fn no_policy(r: &CallRecord) -> String {
    format!("({})", r.decision.reason.as_deref().unwrap_or("no policy"))
}

/// `POST /console/api/policies/check`: decide without sending.
pub(crate) async fn check(
    State(s): State<Arc<Shared>>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Json<CheckRequest>, JsonRejection>,
) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    caller.check_csrf(&headers)?;
    let Json(request) = body.map_err(bad_body)?;
    s.backend.check(&request).map(Json).map_err(ConsoleError::BadRequest)
}

/// `GET /console/api/upstreams`, with the legacy sessions each route
/// started over the last day (`initialize` calls, from the index: sealed
/// sessions are not stored anywhere to be counted), and each upstream's
/// calls, errors and latency over the last hour, summed as the overview's
/// "By server" rows are.
pub(crate) async fn upstreams(State(s): State<Arc<Shared>>, caller: Caller) -> Result<Json<Value>, ConsoleError> {
    caller.need(Role::Viewer)?;
    let mut answer = s.backend.upstreams();
    let now = SystemTime::now();
    let (day, hour) = (
        now - Duration::from_secs(86_400),
        now - Duration::from_secs(TRAFFIC_SECS),
    );
    let (started, traffic) = with_index(&s, move |index| {
        let mut per_route: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
        let (mut servers, mut failed) = (Usage::new(GroupBy::Server), Failed::default());
        index.calls(Some(day), None, |c| {
            if c.usage.method == Some("initialize") {
                *per_route.entry(c.usage.server.to_owned()).or_default() += 1;
            }
            if c.time >= hour {
                servers.add(&c.usage);
                failed.add(GroupBy::Server, &c.usage);
            }
        })?;
        Ok((per_route, failed.rows(&servers.finish().rows)))
    })
    .await
    .unwrap_or_default();
    for upstream in answer["upstreams"].as_array_mut().into_iter().flatten() {
        let row = traffic
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["key"] == upstream["name"]);
        upstream["traffic"] = traffic_of(row);
    }
    answer["traffic_window_seconds"] = json!(TRAFFIC_SECS);
    answer["sessions"] = json!({"started_last_24h": started});
    Ok(Json(answer))
}

/// The window of an upstream's traffic on the upstreams page.
const TRAFFIC_SECS: u64 = 3_600;

/// An upstream's calls over the window from its usage row (none: no
/// calls): errors that were not denials, their share of the calls, the
/// denials apart, and p50/p99 latency.
fn traffic_of(row: Option<&Value>) -> Value {
    let n = |k: &str| row.and_then(|r| r[k].as_u64()).unwrap_or(0);
    let calls = n("calls");
    #[allow(clippy::cast_precision_loss, reason = "a share of calls, shown as a percentage")]
    let error_rate = (calls > 0).then(|| n("failed") as f64 / calls as f64);
    json!({
        "calls": calls, "failed": n("failed"), "denied": n("denied"), "error_rate": error_rate,
        "p50_us": row.map(|r| r["p50_us"].clone()), "p99_us": row.map(|r| r["p99_us"].clone()),
    })
}

/// The five Reconstruction-Test answers of a record: which server, which
/// tool definition, who, which policies, and what happened.
pub(crate) fn answers(r: &CallRecord, policies: Vec<Value>, (cost, currency): (f64, Option<&str>)) -> Value {
    let time = |t: Option<SystemTime>| t.map(|t| humantime::format_rfc3339_seconds(t).to_string());
    let principal = r.principal.as_deref().map(|p| {
        json!({
            "subject": p.subject, "issuer": p.issuer, "client_id": p.client_id, "team": p.team,
            "cost_center": p.cost_center, "groups": p.groups, "token_id": p.token_id, "kind": p.kind.as_str(),
        })
    });
    json!({
        "server": {
            "route": r.route, "virtual_server": r.virtual_server, "upstream": r.upstream,
            "version": r.server_version, "approved_by": r.approved_by,
        },
        "tool": {
            "method": r.method, "name": r.name, "exposed_name": r.exposed_name,
            "revision": r.definition_hash, "approved_by": r.definition_approved_by,
            "approved_at": time(r.definition_approved_at), "gate": r.gate,
        },
        "principal": principal,
        "policies": {
            "outcome": r.decision.outcome.as_str(), "mode": r.decision.mode,
            "reason": r.decision.reason, "policies": policies,
        },
        "outcome": {
            "status": r.status, "rpc_error": r.rpc_error, "error": r.error, "bytes_in": r.bytes_in,
            "bytes_out": r.bytes_out, "tokens": r.tokens, "cost": cost, "currency": currency,
            "duration_us": r.duration_us, "ttfb_us": r.ttfb_us,
        },
    })
}
