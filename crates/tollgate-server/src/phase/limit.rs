//! Phase 8, limit: does this caller still have room under the rate limits?
//!
//! Runs after `authorize` (a refused call costs nothing) and before
//! `credential`. Each JSON-RPC request of the call — every element of a
//! legacy batch — is counted against the `[[limits.rules]]` it matches
//! (`tollgate-limit`), keyed by the verified principal (issuer and
//! subject), team or route, never by session. A call without room answers
//! 429 with `Retry-After` and a JSON-RPC error (`-32029`, `data.retryAfter`
//! in seconds and `data.rule`); a batch with such an element is not
//! forwarded, each of its requests getting its own answer. The refusing
//! rule's id reaches the call summary and the audit record.

use std::sync::Arc;

use serde_json::json;
use tollgate_core::ErrorKind;
use tollgate_limit::{Call, Identity, RateRejection};
use tollgate_mcp::MessageKind;

use crate::phase::budget::budget;
use crate::rescue::{ElementRejection, Rejection};
use crate::route::Route;
use crate::stage::{Authorized, Limited, Stage, Stop};

/// Count the authorized call against the rate limits, then see where it
/// stands under its budgets (`budget`).
///
/// # Errors
///
/// The stop of a call without room under a rule (the rule's id reaches
/// the summary) or under a spent budget (the budget's note does).
pub(crate) async fn limit(route: &Route, authorized: Authorized) -> Result<Limited, Stop> {
    if let Err((rule, rejection)) = count(route, &authorized).await {
        let mut stop = authorized.stop(rejection);
        stop.facts.limited = Some(rule);
        return Err(stop);
    }
    match budget(route, &authorized).await {
        Ok(budget) => Ok(Limited { authorized, budget }),
        Err((note, rejection)) => {
            let mut stop = authorized.stop(rejection);
            stop.facts.budget = Some(note);
            Err(stop)
        }
    }
}

/// Count each request of the call; `Err` with the refusing rule's id.
async fn count(route: &Route, authorized: &Authorized) -> Result<(), (Arc<str>, Rejection)> {
    let limiter = &route.shared.limiter;
    if limiter.is_empty() {
        return Ok(());
    }
    let facts = &authorized.facts;
    let messages = authorized.messages();
    let principal = facts.principal.as_deref();
    let via = facts.arrival.via.as_deref();
    for (i, m) in messages.iter().enumerate() {
        if m.kind != MessageKind::Request {
            continue;
        }
        let call = Call {
            route: &route.name,
            via: via.map(|v| &*v.virtual_server),
            method: &m.method,
            name: m.name.as_deref(),
            exposed: via.and_then(|v| v.exposed_name.as_deref()),
            principal: principal.map(|p| Identity {
                issuer: &p.issuer,
                subject: &p.subject,
            }),
            team: principal.and_then(|p| p.team.as_deref()),
            cost_center: principal.and_then(|p| p.cost_center.as_deref()),
        };
        if let Err(refusal) = limiter.check(&call).await {
            let rule = refusal.rule.clone();
            let rejection = if messages.len() > 1 {
                batch(messages, i, &refusal)
            } else {
                rejection(&refusal).with_id(m.id.clone())
            };
            return Err((rule, rejection));
        }
    }
    Ok(())
}

/// Whole seconds until there is room, at least 1.
fn seconds(refusal: &RateRejection) -> u32 {
    let secs = refusal.retry_after.as_secs() + u64::from(refusal.retry_after.subsec_nanos() > 0);
    u32::try_from(secs.max(1)).unwrap_or(u32::MAX)
}

fn rejection(refusal: &RateRejection) -> Rejection {
    let secs = seconds(refusal);
    let message = if refusal.store_unavailable {
        format!("Rate limit store unavailable: {}", refusal.rule)
    } else {
        format!("Rate limit exceeded: {}", refusal.rule)
    };
    let mut r = Rejection::new(ErrorKind::RateLimited, message);
    r.data = Some(Box::new(json!({"retryAfter": secs, "rule": &*refusal.rule})));
    r.retry_after = Some(secs);
    r
}

/// A legacy batch with element `refused` over its limit.
fn batch(messages: &[tollgate_mcp::Message], refused: usize, refusal: &RateRejection) -> Rejection {
    let elements = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.kind == MessageKind::Request)
        .map(|(i, m)| {
            if i == refused {
                ElementRejection {
                    index: i,
                    id: m.id.clone(),
                    kind: ErrorKind::RateLimited,
                    message: format!("Rate limit exceeded: {}", refusal.rule).into(),
                }
            } else {
                ElementRejection::not_forwarded(i, m.id.clone())
            }
        })
        .collect();
    let mut r = Rejection::batch(ErrorKind::RateLimited, elements);
    r.retry_after = Some(seconds(refusal));
    r
}
