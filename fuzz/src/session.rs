//! Sealed handles: what a legacy client presents as `Mcp-Session-Id`, and
//! what any client presents as a task id.

use std::time::Duration;

use tollgate_session::{Owner, Sealer, SessionClaims, SessionError, TaskClaims};

const KEY: [u8; 32] = [7; 32];

/// Arbitrary text presented as a session id or a task id is refused as
/// invalid (it cannot be forged), never accepted and never a panic. The
/// same bytes read as claims (route, issuer, subject and upstream id
/// separated by `\n`) seal and unseal back to themselves, and a sealed
/// handle presented by another subject or issuer is foreign.
pub(crate) fn session_id(data: &[u8]) {
    let Ok(sealer) = Sealer::new(&[&KEY], Duration::from_secs(3600)) else {
        panic!("a 32-byte key is refused");
    };
    let text = String::from_utf8_lossy(data);
    let alice = Owner {
        route: "route",
        issuer: "https://idp",
        subject: "alice",
    };
    assert_eq!(
        sealer.unseal(&text, alice).err(),
        Some(SessionError::Invalid),
        "an arbitrary id was not refused as invalid"
    );
    assert_eq!(
        sealer.unseal_task(&text, alice).err(),
        Some(SessionError::Invalid),
        "an arbitrary task id was not refused as invalid"
    );
    let mut parts = text.splitn(4, '\n');
    let mut next = || parts.next().unwrap_or_default().to_owned();
    let claims = SessionClaims {
        route: next(),
        issuer: next(),
        subject: next(),
        upstream_id: next(),
        // Both kinds of session id.
        elicits_url: text.len().is_multiple_of(2),
    };
    let Ok(sealed) = sealer.seal(&claims) else {
        // Fields longer than the format's 16-bit lengths are refused.
        let long = [&claims.route, &claims.issuer, &claims.subject];
        assert!(long.iter().any(|f| f.len() > usize::from(u16::MAX)));
        return;
    };
    assert_eq!(sealer.unseal(&sealed, claims.owner()), Ok(claims.clone()));
    let other = format!("{}x", claims.subject);
    let foreign = Owner {
        subject: &other,
        ..claims.owner()
    };
    assert_eq!(sealer.unseal(&sealed, foreign), Err(SessionError::Foreign));
    let elsewhere = format!("{}x", claims.issuer);
    let foreign = Owner {
        issuer: &elsewhere,
        ..claims.owner()
    };
    assert_eq!(sealer.unseal(&sealed, foreign), Err(SessionError::Foreign));
    let task = TaskClaims {
        server: claims.route.clone(),
        task_id: claims.upstream_id.clone(),
    };
    if let Ok(handle) = sealer.seal_task(claims.owner(), &task) {
        assert_eq!(sealer.unseal_task(&handle, claims.owner()), Ok(task));
        assert_eq!(
            sealer.unseal(&handle, claims.owner()).err(),
            Some(SessionError::Invalid)
        );
    }
}
