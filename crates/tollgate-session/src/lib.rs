//! Sealed legacy session ids: the `Mcp-Session-Id` Tollgate hands to
//! legacy clients (the `credential` phase unseals it, `respond` seals it).
//!
//! A legacy upstream's `Mcp-Session-Id` never reaches the client. Tollgate
//! hands out its own id instead: AES-256-GCM over (expiry, route, principal
//! subject, upstream session id) under a key from configuration. Any replica
//! holding the key can route the session; nothing is stored. The key is
//! prepared once at start: no key derivation happens per request. Expiry
//! is read from a [`Clock`], the system clock unless a test injects one.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const PREFIX: &str = "tg1.";
const AAD: &[u8] = b"tollgate-session-v1";

/// What a sealed session id carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionClaims {
    /// The route (server name) the session belongs to.
    pub route: String,
    /// The principal's subject; empty when the route is unauthenticated.
    pub subject: String,
    /// The upstream's own session id.
    pub upstream_id: String,
}

/// Why a session id was refused. All cases answer 404 to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Not a Tollgate session id, or it fails authentication.
    #[error("session id is not valid")]
    Invalid,
    /// Past its expiry.
    #[error("session id has expired")]
    Expired,
    /// Valid, but for another route or principal.
    #[error("session id belongs to another route or principal")]
    Foreign,
}

/// Where a [`Sealer`] reads the time.
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_secs(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }
}

/// Seals and unseals session ids.
pub struct Sealer {
    keys: Vec<LessSafeKey>,
    rng: SystemRandom,
    ttl: Duration,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("keys", &self.keys.len())
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl Sealer {
    /// A sealer from 32-byte keys, the sealing key first. With no keys, a
    /// random key is generated (sessions then live only in this process).
    ///
    /// # Errors
    ///
    /// When a key is not 32 bytes or the random generator fails.
    pub fn new(keys: &[&[u8]], ttl: Duration) -> Result<Sealer, aws_lc_rs::error::Unspecified> {
        Sealer::with_clock(keys, ttl, Arc::new(SystemClock))
    }

    /// [`Sealer::new`] reading the time from `clock`.
    ///
    /// # Errors
    ///
    /// When a key is not 32 bytes or the random generator fails.
    pub fn with_clock(
        keys: &[&[u8]],
        ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Sealer, aws_lc_rs::error::Unspecified> {
        let rng = SystemRandom::new();
        let mut prepared = Vec::with_capacity(keys.len().max(1));
        for k in keys {
            prepared.push(LessSafeKey::new(UnboundKey::new(&AES_256_GCM, k)?));
        }
        if prepared.is_empty() {
            let mut k = [0u8; 32];
            rng.fill(&mut k)?;
            prepared.push(LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &k)?));
        }
        Ok(Sealer {
            keys: prepared,
            rng,
            ttl,
            clock,
        })
    }

    /// Seal a session for `route` and `subject`.
    ///
    /// # Errors
    ///
    /// When the random generator or the cipher fails.
    pub fn seal(&self, claims: &SessionClaims) -> Result<String, aws_lc_rs::error::Unspecified> {
        let expiry = self.clock.now_secs().saturating_add(self.ttl.as_secs());
        let mut data = Vec::with_capacity(48 + claims.upstream_id.len() + claims.route.len());
        data.extend_from_slice(&expiry.to_be_bytes());
        push_field(&mut data, &claims.route)?;
        push_field(&mut data, &claims.subject)?;
        data.extend_from_slice(claims.upstream_id.as_bytes());
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce)?;
        self.keys[0].seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(AAD), &mut data)?;
        let mut buf = Vec::with_capacity(NONCE_LEN + data.len());
        buf.extend_from_slice(&nonce);
        buf.extend_from_slice(&data);
        Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&buf)))
    }

    /// Unseal a session id presented on `route` by `subject`.
    ///
    /// # Errors
    ///
    /// [`SessionError`] when the id is forged, expired or foreign.
    pub fn unseal(&self, token: &str, route: &str, subject: &str) -> Result<SessionClaims, SessionError> {
        let raw = token
            .strip_prefix(PREFIX)
            .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
            .filter(|r| r.len() > NONCE_LEN)
            .ok_or(SessionError::Invalid)?;
        let (nonce, ciphertext) = raw.split_at(NONCE_LEN);
        let plain = self
            .keys
            .iter()
            .find_map(|key| {
                let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
                let mut data = ciphertext.to_vec();
                let len = key.open_in_place(nonce, Aad::from(AAD), &mut data).ok()?.len();
                data.truncate(len);
                Some(data)
            })
            .ok_or(SessionError::Invalid)?;
        let claims = parse_plain(&plain).ok_or(SessionError::Invalid)?;
        if claims.0 < self.clock.now_secs() {
            return Err(SessionError::Expired);
        }
        let claims = claims.1;
        if claims.route != route || claims.subject != subject {
            return Err(SessionError::Foreign);
        }
        Ok(claims)
    }
}

