//! The scope index: which policies apply to a request, decided on their
//! scopes before any condition is looked at.
//!
//! Cedar's authorizer evaluates every policy of the set it is given, and
//! rebuilds each policy's whole condition to do so (about half a microsecond per
//! policy here), so a decision over 100 policies would cost 100 policy
//! evaluations. The index keeps, per policy, its principal, action and
//! resource scope, and selects exactly the policies whose three scopes
//! match a request: a few bitset operations (the principal part is computed
//! once per principal and policy generation) and an exact check of the few
//! candidates. Only the conditions of those policies are then evaluated
//! ([`crate::authorize`]); a policy without conditions costs nothing more.
//!
//! Scope matching follows Cedar's semantics on the gateway's entities,
//! whose hierarchy is shallow and known, and handed over transitively
//! closed: principals under groups and teams; objects under their server
//! and, through a virtual server, under the virtual server too; a server
//! under the virtual server a call came through; actions under their
//! groups. Tests compare the engine with Cedar's own authorizer.

use std::collections::HashMap;
use std::sync::Arc;

use cedar_policy::{ActionConstraint, EntityTypeName, EntityUid, Policy, PrincipalConstraint, ResourceConstraint};
use cedar_policy_core::ast::Expr;

use crate::model::Action;

/// A set of policy indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Bits(Box<[u64]>);

impl Bits {
    pub(crate) fn empty(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)].into_boxed_slice())
    }

    pub(crate) fn set(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    #[cfg(test)]
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub(crate) fn clear(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w &= !(1 << (i % 64));
        }
    }

    pub(crate) fn or(&mut self, other: &Bits) {
        self.0.iter_mut().zip(other.0.iter()).for_each(|(a, b)| *a |= b);
    }

    pub(crate) fn and(&mut self, other: &Bits) {
        self.0.iter_mut().zip(other.0.iter()).for_each(|(a, b)| *a &= b);
    }

    #[cfg(test)]
    fn without(&self, other: &Bits) -> Bits {
        Bits(self.0.iter().zip(other.0.iter()).map(|(a, b)| a & !b).collect())
    }

    pub(crate) fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.0
            .iter()
            .enumerate()
            .flat_map(|(w, bits)| (0..64).filter(move |b| bits & (1 << b) != 0).map(move |b| w * 64 + b))
    }
}

/// A principal or resource scope, reduced to what matching needs.
#[derive(Debug, Clone)]
enum Scope {
    Any,
    Eq(EntityUid),
    In(EntityUid),
    Is(EntityTypeName),
    IsIn(EntityTypeName, EntityUid),
}

impl Scope {
    fn of_principal(c: PrincipalConstraint) -> Scope {
        match c {
            PrincipalConstraint::Any => Scope::Any,
            PrincipalConstraint::Eq(u) => Scope::Eq(u),
            PrincipalConstraint::In(u) => Scope::In(u),
            PrincipalConstraint::Is(t) => Scope::Is(t),
            PrincipalConstraint::IsIn(t, u) => Scope::IsIn(t, u),
        }
    }

    fn of_resource(c: ResourceConstraint) -> Scope {
        match c {
            ResourceConstraint::Any => Scope::Any,
            ResourceConstraint::Eq(u) => Scope::Eq(u),
            ResourceConstraint::In(u) => Scope::In(u),
            ResourceConstraint::Is(t) => Scope::Is(t),
            ResourceConstraint::IsIn(t, u) => Scope::IsIn(t, u),
        }
    }

    /// Whether an entity `uid` with (transitively closed) `ancestors`
    /// satisfies this scope (Cedar's `==`, `in`, `is`, `is .. in`).
    fn admits(&self, uid: &EntityUid, ancestors: &[EntityUid]) -> bool {
        let within = |u: &EntityUid| u == uid || ancestors.contains(u);
        match self {
            Scope::Any => true,
            Scope::Eq(u) => u == uid,
            Scope::In(u) => within(u),
            Scope::Is(t) => t == uid.type_name(),
            Scope::IsIn(t, u) => t == uid.type_name() && within(u),
        }
    }
}

/// Whether an action scope admits the action `uid` (member of `groups`).
fn admits_action(c: &ActionConstraint, uid: &EntityUid, groups: &[EntityUid]) -> bool {
    match c {
        ActionConstraint::Any => true,
        ActionConstraint::Eq(u) => u == uid,
        ActionConstraint::In(list) => list.iter().any(|u| u == uid || groups.contains(u)),
    }
}

/// One policy as the engine evaluates it.
#[derive(Debug)]
pub(crate) struct Indexed {
    /// `forbid` rather than `permit`.
    pub(crate) forbid: bool,
    /// Its conditions (`when`, `unless`), if any.
    pub(crate) body: Option<Arc<Expr>>,
    resource: Scope,
}

