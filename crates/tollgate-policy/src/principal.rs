//! The caller as a Cedar entity, built once per verified token.
//!
//! Authentication (request path step 5) shares one `Arc<Principal>` per
//! token; this cache keys on that `Arc` (its address, with a `Weak` kept so
//! the address cannot be reused while the entry lives) and holds the
//! principal's entity, its context values (issuer, audience, scopes) and,
//! per policy generation, which policies its principal scope selects. A
//! decision for a known token therefore builds nothing for the principal.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwapOption;
use cedar_policy::EntityUid;
use cedar_policy_core::ast::{Entity, PartialValue, Value};
use quick_cache::sync::Cache;
use smol_str::SmolStr;
use tollgate_core::Principal;

use crate::ids::Types;
use crate::index::Bits;

/// What the engine knows about one principal.
#[derive(Debug)]
pub(crate) struct PrincipalFacts {
    /// A number no other principal gets (decision cache keys).
    pub(crate) serial: u64,
    /// `Tollgate::User::"<sub>"` or `Tollgate::Service::"<sub>"`.
    pub(crate) uid: EntityUid,
    /// Its groups and team, as entities.
    pub(crate) ancestors: Vec<EntityUid>,
    /// Its entity, ready for a request's entity store.
    pub(crate) entity: Arc<Entity>,
    /// `context.issuer`.
    pub(crate) issuer: Value,
    /// `context.audience`.
    pub(crate) audience: Value,
    /// `context.scopes`.
    pub(crate) scopes: Value,
    /// Which policies its principal scope selects, for one generation.
    bits: ArcSwapOption<(u64, Bits)>,
}

impl PrincipalFacts {
    pub(crate) fn new(types: &Types, p: &Principal) -> PrincipalFacts {
        let ty = if p.is_service() { &types.service } else { &types.user };
        let uid = Types::uid(ty, &p.subject);
        let mut ancestors: Vec<EntityUid> = p.groups.iter().map(|g| Types::uid(&types.group, g)).collect();
        ancestors.extend(p.team.iter().map(|t| Types::uid(&types.team, t)));
        let strings = |v: &[String]| Value::set(v.iter().map(|s| Value::from(s.as_str())), None);
        let scopes = strings(&p.scopes);
        let mut attrs: Vec<(SmolStr, PartialValue)> = vec![
            ("subject".into(), Value::from(p.subject.as_str()).into()),
            ("issuer".into(), Value::from(p.issuer.as_str()).into()),
            ("groups".into(), strings(&p.groups).into()),
            ("scopes".into(), scopes.clone().into()),
        ];
        let optional = [
            ("client_id", &p.client_id),
            ("team", &p.team),
            ("cost_center", &p.cost_center),
        ];
        for (name, value) in optional {
            if let Some(v) = value {
                attrs.push((name.into(), Value::from(v.as_str()).into()));
            }
        }
        let parents: HashSet<_> = ancestors.iter().cloned().map(Into::into).collect();
        let entity = Entity::new_with_attr_partial_value(uid.clone().into(), attrs, HashSet::new(), parents, []);
        PrincipalFacts {
            serial: crate::cache::serial(),
            uid,
            ancestors,
            entity: Arc::new(entity),
            issuer: Value::from(p.issuer.as_str()),
            audience: strings(&p.audience),
            scopes,
            bits: ArcSwapOption::empty(),
        }
    }

    /// The policies selected by this principal's scope in policy set
    /// `generation`, computed by `compute` on first use.
    pub(crate) fn bits(&self, generation: u64, compute: impl FnOnce() -> Bits) -> Arc<(u64, Bits)> {
        if let Some(b) = self.bits.load_full()
            && b.0 == generation
        {
            return b;
        }
        let fresh = Arc::new((generation, compute()));
        self.bits.store(Some(Arc::clone(&fresh)));
        fresh
    }
}

#[derive(Clone)]
struct Cached {
    /// Keeps the `Principal`'s allocation (not its contents) alive, so its
    /// address, the key, is not reused while this entry exists.
    principal: Weak<Principal>,
    facts: Arc<PrincipalFacts>,
}

/// Principal facts by `Arc<Principal>`, bounded: S3-FIFO eviction drops a
/// cold entry (a token no longer used is never touched again) to make room.
pub(crate) struct PrincipalCache {
    map: Cache<usize, Cached>,
}

impl std::fmt::Debug for PrincipalCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrincipalCache")
            .field("entries", &self.map.len())
            .field("capacity", &self.map.capacity())
            .finish()
    }
}

impl PrincipalCache {
    pub(crate) fn new(capacity: usize) -> PrincipalCache {
        PrincipalCache {
            map: Cache::new(capacity.max(1)),
        }
    }

    /// The facts of `p`, built on first sight of this `Arc`.
    pub(crate) fn get(&self, types: &Types, p: &Arc<Principal>) -> Arc<PrincipalFacts> {
        let key = Arc::as_ptr(p) as usize;
        if let Some(c) = self.map.get(&key)
            && std::ptr::eq(c.principal.as_ptr(), Arc::as_ptr(p))
        {
            return c.facts;
        }
        let facts = Arc::new(PrincipalFacts::new(types, p));
        let cached = Cached {
            principal: Arc::downgrade(p),
            facts: Arc::clone(&facts),
        };
        self.map.insert(key, cached);
        facts
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use tollgate_core::PrincipalKind;

    use super::*;

    pub(crate) fn principal(sub: &str) -> Arc<Principal> {
        Arc::new(Principal {
            issuer: "https://idp.example.com".into(),
            subject: sub.into(),
            client_id: None,
            token_id: None,
            audience: vec![],
            groups: vec!["dev".into()],
            team: Some("payments".into()),
            cost_center: None,
            scopes: vec!["mcp:tools".into()],
            expires_at: 0,
            kind: PrincipalKind::User,
        })
    }

    #[test]
    fn facts_are_built_once_per_token_and_bounded() {
        let types = Types::new().unwrap();
        let cache = PrincipalCache::new(2);
        let alice = principal("alice");
        let a1 = cache.get(&types, &alice);
        let a2 = cache.get(&types, &alice);
        assert!(Arc::ptr_eq(&a1, &a2));
        assert_eq!(a1.uid.to_string(), r#"Tollgate::User::"alice""#);
        assert_eq!(a1.ancestors.len(), 2);
        // The same claims in another token are another entry.
        let alice_again = principal("alice");
        assert!(!Arc::ptr_eq(&a1, &cache.get(&types, &alice_again)));
        drop(alice_again);
        let _bob = cache.get(&types, &principal("bob"));
        assert!(cache.len() <= 2);
        // Ten times the capacity in live tokens: bounded, the newest kept.
        let tokens: Vec<_> = (0..20).map(|i| principal(&format!("u{i}"))).collect();
        let facts: Vec<_> = tokens.iter().map(|t| cache.get(&types, t)).collect();
        assert!(cache.len() <= 2, "{}", cache.len());
        assert!(Arc::ptr_eq(&facts[19], &cache.get(&types, &tokens[19])));
        // Generation-tagged policy bits are recomputed after a reload.
        let b = a1.bits(1, || Bits::empty(3));
        assert_eq!(b.0, 1);
        assert_eq!(a1.bits(1, || unreachable!()).0, 1);
        assert_eq!(a1.bits(2, || Bits::empty(3)).0, 2);
    }
}
