//! Where the authorization server keeps its state: sign-ins in progress,
//! codes, grants, refresh tokens, registered clients, consents and used
//! assertion ids — JSON values by namespace and key, each with an expiry.
//!
//! [`MemoryStore`] keeps them in this process (one replica; restarts end
//! every grant). A shared store (Redis) implements the same [`Store`] so
//! that every replica sees one state; `take` must be atomic there (one
//! reader wins), as it is here.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use dashmap::DashMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::time::unix_now;

/// The store could not be reached or answered nonsense.
#[derive(Debug, thiserror::Error)]
#[error("authorization server store: {0}")]
pub struct StoreError(pub String);

/// A key-value store with expiries and an atomic take.
#[async_trait]
pub trait Store: Send + Sync + Debug {
    /// Set `ns`/`key` to `value` for `ttl`.
    async fn put(&self, ns: &str, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError>;
    /// Set `ns`/`key` unless it is set; whether it was set now.
    async fn put_new(&self, ns: &str, key: &str, value: Vec<u8>, ttl: Duration) -> Result<bool, StoreError>;
    /// The value of `ns`/`key`.
    async fn get(&self, ns: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Get and remove `ns`/`key` in one step: of two callers, one gets it.
    async fn take(&self, ns: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Remove `ns`/`key`.
    async fn delete(&self, ns: &str, key: &str) -> Result<(), StoreError>;
    /// Every live value in `ns`.
    async fn list(&self, ns: &str) -> Result<Vec<Vec<u8>>, StoreError>;
}

/// Typed access over any [`Store`]: values as JSON (the vault uses it
/// too).
#[derive(Debug, Clone)]
pub struct Records<S: ?Sized = dyn Store>(pub std::sync::Arc<S>);

fn decode<T: DeserializeOwned>(bytes: Option<Vec<u8>>) -> Result<Option<T>, StoreError> {
    bytes
        .map(|b| serde_json::from_slice(&b).map_err(|e| StoreError(format!("stored value: {e}"))))
        .transpose()
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| StoreError(e.to_string()))
}

impl<S: Store + ?Sized> Records<S> {
    /// [`Store::put`] of a JSON value.
    pub async fn put<T: Serialize>(&self, ns: &str, key: &str, v: &T, ttl: Duration) -> Result<(), StoreError> {
        self.0.put(ns, key, encode(v)?, ttl).await
    }
    /// [`Store::put`] of a JSON value.
    pub async fn put_new<T: Serialize>(&self, ns: &str, key: &str, v: &T, ttl: Duration) -> Result<bool, StoreError> {
        self.0.put_new(ns, key, encode(v)?, ttl).await
    }
    /// [`Store::get`] of a JSON value.
    pub async fn get<T: DeserializeOwned>(&self, ns: &str, key: &str) -> Result<Option<T>, StoreError> {
        decode(self.0.get(ns, key).await?)
    }
    /// [`Store::take`] of a JSON value.
    pub async fn take<T: DeserializeOwned>(&self, ns: &str, key: &str) -> Result<Option<T>, StoreError> {
        decode(self.0.take(ns, key).await?)
    }
    /// [`Store::delete`] of a JSON value.
    pub async fn delete(&self, ns: &str, key: &str) -> Result<(), StoreError> {
        self.0.delete(ns, key).await
    }
    /// [`Store::list`] of a JSON value.
    pub async fn list<T: DeserializeOwned>(&self, ns: &str) -> Result<Vec<T>, StoreError> {
        let all = self.0.list(ns).await?;
        all.into_iter()
            .map(|b| decode(Some(b)).map(Option::unwrap_or_default))
            .collect::<Result<Vec<Option<T>>, _>>()
            .map(|v| v.into_iter().flatten().collect())
    }
}

/// The store of a single replica: a concurrent map, swept of expired
/// entries as it is written.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: DashMap<(String, String), (Vec<u8>, u64)>,
}

/// Most entries before a write sweeps expired ones.
const SWEEP_AT: usize = 50_000;

impl MemoryStore {
    fn live(&self, ns: &str, key: &str) -> Option<Vec<u8>> {
        let k = (ns.to_owned(), key.to_owned());
        let entry = self.map.get(&k)?;
        (entry.1 > unix_now()).then(|| entry.0.clone())
    }

    fn sweep(&self) {
        if self.map.len() >= SWEEP_AT {
            let now = unix_now();
            self.map.retain(|_, (_, exp)| *exp > now);
        }
    }
}

fn expiry(ttl: Duration) -> u64 {
    unix_now().saturating_add(ttl.as_secs().max(1))
}

#[async_trait]
impl Store for MemoryStore {
    async fn put(&self, ns: &str, key: &str, value: Vec<u8>, ttl: Duration) -> Result<(), StoreError> {
        self.sweep();
        self.map.insert((ns.to_owned(), key.to_owned()), (value, expiry(ttl)));
        Ok(())
    }

    async fn put_new(&self, ns: &str, key: &str, value: Vec<u8>, ttl: Duration) -> Result<bool, StoreError> {
        self.sweep();
        let now = unix_now();
        let mut entry = self
            .map
            .entry((ns.to_owned(), key.to_owned()))
            .or_insert((Vec::new(), 0));
        if entry.1 > now {
            return Ok(false);
        }
        *entry = (value, expiry(ttl));
        Ok(true)
    }

    async fn get(&self, ns: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.live(ns, key))
    }

    async fn take(&self, ns: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let now = unix_now();
        Ok(self
            .map
            .remove(&(ns.to_owned(), key.to_owned()))
            .filter(|(_, (_, exp))| *exp > now)
            .map(|(_, (v, _))| v))
    }

    async fn delete(&self, ns: &str, key: &str) -> Result<(), StoreError> {
        self.map.remove(&(ns.to_owned(), key.to_owned()));
        Ok(())
    }

    async fn list(&self, ns: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let now = unix_now();
        Ok(self
            .map
            .iter()
            .filter(|e| e.key().0 == ns && e.value().1 > now)
            .map(|e| e.value().0.clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[tokio::test]
    async fn take_is_single_use_and_put_new_keeps_the_first() {
        let s = MemoryStore::default();
        let ttl = Duration::from_secs(60);
        s.put("code", "a", b"1".to_vec(), ttl).await.unwrap();
        assert_eq!(s.take("code", "a").await.unwrap(), Some(b"1".to_vec()));
        assert_eq!(s.take("code", "a").await.unwrap(), None);
        assert!(s.put_new("jti", "x", b"1".to_vec(), ttl).await.unwrap());
        assert!(!s.put_new("jti", "x", b"2".to_vec(), ttl).await.unwrap());
        assert_eq!(s.get("jti", "x").await.unwrap(), Some(b"1".to_vec()));
        assert_eq!(s.list("jti").await.unwrap().len(), 1);
        assert!(s.list("code").await.unwrap().is_empty());
    }
}
