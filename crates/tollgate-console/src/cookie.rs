//! Sealed cookies: the console's sign-in session and the state of a
//! sign-in in progress, encrypted and authenticated (AES-256-GCM) under a
//! key derived from the gateway's session key, so that any replica with
//! the same key reads them and nothing is stored server-side.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hkdf::{HKDF_SHA256, Salt};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The signed-in session's cookie.
pub(crate) const SESSION: &str = "tollgate_console";
/// A sign-in in progress (state and PKCE verifier).
pub(crate) const LOGIN: &str = "tollgate_console_login";

/// Seals and opens cookie values.
pub(crate) struct Jar {
    key: LessSafeKey,
    /// Add `Secure`: the console is served over TLS.
    secure: bool,
}

impl std::fmt::Debug for Jar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jar")
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

/// Random bytes as URL-safe base64: states, verifiers, CSRF tokens.
pub(crate) fn random_token(bytes: usize) -> Option<String> {
    let mut buf = vec![0u8; bytes];
    SystemRandom::new().fill(&mut buf).ok()?;
    Some(URL_SAFE_NO_PAD.encode(buf))
}

/// Seconds since the Unix epoch, now (cookie expiries).
pub(crate) fn unix_now() -> u64 {
    unix_secs(SystemTime::now())
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Jar {
    /// A jar keyed from `secret` (the gateway's session key), or from a
    /// random key when there is none (sign-ins then end at restart).
    pub(crate) fn new(secret: Option<&[u8]>, secure: bool) -> Option<Jar> {
        let random;
        let ikm = match secret {
            Some(s) => s,
            None => {
                let mut buf = [0u8; 32];
                SystemRandom::new().fill(&mut buf).ok()?;
                random = buf;
                &random
            }
        };
        let mut okm = [0u8; 32];
        Salt::new(HKDF_SHA256, b"tollgate-console-cookie-v1")
            .extract(ikm)
            .expand(&[b"aes-256-gcm"], &AES_256_GCM)
            .ok()?
            .fill(&mut okm)
            .ok()?;
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &okm).ok()?);
        Some(Jar { key, secure })
    }

    /// `value` sealed, with the cookie's name as associated data.
    pub(crate) fn seal<T: Serialize>(&self, name: &str, value: &T) -> Option<String> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).ok()?;
        let mut buf = serde_json::to_vec(value).ok()?;
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(name), &mut buf)
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Some(URL_SAFE_NO_PAD.encode(out))
    }

    /// The value of cookie `name` in `headers`, if it opens.
    pub(crate) fn open<T: DeserializeOwned>(&self, headers: &HeaderMap, name: &str) -> Option<T> {
        let raw = cookie(headers, name)?;
        let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
        let (nonce, sealed) = bytes.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self.key.open_in_place(nonce, Aad::from(name), &mut sealed).ok()?;
        serde_json::from_slice(plain).ok()
    }

    /// A `Set-Cookie` value: `HttpOnly`, path `/console`, `Secure` over
    /// TLS; `SameSite=Strict` for the session, `Lax` for the sign-in state
    /// (it must come back on the identity provider's redirect).
    pub(crate) fn set(&self, name: &str, value: &str, max_age: u64, strict: bool) -> String {
        let same_site = if strict { "Strict" } else { "Lax" };
        let secure = if self.secure { "; Secure" } else { "" };
        format!("{name}={value}; Path=/console; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}")
    }

    /// A `Set-Cookie` value that removes cookie `name`.
    pub(crate) fn clear(&self, name: &str) -> String {
        self.set(name, "", 0, true)
    }
}

/// The raw value of cookie `name`.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then_some(v)
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn sealed_values_open_only_under_their_name_and_key() {
        let jar = Jar::new(Some(b"0123456789abcdef0123456789abcdef"), true).unwrap();
        let sealed = jar.seal(SESSION, &("alice", 7)).unwrap();
        let mut headers = HeaderMap::new();
        let cookie = format!("other=1; {SESSION}={sealed}; {LOGIN}={sealed}");
        headers.insert(http::header::COOKIE, cookie.parse().unwrap());
        assert_eq!(jar.open::<(String, u32)>(&headers, SESSION), Some(("alice".into(), 7)));
        assert_eq!(
            jar.open::<(String, u32)>(&headers, LOGIN),
            None,
            "bound to the cookie's name"
        );
        let other = Jar::new(Some(b"another key"), true).unwrap();
        assert_eq!(other.open::<(String, u32)>(&headers, SESSION), None);
        assert!(
            jar.set(SESSION, &sealed, 60, true)
                .ends_with("HttpOnly; SameSite=Strict; Secure")
        );
    }
}
