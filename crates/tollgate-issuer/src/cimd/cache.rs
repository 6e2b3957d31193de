//! The fetcher's memory: documents and recent failures by client_id, and
//! the lifetime a response's `Cache-Control` earns.
//!
//! Bounded at [`MAX_ENTRIES`]: an insert into a full cache first drops the
//! expired entries, then, if none had expired, the one closest to expiry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::HeaderMap;
use http::header::{AGE, CACHE_CONTROL};

use super::{CimdError, ClientMetadata};

/// Most client_ids remembered at once.
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// What a fetch came to: the document, or why there is none.
pub(crate) type Outcome = Result<Arc<ClientMetadata>, CimdError>;

#[derive(Debug)]
struct Entry {
    outcome: Outcome,
    expires: Instant,
}

/// Outcomes by client_id, each until its expiry.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Cache {
    /// The outcome stored for `key`, unless expired at `now`.
    pub(crate) fn get(&self, key: &str, now: Instant) -> Option<Outcome> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.get(key).filter(|e| e.expires > now).map(|e| e.outcome.clone())
    }

    /// Remember `outcome` for `key` until `expires` (a lifetime of zero
    /// stores nothing).
    pub(crate) fn insert(&self, key: &str, outcome: Outcome, now: Instant, expires: Instant) {
        if expires <= now {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(key) {
            entries.retain(|_, e| e.expires > now);
            if entries.len() >= MAX_ENTRIES {
                let soonest = entries.iter().min_by_key(|(_, e)| e.expires).map(|(k, _)| k.clone());
                if let Some(k) = soonest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(key.to_owned(), Entry { outcome, expires });
    }

    /// How many entries are held (expired ones included until evicted).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// How long a document may be served from memory: the response's
/// `s-maxage` (Tollgate is a cache shared by all its users) or `max-age`,
/// less its `Age`, clamped to `[min, max]`. `no-store`, `no-cache`, and a
/// response without either directive get `min`: a floor that keeps a
/// client from making Tollgate refetch its document on every request.
pub(crate) fn lifetime(headers: &HeaderMap, min: Duration, max: Duration) -> Duration {
    let mut max_age = None;
    let mut s_maxage = None;
    let mut uncacheable = false;
    let directives = headers
        .get_all(CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for directive in directives {
        let (name, arg) = directive.split_once('=').unwrap_or((directive, ""));
        let seconds = || arg.trim().trim_matches('"').parse::<u64>().ok();
        match name.trim().to_ascii_lowercase().as_str() {
            "no-store" | "no-cache" => uncacheable = true,
            "max-age" => max_age = max_age.or_else(seconds),
            "s-maxage" => s_maxage = s_maxage.or_else(seconds),
            _ => {}
        }
    }
    let age = headers
        .get(AGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let fresh = match s_maxage.or(max_age) {
        Some(secs) if !uncacheable => Duration::from_secs(secs.saturating_sub(age)),
        _ => min,
    };
    fresh.max(min).min(max)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    const MIN: Duration = Duration::from_secs(60);
    const MAX: Duration = Duration::from_secs(86_400);

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn cache_control_lifetimes() {
        let life = |pairs: &[(&'static str, &'static str)]| lifetime(&headers(pairs), MIN, MAX);
        assert_eq!(life(&[]), MIN);
        assert_eq!(life(&[("cache-control", "max-age=300")]), Duration::from_secs(300));
        assert_eq!(
            life(&[("cache-control", "public, MAX-AGE=\"600\"")]),
            Duration::from_secs(600)
        );
        assert_eq!(
            life(&[("cache-control", "max-age=300, s-maxage=900")]),
            Duration::from_secs(900)
        );
        assert_eq!(
            life(&[("cache-control", "max-age=300"), ("age", "100")]),
            Duration::from_secs(200)
        );
        assert_eq!(life(&[("cache-control", "max-age=5")]), MIN);
        assert_eq!(life(&[("cache-control", "max-age=9999999")]), MAX);
        assert_eq!(life(&[("cache-control", "max-age=300, no-store")]), MIN);
        assert_eq!(life(&[("cache-control", "no-cache")]), MIN);
        assert_eq!(life(&[("cache-control", "max-age=oops")]), MIN);
        assert_eq!(
            life(&[("cache-control", "private"), ("cache-control", "max-age=120")]),
            Duration::from_secs(120)
        );
    }

    fn failure(n: usize) -> Outcome {
        Err(CimdError::Status {
            url: format!("https://c.example/{n}"),
            status: 500,
        })
    }

    #[test]
    fn entries_expire() {
        let cache = Cache::default();
        let now = Instant::now();
        cache.insert("a", failure(0), now, now + Duration::from_secs(10));
        assert!(cache.get("a", now + Duration::from_secs(9)).is_some());
        assert!(cache.get("a", now + Duration::from_secs(10)).is_none());
        cache.insert("b", failure(1), now, now);
        assert!(cache.get("b", now).is_none(), "a zero lifetime stores nothing");
    }

    #[test]
    fn full_cache_evicts_expired_then_soonest() {
        let cache = Cache::default();
        let now = Instant::now();
        for n in 0..MAX_ENTRIES {
            let life = Duration::from_secs(if n < 10 { 1 } else { 100 + n as u64 });
            cache.insert(&n.to_string(), failure(n), now, now + life);
        }
        let later = now + Duration::from_secs(2);
        cache.insert("new", failure(0), later, later + Duration::from_secs(50));
        assert_eq!(cache.len(), MAX_ENTRIES - 10 + 1, "the expired ten are gone");
        for n in 0..10 {
            cache.insert(
                &format!("more{n}"),
                failure(n),
                later,
                later + Duration::from_secs(500_000),
            );
        }
        cache.insert("last", failure(0), later, later + Duration::from_secs(500_000));
        assert_eq!(cache.len(), MAX_ENTRIES);
        assert!(cache.get("new", later).is_none(), "the soonest to expire made room");
        assert!(cache.get("last", later).is_some());
    }
}
