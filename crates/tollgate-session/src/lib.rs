//! Sealed handles: the legacy `Mcp-Session-Id` and the task ids (tasks
//! extension, SEP-2663) Tollgate hands to clients instead of the
//! upstream's own (the `credential` phase unseals a session id, `respond`
//! seals it; virtual servers and routes seal task ids in answers and
//! unseal them in `tasks/*` requests).
//!
//! An upstream's session or task id never reaches the client. Tollgate
//! hands out its own handle instead: AES-256-GCM over (expiry, route,
//! principal issuer, principal subject, the upstream's values) under a key
//! from configuration. A handle presented on another route or by another
//! principal — another subject, or the same subject at another issuer — is
//! refused, so one caller cannot poll, cancel or continue another's work
//! even though the upstream sees every caller as the gateway. Sessions and
//! tasks are sealed under different associated data, so a session id is
//! never accepted as a task id. Any replica holding the key can open a
//! handle; nothing is stored. The key is prepared once at start: no key
//! derivation happens per request. Expiry is read from a [`Clock`], the
//! system clock unless a test injects one.

mod seal;

use std::time::{SystemTime, UNIX_EPOCH};

pub use self::seal::Sealer;

/// Whom a handle belongs to: the route it was issued on and the verified
/// principal it was issued to (empty issuer and subject on an open route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    /// The route (server or virtual server name).
    pub route: &'a str,
    /// The principal's token issuer.
    pub issuer: &'a str,
    /// The principal's subject.
    pub subject: &'a str,
}

/// What a sealed session id carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionClaims {
    /// The route (server name) the session belongs to.
    pub route: String,
    /// The principal's issuer; empty when the route is unauthenticated.
    pub issuer: String,
    /// The principal's subject; empty when the route is unauthenticated.
    pub subject: String,
    /// The upstream's own session id.
    pub upstream_id: String,
    /// The client declared URL-mode elicitation at `initialize`: the
    /// gateway may send it `elicitation/create` requests of its own.
    pub elicits_url: bool,
}

impl SessionClaims {
    /// The owner these claims bind the session to.
    pub fn owner(&self) -> Owner<'_> {
        Owner {
            route: &self.route,
            issuer: &self.issuer,
            subject: &self.subject,
        }
    }
}

/// What a sealed task id carries: which server holds the task, under
/// which of its own ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskClaims {
    /// The server (route name) that runs the task.
    pub server: String,
    /// That server's own task id.
    pub task_id: String,
}

/// Why a handle was refused. Every case is answered as an unknown session
/// or task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Not a Tollgate handle, or it fails authentication.
    #[error("handle is not valid")]
    Invalid,
    /// Past its expiry.
    #[error("handle has expired")]
    Expired,
    /// Valid, but for another route or principal.
    #[error("handle belongs to another route or principal")]
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    const ISS: &str = "https://idp.example";

    fn claims(route: &str) -> SessionClaims {
        SessionClaims {
            elicits_url: false,
            route: route.into(),
            issuer: ISS.into(),
            subject: "alice".into(),
            upstream_id: "up-123".into(),
        }
    }

    fn owner<'a>(route: &'a str, issuer: &'a str, subject: &'a str) -> Owner<'a> {
        Owner { route, issuer, subject }
    }

    fn sealer(key: u8) -> Sealer {
        Sealer::new(&[&[key; 32]], Duration::from_secs(60)).unwrap()
    }

    #[test]
    fn round_trips_and_binds_route_issuer_and_subject() {
        let s = sealer(7);
        let id = s.seal(&claims("a")).unwrap();
        assert!(id.bytes().all(|b| (0x21..0x7f).contains(&b)));
        assert_eq!(s.unseal(&id, owner("a", ISS, "alice")).unwrap(), claims("a"));
        assert_eq!(s.unseal(&id, owner("b", ISS, "alice")), Err(SessionError::Foreign));
        assert_eq!(s.unseal(&id, owner("a", ISS, "mallory")), Err(SessionError::Foreign));
        // The same subject at another issuer is another principal.
        let other = owner("a", "https://other.example", "alice");
        assert_eq!(s.unseal(&id, other), Err(SessionError::Foreign));
    }

    #[test]
    fn the_url_elicitation_flag_is_the_kind_of_id_and_cannot_be_forged() {
        let s = sealer(7);
        let flagged = SessionClaims {
            elicits_url: true,
            ..claims("a")
        };
        let id = s.seal(&flagged).unwrap();
        assert!(id.starts_with("tg1e."));
        assert_eq!(s.unseal(&id, owner("a", ISS, "alice")).unwrap(), flagged);
        // Renaming an id's kind does not move its flag: the AAD differs.
        let plain = s.seal(&claims("a")).unwrap();
        let renamed = plain.replacen("tg1.", "tg1e.", 1);
        assert_eq!(s.unseal(&renamed, owner("a", ISS, "alice")), Err(SessionError::Invalid));
    }

    #[test]
    fn task_ids_are_bound_and_are_not_session_ids() {
        let s = sealer(7);
        let task = TaskClaims {
            server: "demo".into(),
            task_id: "t:1".into(),
        };
        let me = owner("v", ISS, "alice");
        let id = s.seal_task(me, &task).unwrap();
        assert!(id.starts_with("tgt1."));
        assert_eq!(s.seal_task(me, &task).unwrap(), id, "one task, one handle");
        assert_eq!(s.unseal_task(&id, me).unwrap(), task);
        assert_eq!(s.unseal_task(&id, owner("v", ISS, "bob")), Err(SessionError::Foreign));
        assert_eq!(s.unseal_task(&id, owner("w", ISS, "alice")), Err(SessionError::Foreign));
        assert_eq!(s.unseal(&id, me), Err(SessionError::Invalid));
        let session = s.seal(&claims("v")).unwrap();
        assert_eq!(s.unseal_task(&session, me), Err(SessionError::Invalid));
        // A task id under the session prefix fails authentication too.
        let disguised = id.replacen("tgt1.", "tg1.", 1);
        assert_eq!(s.unseal(&disguised, me), Err(SessionError::Invalid));
    }

    #[test]
    fn refuses_forged_and_tampered_ids() {
        let s = sealer(7);
        let me = owner("a", ISS, "alice");
        let id = s.seal(&claims("a")).unwrap();
        let mut tampered = id.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(s.unseal(&tampered, me), Err(SessionError::Invalid));
        assert_eq!(s.unseal("up-123", me), Err(SessionError::Invalid));
        assert_eq!(s.unseal("tg1.", me), Err(SessionError::Invalid));
        assert_eq!(sealer(8).unseal(&id, me), Err(SessionError::Invalid));
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
        let me = owner("a", ISS, "alice");
        let id = s.seal(&claims("a")).unwrap();
        clock.0.store(1_060, Ordering::Relaxed);
        assert!(s.unseal(&id, me).is_ok(), "valid through its last second");
        clock.0.store(1_061, Ordering::Relaxed);
        assert_eq!(s.unseal(&id, me), Err(SessionError::Expired));
    }

    #[test]
    fn previous_keys_still_unseal() {
        let id = sealer(1).seal(&claims("a")).unwrap();
        let rotated = Sealer::new(&[&[2u8; 32], &[1u8; 32]], Duration::from_secs(60)).unwrap();
        assert!(rotated.unseal(&id, owner("a", ISS, "alice")).is_ok());
    }
}
