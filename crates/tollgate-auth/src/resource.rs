//! Each route as an OAuth 2.1 protected resource: its canonical URL, its
//! RFC 9728 metadata, its required scopes, and the exact
//! `WWW-Authenticate` challenge for every authentication failure (request
//! path step 5; the server turns [`AuthError`] into 401/403 with
//! [`ProtectedResource::challenge`]).
//!
//! Everything is computed once when the route is built.

use std::sync::Arc;

use http::HeaderMap;
use serde_json::json;
use tollgate_core::Principal;
use url::Url;

use crate::{AuthError, Authenticator, SetupError, bearer_token};

/// The RFC 9728 well-known prefix.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// One route as a protected resource.
#[derive(Debug, Clone)]
pub struct ProtectedResource {
    resource: String,
    metadata_url: String,
    metadata_path: String,
    scopes: Vec<String>,
    supported: Vec<String>,
    metadata: Arc<[u8]>,
}

impl ProtectedResource {
    /// A protected resource at `resource_url` (absolute, no fragment),
    /// vouched for by `authorization_servers`, needing `scopes` on every
    /// call and advertising `scopes_supported` (default: `scopes`).
    ///
    /// # Errors
    ///
    /// `resource_url` is not an absolute http(s) URL.
    pub fn new(
        resource_url: &str,
        authorization_servers: &[String],
        scopes: &[String],
        scopes_supported: &[String],
    ) -> Result<ProtectedResource, SetupError> {
        let url = Url::parse(resource_url).map_err(|e| SetupError(format!("resource URL {resource_url}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.fragment().is_some() || url.query().is_some() {
            return Err(SetupError(format!(
                "resource URL {resource_url}: not an http(s) URL without query"
            )));
        }
        let resource = resource_url.trim_end_matches('/').to_owned();
        let path = url.path().trim_end_matches('/');
        let metadata_path = format!("{WELL_KNOWN}{path}");
        let metadata_url = format!("{}{metadata_path}", url.origin().ascii_serialization());
        let supported = if scopes_supported.is_empty() {
            scopes
        } else {
            scopes_supported
        };
        let metadata = json!({
            "resource": resource,
            "authorization_servers": authorization_servers,
            "scopes_supported": supported,
            "bearer_methods_supported": ["header"],
        });
        Ok(ProtectedResource {
            resource,
            metadata_url,
            metadata_path,
            scopes: scopes.to_vec(),
            supported: supported.to_vec(),
            metadata: metadata.to_string().into_bytes().into(),
        })
    }

    /// The canonical URL of the route (the OAuth `resource`).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The absolute URL of the metadata document, as sent in challenges.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The path of the metadata document
    /// (`/.well-known/oauth-protected-resource/mcp/{name}`, after any path
    /// prefix of the base URL).
    pub fn metadata_path(&self) -> &str {
        &self.metadata_path
    }

    /// The RFC 9728 metadata, serialized JSON (`application/json`).
    pub fn metadata_json(&self) -> &[u8] {
        &self.metadata
    }

    /// Scopes the route advertises (`scopes_supported`).
    pub fn scopes_supported(&self) -> &[String] {
        &self.supported
    }

    /// Scopes every call on the route needs.
    pub fn required_scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Authenticate a request to this route: find the bearer token in
    /// `headers` (never the query string), validate it for this resource,
    /// and check the route's scopes.
    ///
    /// # Errors
    ///
    /// Any [`AuthError`]; answer it with [`ProtectedResource::challenge`].
    pub async fn authenticate(
        &self,
        auth: &Authenticator,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<Arc<Principal>, AuthError> {
        let token = bearer_token(headers, query)?;
        let principal = auth.authenticate(token, &self.resource).await?;
        self.check_scopes(&principal, &[])?;
        Ok(principal)
    }

    /// Check the route's scopes plus `extra` ones an operation needs.
    ///
    /// # Errors
    ///
    /// [`AuthError::InsufficientScope`] naming every scope needed (route
    /// and operation), not only the missing ones.
    pub fn check_scopes(&self, principal: &Principal, extra: &[&str]) -> Result<(), AuthError> {
        let all = self.scopes.iter().map(String::as_str).chain(extra.iter().copied());
        if all.clone().all(|s| principal.has_scope(s)) {
            return Ok(());
        }
        let mut required: Vec<String> = Vec::new();
        for s in all {
            if !required.iter().any(|r| r == s) {
                required.push(s.to_owned());
            }
        }
        Err(AuthError::InsufficientScope { required })
    }

    /// The `WWW-Authenticate` value for `err`, or `None` when the answer
    /// carries no challenge ([`AuthError::Unavailable`]: 503).
    ///
    /// - no token: `Bearer resource_metadata="…", scope="…"`;
    /// - otherwise `Bearer error="…", error_description="…",
    ///   resource_metadata="…", scope="…"`, where `scope` lists every scope
    ///   needed (for `insufficient_scope`, those of the error).
    ///
    /// `scope` is left out when no scope is needed.
    pub fn challenge(&self, err: &AuthError) -> Option<String> {
        if matches!(err, AuthError::Unavailable { .. }) {
            return None;
        }
        let scopes = match err {
            AuthError::InsufficientScope { required } => required.join(" "),
            _ => self.scopes.join(" "),
        };
        let mut out = String::from("Bearer ");
        if let (Some(code), Some(description)) = (err.oauth_error(), err.description()) {
            out.push_str(&format!("error=\"{code}\", error_description=\"{description}\", "));
        }
        out.push_str(&format!("resource_metadata=\"{}\"", self.metadata_url));
        if !scopes.is_empty() {
            out.push_str(&format!(", scope=\"{scopes}\""));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests;
