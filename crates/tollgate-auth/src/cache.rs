//! The verified-token cache: request path step 5 in the common case.
//!
//! Keyed by the SHA-256 of the token (the token itself is not kept), so a
//! hit is one hash and one map lookup. An entry ends at the token's expiry
//! (plus leeway) or when the issuer's key-set generation moves on (a
//! signing key was removed or replaced). The size is bounded: when full,
//! expired entries are swept, then arbitrary ones dropped.

use std::sync::Arc;

use aws_lc_rs::digest;
use dashmap::DashMap;
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
    map: DashMap<TokenHash, Entry>,
    capacity: usize,
}

impl TokenCache {
    pub(crate) fn new(capacity: usize) -> TokenCache {
        TokenCache {
            map: DashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The entry for `hash` if still valid at `now`, with `generation`
    /// telling the current key-set generation of an issuer.
    pub(crate) fn get(&self, hash: &TokenHash, now: u64, generation: impl Fn(usize) -> u64) -> Option<Entry> {
        let entry = self.map.get(hash)?.clone();
        let fresh = entry.valid_until > now && entry.generation.is_none_or(|g| g == generation(entry.issuer));
        if fresh {
            Some(entry)
        } else {
            self.map.remove(hash);
            None
        }
    }

    pub(crate) fn insert(&self, hash: TokenHash, entry: Entry, now: u64) {
        if self.map.len() >= self.capacity {
            self.map.retain(|_, e| e.valid_until > now);
            let excess = (self.map.len() + 1).saturating_sub(self.capacity);
            if excess > 0 {
                // Still full of live tokens: drop a tenth (at least what is needed).
                let drop = excess.max(self.capacity / 10);
                let victims: Vec<TokenHash> = self.map.iter().take(drop).map(|e| *e.key()).collect();
                for k in victims {
                    self.map.remove(&k);
                }
            }
        }
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
        cache.insert(a, entry(100, Some(1)), 0);
        cache.insert(b, entry(100, None), 0);
        assert!(cache.get(&a, 99, |_| 1).is_some());
        assert!(cache.get(&a, 99, |_| 2).is_none(), "key rotation drops it");
        assert!(cache.get(&a, 99, |_| 1).is_none(), "and it stays dropped");
        assert!(cache.get(&b, 99, |_| 2).is_some(), "introspected: no generation");
        assert!(cache.get(&b, 100, |_| 2).is_none(), "expired");
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn size_is_bounded() {
        let cache = TokenCache::new(100);
        for i in 0..1000 {
            cache.insert(token_hash(&i.to_string()), entry(50 + (i % 2), None), 10);
        }
        assert!(cache.len() <= 100, "{}", cache.len());
        assert!(cache.get(&token_hash("999"), 10, |_| 0).is_some(), "the newest is kept");
    }
}
