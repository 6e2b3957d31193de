//! Evaluating the selected policies and combining their results the way
//! Cedar does: default deny, `forbid` wins; and, Tollgate's own rules, any
//! evaluation error denies, and a deny that only `@scope` forbids the
//! caller fails determine becomes a missing-scope denial.
//!
//! Request path step 8, after [`crate::index`] selected the policies whose
//! scopes match. A selected policy without conditions is satisfied; the
//! others have their conditions evaluated by Cedar's evaluator against the
//! request's entity store.

use std::collections::HashMap;
use std::sync::Arc;

use cedar_policy_core::ast::{Literal, Request, ValueKind};
use cedar_policy_core::entities::Entities;
use cedar_policy_core::evaluator::Evaluator;
use cedar_policy_core::extensions::Extensions;
use tollgate_core::Principal;

use crate::compile::Compiled;
use crate::decision::Reason;
use crate::index::Bits;

/// Which selected policies are satisfied, and which failed.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    permits: Vec<usize>,
    forbids: Vec<usize>,
    errors: Vec<(usize, String)>,
}

/// (allowed, reason, determining policy ids).
pub(crate) type Outcome = (bool, Reason, Vec<Arc<str>>);

/// Evaluate the policies `selected` of `c` for `request`.
pub(crate) fn evaluate(c: &Compiled, selected: &Bits, request: Request, entities: &Entities) -> Verdict {
    let evaluator = Evaluator::new(request, entities, Extensions::all_available());
    let slots = HashMap::new();
    let mut v = Verdict::default();
    for i in selected.ones() {
        let Some(p) = c.index.get(i) else { continue };
        let satisfied = match &p.body {
            None => Ok(true),
            Some(body) => evaluator
                .interpret(body, &slots)
                .map_err(|e| e.to_string())
                .and_then(|value| match value.value {
                    ValueKind::Lit(Literal::Bool(b)) => Ok(b),
                    _ => Err("the condition is not a boolean".to_owned()),
                }),
        };
        match satisfied {
            Ok(true) if p.forbid => v.forbids.push(i),
            Ok(true) => v.permits.push(i),
            Ok(false) => {}
            Err(e) => v.errors.push((i, e)),
        }
    }
    v
}

impl Verdict {
    /// The decision, with the determining policies' ids.
    pub(crate) fn outcome(&self, c: &Compiled, principal: &Principal) -> Outcome {
        let ids = |set: &[usize]| {
            set.iter()
                .filter_map(|i| c.meta.get(*i))
                .map(|m| Arc::clone(&m.id))
                .collect()
        };
        if !self.errors.is_empty() {
            let failed: Vec<usize> = self.errors.iter().map(|(i, _)| *i).collect();
            let messages = self
                .errors
                .iter()
                .map(|(i, e)| format!("policy `{}`: {e}", c.meta.get(*i).map_or("?", |m| &m.id)))
                .collect();
            return (false, Reason::Error { messages }, ids(&failed));
        }
        if self.forbids.is_empty() {
            let allowed = !self.permits.is_empty();
            let reason = if allowed { Reason::Allow } else { Reason::Deny };
            return (allowed, reason, ids(&self.permits));
        }
        let scopes = self.missing_scopes(c, principal);
        // With the scopes the scope forbids would not fire; the decision
        // would then be the permits'.
        let reason = if !scopes.is_empty() && !self.permits.is_empty() {
            Reason::DenyMissingScope { scopes }
        } else {
            Reason::Deny
        };
        (false, reason, ids(&self.forbids))
    }

    /// The scopes the caller lacks when every satisfied forbid is a `@scope`
    /// forbid; empty otherwise.
    fn missing_scopes(&self, c: &Compiled, principal: &Principal) -> Vec<String> {
        let mut scopes: Vec<String> = Vec::new();
        for i in &self.forbids {
            let Some(meta) = c.meta.get(*i).filter(|m| !m.scopes.is_empty()) else {
                return Vec::new();
            };
            for s in &meta.scopes {
                if !principal.has_scope(s) && !scopes.contains(s) {
                    scopes.push(s.clone());
                }
            }
        }
        scopes
    }
}
