//! Phase 6b, connection: what policies may know of the caller's own grant
//! at a `user_oauth` upstream, between the catalog gate and authorize.
//!
//! Only on a `user_oauth` route whose policies read
//! `context.upstream_grant` (the engine knows which attributes its
//! policies read): the vault is asked whether the caller has connected and
//! with which scopes — the grant is neither opened nor refreshed, and no
//! connect link is made (a call the policies deny must not ask the user to
//! connect). Other calls pay nothing. The vault unreachable answers 503
//! `auth_unavailable`, as the credential phase does.

use crate::rescue::Rejection;
use crate::route::Route;
use crate::stage::{Connection, Gated, Stage, Stop};
use tollgate_core::ErrorKind;

/// Look the caller's upstream grant up for the policies, when they read it.
///
/// # Errors
///
/// The stop of a call whose grant cannot be looked up (the vault's store
/// is unreachable).
pub(crate) async fn connection(route: &Route, mut gated: Gated) -> Result<Gated, Stop> {
    let Some(vault) = route.shared.vault.as_ref().filter(|v| v.serves(&route.name)) else {
        return Ok(gated);
    };
    if !route.shared.policy.as_ref().is_some_and(|p| p.reads_upstream_grant()) {
        return Ok(gated);
    }
    let Some(principal) = gated.principal().cloned() else {
        return Ok(gated);
    };
    match vault.peek(&principal.issuer, &principal.subject, &route.name).await {
        Ok(grant) => {
            gated.connection = Some(Connection {
                scopes: grant.map(|g| g.scopes),
            });
            Ok(gated)
        }
        Err(e) => {
            tracing::warn!(error = %e, server = %route.name, "upstream grant unavailable for policies");
            let id = gated.identified.first_id();
            Err(gated.stop(Rejection::new(ErrorKind::AuthUnavailable, "Token vault unavailable").with_id(id)))
        }
    }
}
