//! Phase 9, budget: has this caller's team, cost centre or principal still
//! got tokens left this period?
//!
//! Runs after `limit` and before `credential`, once per request (a legacy
//! batch counts once). A call under a spent `[[limits.budgets]]` budget
//! answers 429 with `Retry-After` (seconds until the period ends) and a
//! JSON-RPC error (`-32030`, `data.budget`, `data.retryAfter`,
//! `data.resetsAt`); every element of a batch gets it. A call that may go
//! learns where it stands: the tokens left under its tightest budget
//! (sent back as `Tollgate-Budget-Remaining`) and whether a budget is past
//! its warning share (recorded in the audit trail). What the answer costs
//! is added when it ends, by the spend observer (`crate::spend`).

use http::HeaderValue;
use serde_json::json;
use tollgate_core::{BudgetNote, ErrorKind};
use tollgate_limit::{BudgetRejection, Identity, Spender};
use tollgate_mcp::MessageKind;

use crate::rescue::{ElementRejection, Rejection};
use crate::route::Route;
use crate::stage::{Authorized, Budget};

/// The response header with the tokens left under the tightest budget.
pub(crate) const REMAINING: http::HeaderName = http::HeaderName::from_static("tollgate-budget-remaining");

/// Where the authorized call stands under its budgets; `Err` when one is
/// spent.
pub(crate) async fn budget(route: &Route, authorized: &Authorized) -> Result<Budget, (BudgetNote, Rejection)> {
    let limiter = &route.shared.limiter;
    let facts = &authorized.facts;
    let messages = authorized.messages();
    if !messages.iter().any(|m| m.kind == MessageKind::Request) {
        return Ok(Budget::Unbudgeted);
    }
    let principal = facts.principal.as_deref();
    let who = Spender {
        route: &route.name,
        via: facts.arrival.via.as_deref().map(|v| &*v.virtual_server),
        principal: principal.map(|p| Identity {
            issuer: &p.issuer,
            subject: &p.subject,
        }),
        team: principal.and_then(|p| p.team.as_deref()),
        cost_center: principal.and_then(|p| p.cost_center.as_deref()),
    };
    let standing = limiter.check_budgets(&who).await.map_err(|e| {
        let note = BudgetNote {
            id: e.budget.clone(),
            warn: true,
            exhausted: true,
        };
        (note, rejection(&e, messages))
    })?;
    Ok(standing.map_or(Budget::Unbudgeted, Budget::Within))
}

/// The `Tollgate-Budget-Remaining` value, for a call a budget counts.
pub(crate) fn header(budget: &Budget) -> Option<HeaderValue> {
    match budget {
        Budget::Unbudgeted => None,
        Budget::Within(standing) => Some(HeaderValue::from(standing.remaining)),
    }
}

fn rejection(e: &BudgetRejection, messages: &[tollgate_mcp::Message]) -> Rejection {
    let secs = u32::try_from(e.resets_in.as_secs().max(1)).unwrap_or(u32::MAX);
    let message = if e.store_unavailable {
        format!("Budget store unavailable: {}", e.budget)
    } else {
        format!("Budget exhausted: {}", e.budget)
    };
    let mut r = if messages.len() > 1 {
        let elements = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.kind == MessageKind::Request)
            .map(|(i, m)| ElementRejection {
                index: i,
                id: m.id.clone(),
                kind: ErrorKind::BudgetExhausted,
                message: message.clone().into(),
            })
            .collect();
        Rejection::batch(ErrorKind::BudgetExhausted, elements)
    } else {
        let id = messages.first().and_then(|m| m.id.clone());
        Rejection::new(ErrorKind::BudgetExhausted, message).with_id(id)
    };
    r.data = Some(Box::new(json!({
        "budget": &*e.budget,
        "retryAfter": secs,
        "resetsAt": e.resets_at,
    })));
    r.retry_after = Some(secs);
    r
}
