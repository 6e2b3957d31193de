//! Phase 9, credential: what the upstream gets instead of the caller's
//! token, and which upstream session the call belongs to.
//!
//! The caller's `Authorization` never leaves the gateway (`forward` drops
//! it); the credential broker's credential for this upstream, if any, takes
//! its place — or, on a route acting for each user, the caller's own grant
//! from the vault. A caller without one is asked to connect, as their
//! protocol era allows (`-32042`, an `input_required` result, or the
//! `elicit` phase); after forward, an upstream that refuses the grant's
//! token has it forgotten and the caller asked again (`refused_grant`).
//!
//! A legacy call's sealed session id is opened here: forged, expired or
//! another principal's ids answer 404 so the client starts a new session.
//! 2026-07-28 calls carry no session.

use std::sync::Arc;

use axum::response::Response;
use http::request::Parts;
use http::{HeaderValue, StatusCode};
use tollgate_auth::{Caller, UpstreamCredential, bearer_token};
use tollgate_core::{Classify, Era, ErrorKind, Principal, UpstreamGrantNote};
use tollgate_mcp::headers::SESSION_ID;
use tollgate_session::SessionError;
use tollgate_vault::Access;

use crate::rescue::{Rejection, UrlElicitation};
use crate::route::Route;
use crate::stage::{Credentialed, Forwarded, Limited, Outbound, Stage, Stop};
use crate::task_handle::owner;

/// Open the session and get the upstream credential.
///
/// # Errors
///
/// The stop of a call whose session id does not open
/// (`session_not_found`, 404), or whose upstream credential is
/// unavailable (the broker's class, 502 or 503).
pub(crate) async fn credential(route: &Route, limited: Limited, parts: &Parts) -> Result<Credentialed, Stop> {
    let session = match limited.call.era {
        Era::Legacy => unseal(route, parts, limited.principal()).map_err(|r| r.with_id(limited.first_id())),
        Era::Modern => Ok(None),
    };
    let (mut limited, session) = limited.check(session)?;
    let (session, elicits_url) = session.map_or((None, false), |(id, flag)| (Some(id), flag));
    limited.authorized.gated.identified.facts.elicits_url = elicits_url;
    let outbound = outbound(route, &limited, parts, session).await;
    let (mut limited, outbound) = limited.check(outbound)?;
    limited.authorized.gated.identified.facts.upstream_grant = outbound.grant.clone();
    Ok(Credentialed { limited, outbound })
}

/// The credential the call goes upstream with, in `session`.
async fn outbound(
    route: &Route,
    limited: &Limited,
    parts: &Parts,
    session: Option<HeaderValue>,
) -> Result<Outbound, Rejection> {
    let id = limited.first_id();
    if let Some(vault) = route.shared.vault.as_ref().filter(|v| v.serves(&route.name)) {
        // The elicit phase serves the call again once connected: it needs
        // the call's head and body, which only this phase's caller holds.
        let ask = Ask::of(limited.call.era, limited.messages(), limited.facts.elicits_url);
        let (credential, grant) = user_grant(vault, &route.name, limited.principal(), ask)
            .await
            .map_err(|r| r.with_id(id))?;
        return Ok(Outbound {
            session,
            credential: Some(credential),
            grant: Some(grant),
        });
    }
    let broker = &route.shared.broker;
    if !route.brokered {
        return Ok(Outbound {
            session,
            credential: None,
            grant: None,
        });
    }
    let token = bearer_token(&parts.headers, None).ok();
    let caller = match (token, limited.principal()) {
        (Some(token), Some(principal)) => Some(Caller { token, principal }),
        _ => None,
    };
    // Boxed: a token request to the identity provider is a large future.
    let credential = Box::pin(broker.credential(&route.name, caller)).await.map_err(|e| {
        tracing::warn!(error = %e, "upstream credential unavailable");
        Rejection::new(e.kind(), "Upstream credential unavailable").with_id(id)
    })?;
    Ok(Outbound {
        session,
        credential,
        grant: None,
    })
}

/// How a caller without a grant is asked to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    /// The `-32042` error.
    Error,
    /// An MRTR `input_required` result (2026-07-28).
    InputRequired,
    /// An `elicitation/create` request on the call's stream (a legacy
    /// client that declared URL-mode elicitation).
    Elicit,
}

impl Ask {
    /// How a call of `era` whose messages are `messages` is asked;
    /// `elicits_url`: its legacy session's client declared URL-mode
    /// elicitation.
    fn of(era: Era, messages: &[tollgate_mcp::Message], elicits_url: bool) -> Ask {
        let first = messages.first();
        match era {
            Era::Modern if first.is_some_and(|m| mrtr_method(&m.method)) => Ask::InputRequired,
            Era::Legacy if elicits_url && first.is_some_and(|m| m.id.is_some()) => Ask::Elicit,
            _ => Ask::Error,
        }
    }
}

