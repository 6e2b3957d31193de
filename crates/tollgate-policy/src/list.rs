//! List filtering: which entries of a `tools/list`, `resources/list`,
//! `resources/templates/list` or `prompts/list` response the caller may use
//! (request path step 12).
//!
//! An entry stays when the action that uses it (`call_tool`,
//! `read_resource`, `get_prompt`) would be allowed — through the virtual
//! server answering the list, when one does. The batch shares the
//! work a decision repeats: the principal, one entity store holding every
//! entry, one context per combination of tool annotations, and the cached
//! policy selections; per entry only the Cedar evaluation remains.

use std::collections::HashSet;
use std::sync::Arc;

use cedar_policy::EntityUid;
use cedar_policy_core::ast::{Context, Entity};
use cedar_policy_core::entities::Entities;
use tollgate_config::PolicyMode;
use tollgate_core::Principal;

use crate::authorize::{self, Outcome};
use crate::cache::{Asker, Lookup};
use crate::clock::{self, Local};
use crate::decision::{ListDecision, Reason};
use crate::engine::{Current, PolicyEngine};
use crate::model::{CallRequest, ListItem, ListRequest, TargetKind};
use crate::needs::Attr;
use crate::principal::PrincipalFacts;
use crate::request::{self, Facts, Within};

impl PolicyEngine {
    /// Decide, for each entry of a list response, whether `principal` may
    /// use it. Entries that cannot be decided are hidden.
    pub fn filter(&self, principal: &Arc<Principal>, list: &ListRequest<'_>, items: &[ListItem<'_>]) -> ListDecision {
        let current = self.current.load();
        let (allowed, errors) = self.filter_with(&current, principal, list, items);
        ListDecision {
            allowed,
            enforced: self.mode(list.route, list.virtual_server) == PolicyMode::Enforce,
            errors,
            generation: current.generation,
        }
    }

    /// The names of `names` that stay in the list: those `principal` may
    /// use, or all of them when the route is in observe mode.
    pub fn filter_names<'n>(
        &self,
        principal: &Arc<Principal>,
        list: &ListRequest<'_>,
        names: &[&'n str],
    ) -> Vec<&'n str> {
        let items: Vec<ListItem<'_>> = names.iter().map(|n| ListItem::from(*n)).collect();
        let decision = self.filter(principal, list, &items);
        names
            .iter()
            .enumerate()
            .filter(|(i, _)| decision.keeps(*i))
            .map(|(_, n)| *n)
            .collect()
    }

    fn filter_with(
        &self,
        current: &Current,
        principal: &Arc<Principal>,
        list: &ListRequest<'_>,
        items: &[ListItem<'_>],
    ) -> (Vec<bool>, usize) {
        let facts = self.principals.get(&self.types, principal);
        let mut call = CallRequest::new(list.route, action_method(list.kind)).virtual_server(list.virtual_server);
        (call.era, call.client_ip, call.time) = (list.era, list.client_ip, list.time);
        let base = self.facts(&call);
        let batch = Batch {
            engine: self,
            current,
            facts: &facts,
            principal,
            list,
            local: clock::local(base.now, base.utc_offset),
            base,
        };
        let keys: Vec<Option<Lookup<'_>>> = items.iter().map(|item| batch.key(item)).collect();
        let mut outcomes: Vec<Option<Arc<Outcome>>> = keys
            .iter()
            .map(|k| k.as_ref().and_then(|k| self.decisions.get(k)))
            .collect();
        let misses: Vec<usize> = (0..items.len()).filter(|i| outcomes[*i].is_none()).collect();
        if !misses.is_empty() {
            for (i, outcome) in misses.iter().zip(batch.decide(items, &misses)) {
                let outcome = outcome.map(Arc::new);
                if let (Some(key), Some(o)) = (&keys[*i], &outcome) {
                    self.decisions.insert(key, Arc::clone(o));
                }
                outcomes[*i] = outcome;
            }
        }
        let failed = |o: &Option<Arc<Outcome>>| o.as_ref().is_none_or(|o| matches!(o.1, Reason::Error { .. }));
        let errors = outcomes.iter().filter(|o| failed(o)).count();
        (
            outcomes.iter().map(|o| o.as_ref().is_some_and(|o| o.0)).collect(),
            errors,
        )
    }
}

