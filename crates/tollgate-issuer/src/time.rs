//! Clock and randomness for the authorization server: seconds since the
//! epoch, and random URL-safe tokens (codes, refresh tokens, states).

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::digest;
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `bytes` random bytes as URL-safe base64, or `None` without randomness
/// (states, verifiers, codes, ids; the vault's too).
pub fn random(bytes: usize) -> Option<String> {
    let mut buf = vec![0u8; bytes];
    SystemRandom::new().fill(&mut buf).ok()?;
    Some(URL_SAFE_NO_PAD.encode(buf))
}

/// URL-safe base64 of SHA-256(`text`): how codes, refresh tokens and
/// client secrets are stored (never as issued), and the PKCE S256 method.
pub fn sha256(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, text.as_bytes()))
}

/// Constant-time equality of two strings.
pub(crate) fn same(a: &str, b: &str) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a.as_bytes(), b.as_bytes()).is_ok()
}