/// The scope index of one policy set.
#[derive(Debug)]
pub(crate) struct PolicyIndex {
    policies: Vec<Indexed>,
    principal_scopes: Vec<Scope>,
    by_action: Vec<Bits>,
    resource_any: Bits,
    resource_by_type: HashMap<EntityTypeName, Bits>,
    resource_by_uid: HashMap<EntityUid, Bits>,
}

impl PolicyIndex {
    /// Index `policies` (each with its condition, as Cedar's core parsed
    /// it); `action_ancestors(a)` lists the action groups `a` belongs to.
    pub(crate) fn new(
        policies: Vec<(Policy, Option<Arc<Expr>>)>,
        action_uid: impl Fn(Action) -> EntityUid,
        action_ancestors: impl Fn(Action) -> Vec<EntityUid>,
    ) -> PolicyIndex {
        let n = policies.len();
        let mut index = PolicyIndex {
            policies: Vec::with_capacity(n),
            principal_scopes: Vec::with_capacity(n),
            by_action: vec![Bits::empty(n); Action::ALL.len()],
            resource_any: Bits::empty(n),
            resource_by_type: HashMap::new(),
            resource_by_uid: HashMap::new(),
        };
        for (i, (p, body)) in policies.into_iter().enumerate() {
            let principal = Scope::of_principal(p.principal_constraint());
            index.principal_scopes.push(principal);
            for (a, bits) in Action::ALL.into_iter().zip(index.by_action.iter_mut()) {
                if admits_action(&p.action_constraint(), &action_uid(a), &action_ancestors(a)) {
                    bits.set(i);
                }
            }
            let resource = Scope::of_resource(p.resource_constraint());
            index.resource_bucket(&resource, n).set(i);
            index.policies.push(Indexed {
                forbid: p.effect() == cedar_policy::Effect::Forbid,
                body,
                resource,
            });
        }
        index
    }

    /// The bits a resource scope is looked up by.
    fn resource_bucket(&mut self, scope: &Scope, n: usize) -> &mut Bits {
        match scope {
            Scope::Any => &mut self.resource_any,
            Scope::Is(t) => self.resource_by_type.entry(t.clone()).or_insert_with(|| Bits::empty(n)),
            Scope::Eq(u) | Scope::In(u) | Scope::IsIn(_, u) => {
                self.resource_by_uid.entry(u.clone()).or_insert_with(|| Bits::empty(n))
            }
        }
    }

    /// The policies whose principal scope `principal` (with its groups and
    /// team as `ancestors`) satisfies.
    pub(crate) fn principal_bits(&self, principal: &EntityUid, ancestors: &[EntityUid]) -> Bits {
        let mut bits = Bits::empty(self.policies.len());
        for (i, scope) in self.principal_scopes.iter().enumerate() {
            if scope.admits(principal, ancestors) {
                bits.set(i);
            }
        }
        bits
    }

    /// The policies whose scopes match `action` on `resource` (with its
    /// server and virtual server, all of its ancestors, as `ancestors`) by
    /// a principal selecting `principal_bits`.
    pub(crate) fn select(
        &self,
        principal_bits: &Bits,
        action: Action,
        resource: &EntityUid,
        ancestors: &[EntityUid],
    ) -> Bits {
        let mut bits = self.resource_any.clone();
        if let Some(b) = self.resource_by_type.get(resource.type_name()) {
            bits.or(b);
        }
        let mut keyed = false;
        for uid in std::iter::once(resource).chain(ancestors) {
            if let Some(b) = self.resource_by_uid.get(uid) {
                bits.or(b);
                keyed = true;
            }
        }
        bits.and(principal_bits);
        if let Some(a) = self.by_action.get(action.index()) {
            bits.and(a);
        }
        if keyed {
            // `==` on an ancestor and the type of `is .. in` need a check.
            let exact: Vec<usize> = bits
                .ones()
                .filter(|i| {
                    self.policies
                        .get(*i)
                        .is_some_and(|p| !p.resource.admits(resource, ancestors))
                })
                .collect();
            exact.into_iter().for_each(|i| bits.clear(i));
        }
        bits
    }

    /// The indexed policy `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&Indexed> {
        self.policies.get(i)
    }

    /// The number of indexed policies.
    pub(crate) fn len(&self) -> usize {
        self.policies.len()
    }

    #[cfg(test)]
    pub(crate) fn ones(bits: &Bits) -> Vec<usize> {
        bits.ones().collect()
    }
}

#[cfg(test)]
mod tests;
