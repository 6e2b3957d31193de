//! The decision cache: a decision is a pure function of the principal, the
//! action, the named object and the context attributes the policies read,
//! so it is reused for the same inputs until the policy set changes.
//!
//! Request path step 8 (and list filtering): a hit costs one hash and one
//! lookup by a borrowed key ([`Lookup`], built without allocating) instead of
//! building entities and evaluating policies; the owned [`Key`] is built
//! only to store a decision after a miss. A set that reads `context.now` is
//! not cached (it changes every second); one that reads `context.minute`
//! gets the minute in its keys. Keys carry the policy generation and a
//! per-principal serial number (never an address), and hold every input in
//! full, so two requests share an entry only when every input the policies
//! can see is equal. After a reload, entries of the old generation are never
//! found again and leave as eviction reaches them.
//!
//! The size is bounded by a sharded [`quick_cache`] cache: its S3-FIFO
//! eviction drops a cold entry to make room, with no sweep over the entries.

mod key;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;

use crate::authorize::Outcome;
pub(crate) use key::{Asker, Key, Lookup};

/// Serial numbers for principals, so keys never reuse an identity.
static SERIAL: AtomicU64 = AtomicU64::new(1);

/// A fresh principal serial number.
pub(crate) fn serial() -> u64 {
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// Decisions by key, bounded; see the module documentation.
pub(crate) struct DecisionCache {
    /// `None` when the cache is disabled.
    map: Option<Cache<Key, Arc<Outcome>>>,
}

impl std::fmt::Debug for DecisionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionCache")
            .field("entries", &self.map.as_ref().map_or(0, Cache::len))
            .field("capacity", &self.map.as_ref().map_or(0, Cache::capacity))
            .finish()
    }
}

impl DecisionCache {
    /// A cache of at most `capacity` decisions (each shard's share rounded
    /// up); 0 disables it.
    pub(crate) fn new(capacity: usize) -> DecisionCache {
        DecisionCache {
            map: (capacity > 0).then(|| Cache::new(capacity)),
        }
    }

    /// Whether decisions are kept at all.
    pub(crate) fn enabled(&self) -> bool {
        self.map.is_some()
    }

    /// The decision stored for `key`. Does not allocate.
    pub(crate) fn get(&self, key: &Lookup<'_>) -> Option<Arc<Outcome>> {
        self.map.as_ref()?.get(key)
    }

    /// Store `outcome` under `key`, evicting a cold entry when full.
    pub(crate) fn insert(&self, key: &Lookup<'_>, outcome: Arc<Outcome>) {
        if let Some(map) = &self.map {
            map.insert(key.to_key(), outcome);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.as_ref().map_or(0, Cache::len)
    }
}

#[cfg(test)]
mod tests {
    use tollgate_core::Era;

    use super::*;
    use crate::clock::Local;
    use crate::decision::Reason;
    use crate::model::Action;
    use crate::needs::Needs;
    use crate::request::Facts;

    fn lookup(name: &str) -> Lookup<'_> {
        let facts = Facts {
            route: "r",
            method: "tools/call",
            era: Era::Modern,
            client_ip: None,
            annotations: None,
            now: 0,
            utc_offset: 0,
            virtual_server: None,
            upstream_grant: None,
        };
        let asker = Asker {
            principal: 1,
            generation: 1,
        };
        let local = Local {
            hour: 9,
            minute: 1,
            weekday: 3,
        };
        Lookup::new(
            Needs::default(),
            asker,
            Action::CallTool,
            Some(name),
            &facts,
            local,
            &[],
        )
        .unwrap()
    }

    fn outcome(allowed: bool) -> Arc<Outcome> {
        Arc::new((allowed, if allowed { Reason::Allow } else { Reason::Deny }, vec![]))
    }

    #[test]
    fn decisions_are_found_by_their_borrowed_key() {
        let cache = DecisionCache::new(10);
        assert!(cache.get(&lookup("a")).is_none());
        cache.insert(&lookup("a"), outcome(true));
        cache.insert(&lookup("b"), outcome(false));
        assert_eq!(cache.get(&lookup("a")).map(|o| o.0), Some(true));
        assert_eq!(cache.get(&lookup("b")).map(|o| o.0), Some(false));
        assert!(cache.get(&lookup("c")).is_none());
        let off = DecisionCache::new(0);
        off.insert(&lookup("a"), outcome(true));
        assert!(!off.enabled() && off.get(&lookup("a")).is_none());
    }

    #[test]
    fn size_is_bounded_and_the_newest_decision_is_kept() {
        for capacity in [1, 10, 100, 5_000] {
            let cache = DecisionCache::new(capacity);
            let shards = cache.map.as_ref().map_or(1, Cache::num_shards);
            // Each shard holds its share rounded up.
            let bound = capacity.next_multiple_of(shards);
            let names: Vec<String> = (0..capacity * 10).map(|i| i.to_string()).collect();
            for name in &names {
                cache.insert(&lookup(name), outcome(true));
                assert!(cache.len() <= bound, "{capacity}: {}", cache.len());
            }
            let newest = names.last().map(|n| lookup(n));
            assert!(newest.and_then(|k| cache.get(&k)).is_some(), "{capacity}");
        }
    }
}
