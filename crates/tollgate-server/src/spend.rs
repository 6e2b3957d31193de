//! The spend observer: adds what each answer cost to the token budgets
//! (`[[limits.budgets]]`) its caller counts against.
//!
//! An observer of the call summary like the audit writer: it runs when a
//! response has ended and counts the answer's estimated tokens — the same
//! figure the audit record holds — so budgets and `tollgate usage` agree.
//! Refused calls cost nothing; answers a virtual server gives itself (its
//! catalog) count like any other.

use std::sync::Arc;

use tollgate_core::{CallObserver, CallSummary, Stage};
use tollgate_limit::{Identity, Limiter, Spender};

/// Adds spend to the limiter's budgets.
pub(crate) struct SpendObserver {
    limiter: Arc<Limiter>,
}

impl SpendObserver {
    pub(crate) fn new(limiter: Arc<Limiter>) -> SpendObserver {
        SpendObserver { limiter }
    }
}

impl CallObserver for SpendObserver {
    fn observe(&self, s: &CallSummary) {
        if s.stage != Stage::Complete || s.answer.error.is_some() || s.answer.tokens == 0 {
            return;
        }
        let principal = s.principal.as_deref();
        let who = Spender {
            route: &s.route,
            via: s.via.as_deref().map(|v| &*v.virtual_server),
            principal: principal.map(|p| Identity {
                issuer: &p.issuer,
                subject: &p.subject,
            }),
            team: principal.and_then(|p| p.team.as_deref()),
            cost_center: principal.and_then(|p| p.cost_center.as_deref()),
        };
        self.limiter.spend(&who, s.answer.tokens);
    }
}