fn push_field(buf: &mut Vec<u8>, s: &str) -> Result<(), aws_lc_rs::error::Unspecified> {
    let len = u16::try_from(s.len()).map_err(|_| aws_lc_rs::error::Unspecified)?;
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(s.as_bytes());
    Ok(())
}

fn take_field(rest: &mut &[u8]) -> Option<String> {
    let (len, tail) = rest.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    let (field, tail) = (tail.get(..len)?, tail.get(len..)?);
    *rest = tail;
    String::from_utf8(field.to_vec()).ok()
}

fn parse_plain(plain: &[u8]) -> Option<(u64, SessionClaims)> {
    let (expiry, mut rest) = plain.split_first_chunk::<8>()?;
    let route = take_field(&mut rest)?;
    let subject = take_field(&mut rest)?;
    let upstream_id = String::from_utf8(rest.to_vec()).ok()?;
    Some((
        u64::from_be_bytes(*expiry),
        SessionClaims {
            route,
            subject,
            upstream_id,
        },
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    fn claims(route: &str) -> SessionClaims {
        SessionClaims {
            route: route.into(),
            subject: "alice".into(),
            upstream_id: "up-123".into(),
        }
    }

    #[test]
    fn round_trips_and_binds_route_and_subject() {
        let s = Sealer::new(&[&[7u8; 32]], Duration::from_secs(60)).unwrap();
        let id = s.seal(&claims("a")).unwrap();
        assert!(id.bytes().all(|b| (0x21..0x7f).contains(&b)));
        assert_eq!(s.unseal(&id, "a", "alice").unwrap(), claims("a"));
        assert_eq!(s.unseal(&id, "b", "alice"), Err(SessionError::Foreign));
        assert_eq!(s.unseal(&id, "a", "mallory"), Err(SessionError::Foreign));
    }

    #[test]
    fn refuses_forged_and_tampered_ids() {
        let s = Sealer::new(&[&[7u8; 32]], Duration::from_secs(60)).unwrap();
        let id = s.seal(&claims("a")).unwrap();
        let mut tampered = id.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(s.unseal(&tampered, "a", "alice"), Err(SessionError::Invalid));
        assert_eq!(s.unseal("up-123", "a", "alice"), Err(SessionError::Invalid));
        assert_eq!(s.unseal("tg1.", "a", "alice"), Err(SessionError::Invalid));
        let other = Sealer::new(&[&[8u8; 32]], Duration::from_secs(60)).unwrap();
        assert_eq!(other.unseal(&id, "a", "alice"), Err(SessionError::Invalid));
    }

    /// A clock the test moves by hand.
    struct Manual(AtomicU64);

    impl Clock for Manual {
        fn now_secs(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn ids_expire_after_their_ttl_on_the_injected_clock() {
        let clock = Arc::new(Manual(AtomicU64::new(1_000)));
        let s = Sealer::with_clock(&[&[7u8; 32]], Duration::from_secs(60), clock.clone()).unwrap();
        let id = s.seal(&claims("a")).unwrap();
        clock.0.store(1_060, Ordering::Relaxed);
        assert!(s.unseal(&id, "a", "alice").is_ok(), "valid through its last second");
        clock.0.store(1_061, Ordering::Relaxed);
        assert_eq!(s.unseal(&id, "a", "alice"), Err(SessionError::Expired));
    }

    #[test]
    fn previous_keys_still_unseal() {
        let old = Sealer::new(&[&[1u8; 32]], Duration::from_secs(60)).unwrap();
        let id = old.seal(&claims("a")).unwrap();
        let rotated = Sealer::new(&[&[2u8; 32], &[1u8; 32]], Duration::from_secs(60)).unwrap();
        assert!(rotated.unseal(&id, "a", "alice").is_ok());
    }
}
