//! Who is asking: a signed-in browser (the sealed session cookie) or a
//! script (a bearer token for the console's URL), with their roles, and the
//! CSRF check every cookie-authenticated state change passes.
//!
//! A console token is the console issuer's (`[console] issuer`), and its
//! `aud` names the console (its URL or `[console] audiences`): a token of
//! another trusted issuer, or an MCP access token accepted for every route
//! through an issuer's `audiences`, is not a console token. The same check
//! applies to bearer calls and to the token the sign-in redeems.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use http::HeaderMap;
use http::request::Parts;
use serde::{Deserialize, Serialize};
use tollgate_core::{Principal, PrincipalKind};

use crate::cookie::{self, unix_now};
use crate::error::ConsoleError;
use crate::roles::{Role, allows, roles_of};
use crate::state::Shared;

/// The header carrying the CSRF token on state changes.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// What the session cookie holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Session {
    pub(crate) sub: String,
    pub(crate) iss: String,
    pub(crate) team: Option<String>,
    pub(crate) cost_center: Option<String>,
    pub(crate) roles: Vec<Role>,
    pub(crate) csrf: String,
    pub(crate) exp: u64,
}

/// An authenticated console user.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) subject: String,
    pub(crate) issuer: String,
    pub(crate) team: Option<String>,
    pub(crate) cost_center: Option<String>,
    pub(crate) roles: Vec<Role>,
    /// The session's CSRF token; `None` for a bearer token (not sent by
    /// browsers on their own, so not forgeable cross-site).
    pub(crate) csrf: Option<String>,
}

impl Caller {
    /// The signed-in session of `headers`, if valid, not expired, and
    /// signed in through the console's issuer (one from before the issuer
    /// changed is not).
    pub(crate) fn from_cookie(shared: &Shared, headers: &HeaderMap) -> Option<Caller> {
        let s: Session = shared.jar.open(headers, cookie::SESSION)?;
        (s.exp > unix_now() && s.iss == shared.settings.issuer).then_some(Caller {
            subject: s.sub,
            issuer: s.iss,
            team: s.team,
            cost_center: s.cost_center,
            roles: s.roles,
            csrf: Some(s.csrf),
        })
    }

    /// A caller from a verified console principal ([`verify_token`]), if
    /// it holds any role.
    pub(crate) fn from_principal(shared: &Shared, p: &Principal, csrf: Option<String>) -> Option<Caller> {
        let roles = roles_of(&p.groups, &shared.settings.roles);
        (!roles.is_empty()).then(|| Caller {
            subject: p.subject.clone(),
            issuer: p.issuer.clone(),
            team: p.team.clone(),
            cost_center: p.cost_center.clone(),
            roles,
            csrf,
        })
    }

    /// Refuse unless the caller holds `role`.
    pub(crate) fn need(&self, role: Role) -> Result<(), ConsoleError> {
        if allows(&self.roles, role) {
            Ok(())
        } else {
            Err(ConsoleError::Forbidden(role.as_str()))
        }
    }

    /// Whether the caller holds `role`.
    pub(crate) fn can(&self, role: Role) -> bool {
        allows(&self.roles, role)
    }

    /// Refuse a cookie-authenticated state change without the session's
    /// CSRF token in `X-CSRF-Token`.
    pub(crate) fn check_csrf(&self, headers: &HeaderMap) -> Result<(), ConsoleError> {
        let Some(expected) = &self.csrf else {
            return Ok(());
        };
        let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        match sent {
            Some(sent)
                if aws_lc_rs::constant_time::verify_slices_are_equal(sent.as_bytes(), expected.as_bytes()).is_ok() =>
            {
                Ok(())
            }
            _ => Err(ConsoleError::Csrf),
        }
    }

    /// The caller as an audit record's principal.
    pub(crate) fn principal(&self) -> Principal {
        Principal {
            team: self.team.clone(),
            cost_center: self.cost_center.clone(),
            ..Principal::bare(&*self.issuer, &*self.subject, PrincipalKind::User)
        }
    }
}

/// Verify a console token: the console issuer's, naming one of the
/// console's audiences.
///
/// # Errors
///
/// Why the token is not a console token.
pub(crate) async fn verify_token(shared: &Shared, token: &str) -> Result<Arc<Principal>, String> {
    let settings = &shared.settings;
    let principal = shared
        .backend
        .authenticate(token, &settings.issuer, &settings.audiences)
        .await?;
    // The backend checks both; the console does not rely on it for the
    // issuer its sessions are keyed by.
    if principal.issuer != settings.issuer {
        return Err("the token is not from the console's issuer".into());
    }
    Ok(principal)
}

impl FromRequestParts<Arc<Shared>> for Caller {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, shared: &Arc<Shared>) -> Result<Caller, ConsoleError> {
        let bearer = parts
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match bearer {
            Some(token) => {
                let principal = verify_token(shared, token.trim())
                    .await
                    .map_err(|_| ConsoleError::Unauthenticated)?;
                Caller::from_principal(shared, &principal, None).ok_or(ConsoleError::Forbidden("viewer"))
            }
            None => Caller::from_cookie(shared, &parts.headers).ok_or(ConsoleError::Unauthenticated),
        }
    }
}
