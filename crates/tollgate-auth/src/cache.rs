//! The verified-token cache: request path step 5 in the common case.
//!
//! Keyed by the SHA-256 of the token (the token itself is not kept), so a
//! hit is one hash and one cache lookup. An entry ends at the token's expiry
//! (plus leeway) or when the issuer's key-set generation moves on (a
//! signing key was removed or replaced); a lookup that finds such an entry
//! removes it. The size is bounded by a sharded [`quick_cache`] cache whose
//! S3-FIFO eviction makes room for each insert by dropping a cold entry:
//! no sweep over the entries, on insert or anywhere else.

use std::sync::Arc;

use aws_lc_rs::digest;
use quick_cache::sync::Cache;
use tollgate_core::Principal;

/// SHA-256 of a token.
pub(crate) type TokenHash = [u8; 32];

/// Hash a token for use as a cache key.
pub(crate) fn token_hash(token: &str) -> TokenHash {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest::digest(&digest::SHA256, token.as_bytes()).as_ref());
    out
}

/// One verified token.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) principal: Arc<Principal>,
    /// Index of the issuer that vouched for it.
    pub(crate) issuer: usize,
    /// The issuer's key-set generation when verified; `None` for
    /// introspected tokens (not tied to signing keys).
    pub(crate) generation: Option<u64>,
    /// Unix seconds after which the entry is no longer used.
    pub(crate) valid_until: u64,
}

/// See the module documentation.
pub(crate) struct TokenCache {
    map: Cache<TokenHash, Entry>,
}

impl TokenCache {
    /// A cache of at most `capacity` tokens (at least one).
    pub(crate) fn new(capacity: usize) -> TokenCache {
        TokenCache {
            map: Cache::new(capacity.max(1)),
        }
    }

    /// The entry for `hash` if still valid at `now`, with `generation`
    /// telling the current key-set generation of an issuer.
    pub(crate) fn get(&self, hash: &TokenHash, now: u64, generation: impl Fn(usize) -> u64) -> Option<Entry> {
        let entry = self.map.get(hash)?;
        let fresh = entry.valid_until > now && entry.generation.is_none_or(|g| g == generation(entry.issuer));
        if fresh {
            return Some(entry);
        }
        // Only this stale entry: one verified meanwhile stays.
        self.map
            .remove_if(hash, |e| Arc::ptr_eq(&e.principal, &entry.principal));
        None
    }

    /// Cache `entry` under `hash`, evicting a cold entry when full.
    pub(crate) fn insert(&self, hash: TokenHash, entry: Entry) {
        self.map.insert(hash, entry);
    }

    /// Number of cached tokens.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use tollgate_core::PrincipalKind;

    use super::*;

    fn entry(valid_until: u64, generation: Option<u64>) -> Entry {
        Entry {
            principal: Arc::new(Principal {
                issuer: "i".into(),
                subject: "s".into(),
                client_id: None,
                token_id: None,
                audience: vec![],
                groups: vec![],
                team: None,
                cost_center: None,
                scopes: vec![],
                expires_at: valid_until,
                kind: PrincipalKind::User,
            }),
            issuer: 0,
            generation,
            valid_until,
        }
    }

    #[test]
    fn entries_end_at_expiry_or_on_a_new_generation() {
        let cache = TokenCache::new(10);
        let (a, b) = (token_hash("a"), token_hash("b"));
        cache.insert(a, entry(100, Some(1)));
        cache.insert(b, entry(100, None));
        assert!(cache.get(&a, 99, |_| 1).is_some());
        assert!(cache.get(&a, 99, |_| 2).is_none(), "key rotation drops it");
        assert!(cache.get(&a, 99, |_| 1).is_none(), "and it stays dropped");
        assert!(cache.get(&b, 99, |_| 2).is_some(), "introspected: no generation");
        assert!(cache.get(&b, 100, |_| 2).is_none(), "expired");
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn size_is_bounded_and_the_newest_entry_is_kept() {
        for capacity in [1, 10, 100, 5_000] {
            let cache = TokenCache::new(capacity);
            // Each shard holds its share rounded up.
            let bound = capacity.next_multiple_of(cache.map.num_shards());
            assert_eq!(cache.map.capacity(), bound as u64);
            for i in 0..capacity * 10 {
                cache.insert(token_hash(&i.to_string()), entry(50, None));
                assert!(cache.len() <= bound, "{capacity}: {}", cache.len());
            }
            let newest = token_hash(&(capacity * 10 - 1).to_string());
            assert!(
                cache.get(&newest, 10, |_| 0).is_some(),
                "{capacity}: the newest is kept"
            );
        }
    }
}
