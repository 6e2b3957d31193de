//! Sealed session ids: what a legacy client presents as `Mcp-Session-Id`.

use std::time::Duration;

use tollgate_session::{Sealer, SessionClaims, SessionError};

const KEY: [u8; 32] = [7; 32];

/// Arbitrary text presented as a session id is refused as invalid (it
/// cannot be forged), never accepted and never a panic. The same bytes
/// read as claims (route, subject and upstream id separated by `\n`) seal
/// and unseal back to themselves, and a sealed id presented by another
/// subject is foreign.
pub(crate) fn session_id(data: &[u8]) {
    let Ok(sealer) = Sealer::new(&[&KEY], Duration::from_secs(3600)) else {
        panic!("a 32-byte key is refused");
    };
    let text = String::from_utf8_lossy(data);
    assert_eq!(
        sealer.unseal(&text, "route", "alice").err(),
        Some(SessionError::Invalid),
        "an arbitrary id was not refused as invalid"
    );
    let mut parts = text.splitn(3, '\n');
    let claims = SessionClaims {
        route: parts.next().unwrap_or_default().to_owned(),
        subject: parts.next().unwrap_or_default().to_owned(),
        upstream_id: parts.next().unwrap_or_default().to_owned(),
    };
    let Ok(sealed) = sealer.seal(&claims) else {
        // Fields longer than the format's 16-bit lengths are refused.
        assert!(claims.route.len() > usize::from(u16::MAX) || claims.subject.len() > usize::from(u16::MAX));
        return;
    };
    assert_eq!(
        sealer.unseal(&sealed, &claims.route, &claims.subject),
        Ok(claims.clone())
    );
    let other = format!("{}x", claims.subject);
    assert_eq!(
        sealer.unseal(&sealed, &claims.route, &other),
        Err(SessionError::Foreign)
    );
}
