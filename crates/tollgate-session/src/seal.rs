//! The [`Sealer`]: AES-256-GCM handles bound to an [`Owner`].
//!
//! A handle is `PREFIX` + base64url(nonce ‖ ciphertext ‖ tag); the
//! plaintext is the expiry (8 bytes, big-endian), then the owner's route,
//! issuer and subject and the handle's own fields, each with a 2-byte
//! length, then its last field unprefixed. The associated data names the
//! kind of handle and its format version.
//!
//! A session id gets a random nonce and an expiry. A task id must read the
//! same in every answer that names the task (clients compare them), so it
//! has no expiry — the task ends upstream, and its handle with it — and
//! its nonce is derived from its plaintext (HMAC-SHA-256 under a key of
//! its own, as in SIV): equal handles for equal tasks, and never one nonce
//! for two plaintexts.

use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::error::Unspecified;
use aws_lc_rs::hmac;
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::{Clock, Owner, SessionClaims, SessionError, SystemClock, TaskClaims};

/// One kind of handle: its text prefix and associated data.
struct Kind {
    prefix: &'static str,
    aad: &'static [u8],
}

const SESSION: Kind = Kind {
    prefix: "tg1.",
    aad: b"tollgate-session-v2",
};

/// A session id whose client declared URL-mode elicitation: the kind
/// itself is the flag, so ids of the other kind open as before.
const SESSION_ELICITS: Kind = Kind {
    prefix: "tg1e.",
    aad: b"tollgate-session-v2-elicits-url",
};

const TASK: Kind = Kind {
    prefix: "tgt1.",
    aad: b"tollgate-task-v1",
};

/// Seals and opens session ids and task ids.
pub struct Sealer {
    keys: Vec<LessSafeKey>,
    /// Derives a task id's nonce from its plaintext.
    nonces: hmac::Key,
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
    /// A sealer from 32-byte keys, the sealing key first; session ids live
    /// `ttl`. With no keys, a random key is generated (handles then live
    /// only in this process).
    ///
    /// # Errors
    ///
    /// When a key is not 32 bytes or the random generator fails.
    pub fn new(keys: &[&[u8]], ttl: Duration) -> Result<Sealer, Unspecified> {
        Sealer::with_clock(keys, ttl, Arc::new(SystemClock))
    }