/// What the entries of one list share.
struct Batch<'a> {
    engine: &'a PolicyEngine,
    current: &'a Current,
    facts: &'a PrincipalFacts,
    principal: &'a Principal,
    list: &'a ListRequest<'a>,
    base: Facts<'a>,
    local: Local,
}

impl Batch<'_> {
    /// The decision cache key of an entry; `None` when not cached.
    fn key<'k>(&'k self, item: &ListItem<'k>) -> Option<Lookup<'k>> {
        let f = Facts {
            annotations: item.annotations,
            ..self.base
        };
        let asker = Asker {
            principal: self.facts.serial,
            generation: self.current.generation,
        };
        let (needs, action) = (self.current.compiled.needs, self.list.kind.action());
        Lookup::new(needs, asker, action, Some(item.name), &f, self.local, &[])
            .filter(|_| self.engine.decisions.enabled())
    }

    /// Decide the entries `which`, sharing one entity store; `None` where
    /// an entry could not be decided.
    fn decide(&self, items: &[ListItem<'_>], which: &[usize]) -> Vec<Option<Outcome>> {
        let (e, c) = (self.engine, &self.current.compiled);
        let (action, route) = (self.list.kind.action(), self.list.route);
        let within = Within::target(&e.types, route, self.list.virtual_server);
        let targets: Vec<_> = which
            .iter()
            .filter_map(|i| items.get(*i))
            .map(|item| {
                let target = request::target_entity(&e.types, self.list.kind, route, item.name, &within);
                (item, target)
            })
            .collect();
        let Some(store) = self.store(targets.iter().map(|(_, t)| t)) else {
            return vec![None; which.len()];
        };
        let bits = (self.facts).bits(self.current.generation, || {
            c.index.principal_bits(&self.facts.uid, &self.facts.ancestors)
        });
        let mut contexts: Vec<Option<Context>> = vec![None; 16];
        let mut out = Vec::with_capacity(which.len());
        for (item, (uid, _)) in &targets {
            let slot = contexts.get_mut(item.annotations.unwrap_or_default().bits());
            let context = slot.and_then(|slot| {
                if slot.is_none() {
                    let f = Facts {
                        annotations: item.annotations,
                        ..self.base
                    };
                    *slot = request::context(c.needs, &e.statics, self.facts, &f, self.local).ok();
                }
                slot.clone()
            });
            out.push(context.map(|context| {
                let selected = c.index.select(&bits.1, action, uid, within.uids());
                let req = request::request(self.facts, e.types.action(action), uid, context);
                authorize::evaluate(c, &selected, req, &store).outcome(c, self.principal)
            }));
        }
        out
    }

    /// One entity store for the principal, the action and every entry.
    fn store<'t>(&self, targets: impl Iterator<Item = &'t (EntityUid, Arc<Entity>)>) -> Option<Entities> {
        let c = &self.current.compiled;
        let action = c.actions.get(self.list.kind.action().index())?;
        let mut seen = HashSet::new();
        let unique = targets
            .filter(|(uid, _)| seen.insert(uid.clone()))
            .map(|(_, e)| Arc::clone(e));
        let args = c
            .needs
            .has(Attr::Args)
            .then(|| request::args_entity(&self.engine.statics, &[]));
        let fixed = [&self.facts.entity, action].into_iter().cloned();
        request::store(fixed.chain(unique).chain(args)).ok()
    }
}

/// The method whose action decides visibility, for `context.method`.
fn action_method(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Tool => "tools/call",
        TargetKind::Resource => "resources/read",
        TargetKind::Prompt => "prompts/get",
    }
}