/// Whether a 2026-07-28 client can be answered with an MRTR
/// `input_required` result for this method.
fn mrtr_method(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// The caller's own grant at a `user_oauth` upstream; without one, the
/// URL elicitation that sends them to connect (the call does not reach
/// the upstream) as `ask` says.
async fn user_grant(
    vault: &tollgate_vault::Vault,
    server: &str,
    principal: Option<&Arc<Principal>>,
    ask: Ask,
) -> Result<(UpstreamCredential, Arc<UpstreamGrantNote>), Rejection> {
    let principal = principal.ok_or_else(|| Rejection::new(ErrorKind::Unauthenticated, "Unauthorized"))?;
    let access = Box::pin(vault.access(&principal.issuer, &principal.subject, server)).await;
    match access {
        Ok(Access::Token { bearer, grant }) => {
            tracing::debug!(grant = %grant.id, "upstream grant of the caller");
            let mut value = HeaderValue::from_str(&format!("Bearer {bearer}"))
                .map_err(|_| Rejection::new(ErrorKind::UpstreamUnavailable, "Upstream credential unusable"))?;
            value.set_sensitive(true);
            let grant = *grant;
            let note = UpstreamGrantNote {
                id: grant.id.into(),
                issuer: grant.upstream_issuer.into(),
                subject: grant.upstream_subject.map(Into::into),
                scopes: grant.scopes.into(),
            };
            let credential = UpstreamCredential {
                name: http::header::AUTHORIZATION,
                value,
            };
            Ok((credential, Arc::new(note)))
        }
        Ok(Access::Connect { url, id }) => Err(connect_answer(server, &url, &id, ask)),
        Err(e) => {
            tracing::warn!(error = %e, server, "upstream grant unavailable");
            Err(Rejection::new(ErrorKind::AuthUnavailable, "Token vault unavailable"))
        }
    }
}

/// The answer that sends the caller to `url` to connect `server`.
fn connect_answer(server: &str, url: &str, id: &str, ask: Ask) -> Rejection {
    let message = format!("Connect {server} to continue: open the link, sign in and allow access.");
    let mut r = Rejection::new(ErrorKind::UrlElicitationRequired, message.clone());
    if ask == Ask::Elicit {
        r.elicit = Some(Box::new(UrlElicitation {
            id: id.to_owned(),
            url: url.to_owned(),
            message: message.clone(),
            server: server.to_owned(),
        }));
    }
    if ask == Ask::InputRequired {
        // 2026-07-28 has no elicitation id: the retry itself tells.
        let request = serde_json::json!({"method": "elicitation/create", "params": {
            "mode": "url", "url": url, "message": message,
        }});
        let key = format!("tollgate.connect.{server}");
        r.result = Some(Box::new(serde_json::json!({
            "resultType": "input_required",
            "inputRequests": { key: request },
        })));
    } else {
        r.data = Some(Box::new(serde_json::json!({"elicitations": [{
            "mode": "url", "elicitationId": id, "url": url, "message": message,
        }]})));
    }
    r
}

/// The upstream session id behind the client's sealed one, and whether
/// its client declared URL-mode elicitation.
fn unseal(
    route: &Route,
    parts: &Parts,
    principal: Option<&Arc<Principal>>,
) -> Result<Option<(HeaderValue, bool)>, Rejection> {
    let Some(sealed) = parts.headers.get(&SESSION_ID) else {
        return Ok(None);
    };
    let not_found = |why: SessionError| {
        tracing::debug!(reason = %why, "session refused");
        Rejection::new(ErrorKind::SessionNotFound, "Session not found")
    };
    let sealed = sealed.to_str().map_err(|_| not_found(SessionError::Invalid))?;
    let claims = route
        .shared
        .sealer
        .unseal(sealed.trim(), owner(&route.name, principal))
        .map_err(not_found)?;
    HeaderValue::from_str(&claims.upstream_id)
        .map(|id| Some((id, claims.elicits_url)))
        .map_err(|_| not_found(SessionError::Invalid))
}

/// After forward, on a route acting for each user: an upstream that
/// refuses the caller's own token (`401`: revoked at the vendor, or the
/// vendor forgot it) no longer has a grant the vault can use. The grant is
/// forgotten and the caller is asked to connect again, as a call without
/// one is; the upstream's own challenge, which names its authorization
/// server, never reaches the client.
///
/// # Errors
///
/// The stop that asks the caller to connect again.
pub(crate) async fn refused_grant(
    route: &Route,
    forwarded: Forwarded,
    res: Response,
) -> Result<(Forwarded, Response), Stop> {
    let vault = route.shared.vault.as_ref().filter(|v| v.serves(&route.name));
    let (Some(vault), Some(grant)) = (vault, forwarded.facts.upstream_grant.clone()) else {
        return Ok((forwarded, res));
    };
    if res.status() != StatusCode::UNAUTHORIZED {
        return Ok((forwarded, res));
    }
    drop(res);
    tracing::warn!(server = %route.name, grant = %grant.id, "the upstream refused the caller's own token: grant forgotten");
    if let Err(e) = vault.revoke(&grant.id, None).await {
        tracing::warn!(error = %e, "the refused grant could not be forgotten");
    }
    // The body has gone upstream: this call cannot be served again, so a
    // legacy client is not asked on its stream.
    let ask = Ask::of(forwarded.call.era, forwarded.messages(), false);
    let id = forwarded.first_id();
    let answer = user_grant(vault, &route.name, forwarded.principal(), ask).await;
    let rejection = match answer {
        Err(r) => r,
        // Connected again meanwhile (another call): try again.
        Ok(_) => Rejection::new(
            ErrorKind::UpstreamUnavailable,
            "Upstream refused the credential; try again",
        ),
    };
    Err(forwarded.stop(rejection.with_id(id)))
}