    /// [`Sealer::new`] reading the time from `clock`.
    ///
    /// # Errors
    ///
    /// When a key is not 32 bytes or the random generator fails.
    pub fn with_clock(keys: &[&[u8]], ttl: Duration, clock: Arc<dyn Clock>) -> Result<Sealer, Unspecified> {
        let rng = SystemRandom::new();
        let mut generated = [0u8; 32];
        let first: &[u8] = match keys.first() {
            Some(k) => k,
            None => {
                rng.fill(&mut generated)?;
                &generated
            }
        };
        let mut prepared = Vec::with_capacity(keys.len().max(1));
        for k in std::iter::once(first).chain(keys.iter().skip(1).copied()) {
            prepared.push(LessSafeKey::new(UnboundKey::new(&AES_256_GCM, k)?));
        }
        // The nonce key is derived from the sealing key, never equal to it.
        let derived = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, first), b"tollgate task nonce v1");
        Ok(Sealer {
            keys: prepared,
            nonces: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
            rng,
            ttl,
            clock,
        })
    }

    /// Seal a session id.
    ///
    /// # Errors
    ///
    /// When the random generator or the cipher fails, or a field is longer
    /// than 65,535 bytes.
    pub fn seal(&self, claims: &SessionClaims) -> Result<String, Unspecified> {
        let expiry = self.clock.now_secs().saturating_add(self.ttl.as_secs());
        let plain = plaintext(expiry, claims.owner(), &[], &claims.upstream_id)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce)?;
        let kind = if claims.elicits_url { &SESSION_ELICITS } else { &SESSION };
        self.seal_plain(kind, nonce, plain)
    }

    /// Open a session id presented on `owner.route` by `owner`'s principal.
    ///
    /// # Errors
    ///
    /// [`SessionError`] when the id is forged, expired or foreign.
    pub fn unseal(&self, token: &str, owner: Owner<'_>) -> Result<SessionClaims, SessionError> {
        let elicits_url = token.starts_with(SESSION_ELICITS.prefix);
        let kind = if elicits_url { &SESSION_ELICITS } else { &SESSION };
        let (_, upstream_id) = self.open_kind(kind, token, owner, 0)?;
        Ok(SessionClaims {
            route: owner.route.to_owned(),
            issuer: owner.issuer.to_owned(),
            subject: owner.subject.to_owned(),
            upstream_id,
            elicits_url,
        })
    }

    /// Seal task `task` for `owner`: the id the client sees.
    ///
    /// # Errors
    ///
    /// When the random generator or the cipher fails, or a field is longer
    /// than 65,535 bytes.
    pub fn seal_task(&self, owner: Owner<'_>, task: &TaskClaims) -> Result<String, Unspecified> {
        let plain = plaintext(u64::MAX, owner, &[&task.server], &task.task_id)?;
        let tag = hmac::sign(&self.nonces, &plain);
        let nonce = tag.as_ref().first_chunk::<NONCE_LEN>().copied().ok_or(Unspecified)?;
        self.seal_plain(&TASK, nonce, plain)
    }

    /// Open a task id presented on `owner.route` by `owner`'s principal.
    ///
    /// # Errors
    ///
    /// [`SessionError`] when the id is not one Tollgate sealed, expired, or
    /// sealed for another route or principal.
    pub fn unseal_task(&self, token: &str, owner: Owner<'_>) -> Result<TaskClaims, SessionError> {
        let (mut fields, task_id) = self.open_kind(&TASK, token, owner, 1)?;
        let server = fields.pop().ok_or(SessionError::Invalid)?;
        Ok(TaskClaims { server, task_id })
    }

    fn seal_plain(&self, kind: &Kind, nonce: [u8; NONCE_LEN], mut data: Vec<u8>) -> Result<String, Unspecified> {
        self.keys[0].seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(kind.aad), &mut data)?;
        let mut buf = Vec::with_capacity(NONCE_LEN + data.len());
        buf.extend_from_slice(&nonce);
        buf.extend_from_slice(&data);
        Ok(format!("{}{}", kind.prefix, URL_SAFE_NO_PAD.encode(&buf)))
    }

    /// The `extra` fields after the owner's, and the last field, of a
    /// handle of `kind` that `owner` may use.
    fn open_kind(
        &self,
        kind: &Kind,
        token: &str,
        owner: Owner<'_>,
        extra: usize,
    ) -> Result<(Vec<String>, String), SessionError> {
        let raw = token
            .strip_prefix(kind.prefix)
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
                let len = key.open_in_place(nonce, Aad::from(kind.aad), &mut data).ok()?.len();
                data.truncate(len);
                Some(data)
            })
            .ok_or(SessionError::Invalid)?;
        let (expiry, mut fields, last) = parse_plain(&plain, 3 + extra).ok_or(SessionError::Invalid)?;
        if expiry < self.clock.now_secs() {
            return Err(SessionError::Expired);
        }
        let rest = fields.split_off(3);
        if fields != [owner.route, owner.issuer, owner.subject] {
            return Err(SessionError::Foreign);
        }
        Ok((rest, last))
    }
}

/// The plaintext of a handle: expiry, the owner, `fields`, then `last`.
fn plaintext(expiry: u64, owner: Owner<'_>, fields: &[&str], last: &str) -> Result<Vec<u8>, Unspecified> {
    let mut data = Vec::with_capacity(64 + owner.route.len() + owner.issuer.len() + owner.subject.len() + last.len());
    data.extend_from_slice(&expiry.to_be_bytes());
    for field in [owner.route, owner.issuer, owner.subject].iter().chain(fields) {
        push_field(&mut data, field)?;
    }
    data.extend_from_slice(last.as_bytes());
    Ok(data)
}

fn push_field(buf: &mut Vec<u8>, s: &str) -> Result<(), Unspecified> {
    let len = u16::try_from(s.len()).map_err(|_| Unspecified)?;
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

/// The expiry, `n` length-prefixed fields and the last field of a handle.
fn parse_plain(plain: &[u8], n: usize) -> Option<(u64, Vec<String>, String)> {
    let (expiry, mut rest) = plain.split_first_chunk::<8>()?;
    let fields = (0..n).map(|_| take_field(&mut rest)).collect::<Option<Vec<_>>>()?;
    let last = String::from_utf8(rest.to_vec()).ok()?;
    Some((u64::from_be_bytes(*expiry), fields, last))
}
