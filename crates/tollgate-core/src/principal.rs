//! Who is calling: the authenticated principal of a request.
//!
//! Step 5 of the request path (authentication) produces one [`Principal`]
//! per verified token; it is shared as `Arc<Principal>` by everything after
//! it: policy (Cedar entity attributes), rate limits and quotas (subject,
//! team), upstream credentials (token exchange on behalf of the subject),
//! sessions (bound to the subject) and the audit record (issuer, subject,
//! client id, token id).

use serde::Serialize;

/// Whether a principal is a person or a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// A user, through a client acting on their behalf (authorization code
    /// flow, token exchange).
    User,
    /// A service acting for itself (OAuth client credentials grant).
    Service,
}

impl PrincipalKind {
    /// A stable lowercase name for logs, metrics and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::Service => "service",
        }
    }
}

/// The verified identity behind one access token, with the claims the
/// gateway uses for policy, attribution and audit.
///
/// Built once per distinct token and shared behind an `Arc`, so cloning is a
/// reference count increment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Principal {
    /// The token issuer (`iss`), exactly as configured.
    pub issuer: String,
    /// The subject (`sub`, or the configured subject claim).
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id` or `azp`).
    pub client_id: Option<String>,
    /// The token's unique id (`jti`), for tracing one token in the audit trail.
    pub token_id: Option<String>,
    /// Every audience (`aud`) the token names.
    pub audience: Vec<String>,
    /// Groups or roles (configured claim).
    pub groups: Vec<String>,
    /// The team the caller belongs to (configured claim), for attribution.
    pub team: Option<String>,
    /// The cost centre to charge (configured claim).
    pub cost_center: Option<String>,
    /// Granted OAuth scopes (`scope` string or `scp` array).
    pub scopes: Vec<String>,
    /// Expiry of the token, seconds since the Unix epoch.
    pub expires_at: u64,
    /// User or service.
    pub kind: PrincipalKind,
}

impl Principal {
    /// A principal known only by issuer and subject: no client, token id,
    /// audience, groups, team, cost centre or scopes, no expiry (`0`).
    /// Fill in what is known with struct update syntax.
    pub fn bare(issuer: impl Into<String>, subject: impl Into<String>, kind: PrincipalKind) -> Principal {
        Principal {
            issuer: issuer.into(),
            subject: subject.into(),
            client_id: None,
            token_id: None,
            audience: Vec::new(),
            groups: Vec::new(),
            team: None,
            cost_center: None,
            scopes: Vec::new(),
            expires_at: 0,
            kind,
        }
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The scopes of `required` this principal lacks, in order.
    pub fn missing_scopes<'a, S: AsRef<str>>(&self, required: &'a [S]) -> Vec<&'a str> {
        required
            .iter()
            .map(AsRef::as_ref)
            .filter(|s| !self.has_scope(s))
            .collect()
    }

    /// Whether the token names `audience` in its `aud` claim.
    pub fn has_audience(&self, audience: &str) -> bool {
        self.audience.iter().any(|a| a == audience)
    }

    /// Whether the principal is a service (client credentials) rather than a user.
    pub fn is_service(&self) -> bool {
        self.kind == PrincipalKind::Service
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal {
            issuer: "https://idp.example.com".into(),
            subject: "alice".into(),
            client_id: Some("cli".into()),
            token_id: Some("t1".into()),
            audience: vec!["https://gw.example.com/mcp/github".into()],
            groups: vec!["dev".into()],
            team: Some("payments".into()),
            cost_center: None,
            scopes: vec!["mcp:tools".into(), "mcp:read".into()],
            expires_at: 2_000_000_000,
            kind: PrincipalKind::User,
        }
    }

    #[test]
    fn scopes_and_audience_are_exact_matches() {
        let p = alice();
        assert!(p.has_scope("mcp:tools"));
        assert!(!p.has_scope("mcp"));
        assert_eq!(
            p.missing_scopes(&["mcp:read", "admin", "mcp:write"]),
            vec!["admin", "mcp:write"]
        );
        assert!(p.missing_scopes::<&str>(&[]).is_empty());
        assert!(p.has_audience("https://gw.example.com/mcp/github"));
        assert!(!p.has_audience("https://gw.example.com/mcp/git"));
        assert!(!p.is_service());
    }

    #[test]
    fn serializes_for_the_audit_record() {
        let json = serde_json::to_value(alice()).unwrap_or_default();
        assert_eq!(json["kind"], "user");
        assert_eq!(json["team"], "payments");
    }
}
