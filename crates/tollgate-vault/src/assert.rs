//! `id_jag` servers: the user's upstream token obtained without a consent
//! click. The front door exchanges the ID token of the user's latest
//! sign-in at the company identity provider for an Identity Assertion JWT
//! naming the upstream's authorization server (`tollgate-issuer`); the
//! vault redeems it there with the JWT bearer grant (RFC 7523) as
//! Tollgate's pre-registered client, and keeps the token like any grant.
//! There is no refresh token: an expired token is replaced by asserting
//! again while the sign-in's ID token lasts; after that, the connect page
//! only signs the user in again.

use crate::VaultError;
use crate::records::{Connect, GrantInfo};
use crate::upstream::{self, TokenError};
use crate::vault::Vault;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl Vault {
    /// A grant for `request` by identity assertion: the access token and
    /// the grant kept; `None` when the user must sign in again first (no
    /// ID token of theirs is kept, or the caller is not a user of the
    /// front door's sign-in).
    ///
    /// # Errors
    ///
    /// The identity provider or the upstream's authorization server
    /// refused or failed, or the store is unreachable.
    pub(crate) async fn assert_grant(&self, request: &Connect) -> Result<Option<(String, GrantInfo)>, VaultError> {
        if !self.settings.identity_issuers.contains(&request.principal_issuer) {
            return Ok(None);
        }
        let up = self.upstream(&request.server)?;
        let meta = self.meta(&up).await?;
        let assertion = self
            .issuer
            .identity_assertion(&request.subject, &meta.issuer, &up.spec.resource, &up.spec.scopes)
            .await
            .map_err(|e| VaultError::Upstream(format!("{}: {}", request.server, e.description)))?;
        let Some(assertion) = assertion else {
            return Ok(None);
        };
        let client = self.client(&up).await?;
        let form = [("grant_type", JWT_BEARER), ("assertion", assertion.as_str())];
        let set = upstream::token(&self.http, &up.spec, meta, client, &form)
            .await
            .map_err(|e| match e {
                TokenError::InvalidGrant => {
                    VaultError::Upstream(format!("{}: the identity assertion was refused", request.server))
                }
                TokenError::Other(e) => e,
            })?;
        let bearer = set.access_token.clone();
        let info = self.keep(request, &up, set).await?;
        tracing::info!(server = %info.server, subject = %info.subject, grant = %info.id, "upstream token obtained by identity assertion");
        Ok(Some((bearer, info)))
    }
}
