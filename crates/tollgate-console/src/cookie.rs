//! Sealed cookies: the console's sign-in session and the state of a
//! sign-in in progress, kept in the `cookie` crate's private jar —
//! encrypted and authenticated (AES-256-GCM, the cookie's name bound in)
//! under a key derived from the gateway's session key, so that any replica
//! with the same key reads them and nothing is stored server-side.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::hkdf::{HKDF_SHA256, KeyType, Salt};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cookie::time::Duration;
use cookie::{Cookie, CookieJar, Key, SameSite};
use http::HeaderMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The signed-in session's cookie.
pub(crate) const SESSION: &str = "tollgate_console";
/// A sign-in in progress (state, nonce and PKCE verifier).
pub(crate) const LOGIN: &str = "tollgate_console_login";

/// Seals and opens cookie values.
pub(crate) struct Jar {
    key: Key,
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

/// Random bytes as URL-safe base64: CSRF tokens, request ids.
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

/// The length of the `cookie` crate's master key.
struct MasterKey;

impl KeyType for MasterKey {
    fn len(&self) -> usize {
        64
    }
}

impl Jar {
    /// A jar keyed from `secret` (the gateway's session key, through
    /// HKDF-SHA256 under the console's own label), or from a random key
    /// when there is none (sign-ins then end at restart).
    pub(crate) fn new(secret: Option<&[u8]>, secure: bool) -> Option<Jar> {
        let key = match secret {
            Some(ikm) => {
                let mut master = [0u8; 64];
                Salt::new(HKDF_SHA256, b"tollgate-console-cookie-v2")
                    .extract(ikm)
                    .expand(&[b"cookie private jar"], MasterKey)
                    .ok()?
                    .fill(&mut master)
                    .ok()?;
                Key::try_from(&master[..]).ok()?
            }
            None => Key::try_generate()?,
        };
        Some(Jar { key, secure })
    }

    /// A `Set-Cookie` value carrying `value` sealed: `HttpOnly`, path
    /// `/console`, `Secure` over TLS; `SameSite=Strict` for the session,
    /// `Lax` for the sign-in state (it must come back on the identity
    /// provider's redirect).
    pub(crate) fn set<T: Serialize>(
        &self,
        name: &'static str,
        value: &T,
        max_age: u64,
        strict: bool,
    ) -> Option<String> {
        let plain = serde_json::to_string(value).ok()?;
        let mut jar = CookieJar::new();
        jar.private_mut(&self.key).add(self.build(name, plain, max_age, strict));
        jar.get(name).map(ToString::to_string)
    }

    /// The value of cookie `name` in `headers`, if it opens.
    pub(crate) fn open<T: DeserializeOwned>(&self, headers: &HeaderMap, name: &str) -> Option<T> {
        let mut jar = CookieJar::new();
        headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(Cookie::split_parse)
            .flatten()
            .filter(|c| c.name() == name)
            .for_each(|c| jar.add_original(c.into_owned()));
        let opened = jar.private(&self.key).get(name)?;
        serde_json::from_str(opened.value()).ok()
    }

    /// A `Set-Cookie` value that removes cookie `name`.
    pub(crate) fn clear(&self, name: &'static str) -> String {
        self.build(name, String::new(), 0, true).to_string()
    }

    fn build(&self, name: &'static str, value: String, max_age: u64, strict: bool) -> Cookie<'static> {
        let max_age = i64::try_from(max_age).unwrap_or(i64::MAX);
        Cookie::build((name, value))
            .path("/console")
            .max_age(Duration::seconds(max_age))
            .http_only(true)
            .same_site(if strict { SameSite::Strict } else { SameSite::Lax })
            .secure(self.secure)
            .build()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn sent(set_cookie: &str, extra: &str) -> HeaderMap {
        let pair = set_cookie.split(';').next().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(http::header::COOKIE, format!("other=1; {pair}{extra}").parse().unwrap());
        headers
    }

    #[test]
    fn sealed_values_open_only_under_their_name_and_key() {
        let jar = Jar::new(Some(b"0123456789abcdef0123456789abcdef"), true).unwrap();
        let set = jar.set(SESSION, &("alice", 7), 60, true).unwrap();
        for attribute in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/console", "Max-Age=60"] {
            assert!(set.contains(attribute), "{set}");
        }
        let headers = sent(&set, "");
        assert_eq!(jar.open::<(String, u32)>(&headers, SESSION), Some(("alice".into(), 7)));
        let sealed = set.split(';').next().unwrap().split_once('=').unwrap().1;
        let renamed = sent(&format!("{LOGIN}={sealed}"), "");
        assert_eq!(
            jar.open::<(String, u32)>(&renamed, LOGIN),
            None,
            "bound to the cookie's name"
        );
        let other = Jar::new(Some(b"another key, just as long as that"), true).unwrap();
        assert_eq!(other.open::<(String, u32)>(&headers, SESSION), None);
        let mut tampered = sealed.to_owned().into_bytes();
        tampered[20] = if tampered[20] == b'A' { b'B' } else { b'A' };
        let tampered = sent(&format!("{SESSION}={}", String::from_utf8(tampered).unwrap()), "");
        assert_eq!(jar.open::<(String, u32)>(&tampered, SESSION), None);
    }

    #[test]
    fn plain_http_has_no_secure_and_clearing_expires_at_once() {
        let jar = Jar::new(None, false).unwrap();
        let set = jar.set(LOGIN, &"state", 600, false).unwrap();
        assert!(set.contains("SameSite=Lax") && set.contains("Max-Age=600"), "{set}");
        assert!(!set.contains("Secure"), "{set}");
        let clear = jar.clear(SESSION);
        assert!(
            clear.starts_with(&format!("{SESSION}=;")) && clear.contains("Max-Age=0"),
            "{clear}"
        );
    }
}
