//! The decision cache: a decision is a pure function of the principal, the
//! action, the named object and the context attributes the policies read,
//! so it is reused for the same inputs until the policy set changes.
//!
//! Request path step 8 (and list filtering): a hit costs a key and a hash
//! lookup instead of building entities and evaluating policies. A set that
//! reads `context.now` is not cached (it changes every second); one that
//! reads `context.minute` gets the minute in its keys. Keys carry the policy
//! generation and a per-principal serial number (never an address), and
//! hold every input in full, so two requests share an entry only when
//! every input the policies can see is equal.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;

use crate::authorize::Outcome;
use crate::clock::Local;
use crate::model::Action;
use crate::needs::{Attr, Needs};
use crate::request::Facts;

/// A cache key: who, which set, what, and every context input read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    principal: u64,
    generation: u64,
    action: Action,
    text: String,
}

/// Serial numbers for principals, so keys never reuse an identity.
static SERIAL: AtomicU64 = AtomicU64::new(1);

/// A fresh principal serial number.
pub(crate) fn serial() -> u64 {
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// Decisions by key, bounded.
#[derive(Debug)]
pub(crate) struct DecisionCache {
    map: DashMap<Key, Outcome>,
    capacity: usize,
}

impl DecisionCache {
    /// A cache of at most `capacity` decisions; 0 disables it.
    pub(crate) fn new(capacity: usize) -> DecisionCache {
        DecisionCache {
            map: DashMap::new(),
            capacity,
        }
    }

    /// The key of a decision, or `None` when it must not be cached.
    #[allow(clippy::too_many_arguments)] // every input of a decision
    pub(crate) fn key(
        &self,
        needs: Needs,
        principal: u64,
        generation: u64,
        action: Action,
        name: Option<&str>,
        facts: &Facts<'_>,
        local: Local,
        args: &[(&str, &str)],
    ) -> Option<Key> {
        if self.capacity == 0 || needs.has(Attr::Now) {
            return None;
        }
        let mut text = String::with_capacity(64);
        field(&mut text, facts.route);
        match name {
            Some(name) => {
                text.push('+');
                field(&mut text, name);
            }
            None => text.push('-'),
        }
        describe(&mut text, needs, facts, local, args);
        Some(Key {
            principal,
            generation,
            action,
            text,
        })
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Outcome> {
        self.map.get(key).map(|o| o.clone())
    }

    pub(crate) fn insert(&self, key: Key, outcome: &Outcome) {
        if self.map.len() >= self.capacity {
            self.map.clear();
        }
        self.map.insert(key, outcome.clone());
    }
}

/// Append the context inputs the policies read.
fn describe(text: &mut String, needs: Needs, facts: &Facts<'_>, local: Local, args: &[(&str, &str)]) {
    if needs.has(Attr::Method) {
        field(text, facts.method);
    }
    if needs.has(Attr::Era) {
        field(text, facts.era.as_str());
    }
    if needs.has(Attr::Annotations) {
        let _ = write!(text, "a{};", facts.annotations.unwrap_or_default().bits());
    }
    for (attr, value) in [
        (Attr::Hour, local.hour),
        (Attr::Minute, local.minute),
        (Attr::Weekday, local.weekday),
    ] {
        if needs.has(attr) {
            let _ = write!(text, "{}{value};", &attr.name()[..1]);
        }
    }
    if needs.has(Attr::ClientIp) {
        let _ = write!(text, "i{:?};", facts.client_ip);
    }
    if needs.has(Attr::Args) {
        let _ = write!(text, "g{};", args.len());
        for (k, v) in args {
            field(text, &k.to_ascii_lowercase());
            field(text, v);
        }
    }
}

/// A length-prefixed field: no two different inputs give the same text.
fn field(text: &mut String, value: &str) {
    let _ = write!(text, "{}:{value}", value.len());
}

#[cfg(test)]
mod tests {
    use tollgate_core::Era;

    use super::*;
    use crate::decision::Reason;

    fn facts<'a>(route: &'a str, method: &'a str) -> Facts<'a> {
        Facts {
            route,
            method,
            era: Era::Modern,
            client_ip: None,
            annotations: None,
            now: 0,
            utc_offset: 0,
        }
    }

    #[test]
    fn keys_hold_every_input_the_policies_read() {
        let cache = DecisionCache::new(2);
        let local = Local {
            hour: 9,
            minute: 1,
            weekday: 3,
        };
        let key = |needs, route, name, args: &[(&str, &str)], local| {
            cache.key(
                needs,
                1,
                1,
                Action::CallTool,
                name,
                &facts(route, "tools/call"),
                local,
                args,
            )
        };
        let all_but_now = Needs::ALL;
        assert!(
            key(all_but_now, "r", Some("n"), &[], local).is_none(),
            "`now` is never cached"
        );
        let some = Needs::default();
        // Without needs, only route and name count.
        let a = key(some, "r", Some("n"), &[("x", "1")], local).unwrap();
        assert_eq!(a, key(some, "r", Some("n"), &[], Local { hour: 1, ..local }).unwrap());
        // Length prefixes keep fields apart.
        assert_ne!(
            key(some, "r/", Some("n"), &[], local),
            key(some, "r", Some("/n"), &[], local)
        );
        assert_ne!(
            key(some, "r", None, &[], local),
            key(some, "r", Some("\u{0}none"), &[], local)
        );
        let outcome = (true, Reason::Allow, vec![]);
        cache.insert(a.clone(), &outcome);
        assert_eq!(cache.get(&a), Some(outcome.clone()));
        let b = key(some, "r", Some("m"), &[], local).unwrap();
        cache.insert(b.clone(), &outcome);
        cache.insert(key(some, "r", Some("o"), &[], local).unwrap(), &outcome);
        assert!(cache.map.len() <= 2);
        assert!(
            DecisionCache::new(0)
                .key(some, 1, 1, Action::CallTool, None, &facts("r", "m"), local, &[])
                .is_none()
        );
    }
}
