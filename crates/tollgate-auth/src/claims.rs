//! Claims → [`Principal`]: the configured claim mapping, applied to a
//! verified JWT payload or an introspection answer (request path step 5,
//! once per distinct token; the result is cached).

use serde_json::{Map, Value};
use tollgate_config::ClaimMapping;
use tollgate_core::{Principal, PrincipalKind};

use crate::TokenRejection;

/// Look a claim up as a top-level name first (namespaced claims such as
/// `https://example.com/team` contain dots), then as a dotted path.
fn lookup<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(name) {
        return Some(v);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An array of strings, or one space-separated string.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s.split_ascii_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Build the principal. `exp` falls back to `default_exp` (introspection
/// answers may omit it); the subject is required.
///
/// # Errors
///
/// [`TokenRejection::MissingClaim`] without a subject or an expiry.
pub(crate) fn principal(
    issuer: &str,
    claims: &Map<String, Value>,
    mapping: &ClaimMapping,
    default_exp: Option<u64>,
) -> Result<Principal, TokenRejection> {
    let subject = string(lookup(claims, &mapping.subject)).ok_or(TokenRejection::MissingClaim)?;
    let expires_at = claims
        .get("exp")
        .and_then(Value::as_u64)
        .or(default_exp)
        .ok_or(TokenRejection::MissingClaim)?;
    let client_id = string(lookup(claims, &mapping.client_id)).or_else(|| string(claims.get("azp")));
    let scopes = match lookup(claims, &mapping.scopes) {
        Some(v) => strings(Some(v)),
        None => strings(claims.get("scp")),
    };
    let kind = kind_of(claims, &subject, client_id.as_deref());
    Ok(Principal {
        issuer: issuer.to_owned(),
        subject,
        client_id,
        token_id: string(claims.get("jti")),
        audience: strings(claims.get("aud")),
        groups: strings(lookup(claims, &mapping.groups)),
        team: string(lookup(claims, &mapping.team)),
        cost_center: string(lookup(claims, &mapping.cost_center)),
        scopes,
        expires_at,
        kind,
    })
}

/// A service (client credentials) token, as the common providers mark it:
/// Entra ID `idtyp: app`, Auth0 `gty: client-credentials` and
/// `sub = {client}@clients`, Keycloak `service-account-` users, and any
/// token whose subject is its own client.
fn kind_of(claims: &Map<String, Value>, subject: &str, client_id: Option<&str>) -> PrincipalKind {
    let s = |name: &str| claims.get(name).and_then(Value::as_str);
    let service = s("idtyp") == Some("app")
        || s("gty") == Some("client-credentials")
        || s("preferred_username").is_some_and(|u| u.starts_with("service-account-"))
        || client_id.is_some_and(|c| subject == c || subject.strip_suffix("@clients") == Some(c));
    if service {
        PrincipalKind::Service
    } else {
        PrincipalKind::User
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn default_mapping_reads_standard_claims() {
        let c = map(json!({
            "sub": "alice", "azp": "cli", "jti": "j1", "aud": ["a", "b"], "exp": 10,
            "scope": "mcp:tools mcp:read", "groups": ["dev"], "team": "payments"
        }));
        let p = principal("iss", &c, &ClaimMapping::default(), None).unwrap();
        assert_eq!(p.client_id.as_deref(), Some("cli"));
        assert_eq!(p.scopes, vec!["mcp:tools", "mcp:read"]);
        assert_eq!(p.audience, vec!["a", "b"]);
        assert_eq!(p.team.as_deref(), Some("payments"));
        assert_eq!(p.kind, PrincipalKind::User);
    }

    #[test]
    fn custom_mapping_follows_paths_and_namespaced_names() {
        let c = map(json!({
            "oid": "u-1", "exp": 10, "aud": "x", "scp": ["files.read"],
            "realm_access": {"roles": ["admin"]}, "https://acme.example/team": "search",
            "cost": 42
        }));
        let mapping = ClaimMapping {
            subject: "oid".into(),
            groups: "realm_access.roles".into(),
            team: "https://acme.example/team".into(),
            cost_center: "cost".into(),
            ..ClaimMapping::default()
        };
        let p = principal("iss", &c, &mapping, None).unwrap();
        assert_eq!(p.subject, "u-1");
        assert_eq!(p.groups, vec!["admin"]);
        assert_eq!(p.team.as_deref(), Some("search"));
        assert_eq!(p.cost_center.as_deref(), Some("42"));
        assert_eq!(p.scopes, vec!["files.read"], "scp fallback");
        assert_eq!(p.audience, vec!["x"]);
    }

    #[test]
    fn services_are_recognised_and_subject_is_required() {
        let cc = map(json!({"sub": "svc@clients", "client_id": "svc", "exp": 1}));
        assert!(
            principal("i", &cc, &ClaimMapping::default(), None)
                .unwrap()
                .is_service()
        );
        let entra = map(json!({"sub": "x", "idtyp": "app", "exp": 1}));
        assert!(
            principal("i", &entra, &ClaimMapping::default(), None)
                .unwrap()
                .is_service()
        );
        let none = map(json!({"exp": 1}));
        assert_eq!(
            principal("i", &none, &ClaimMapping::default(), None),
            Err(TokenRejection::MissingClaim)
        );
        let no_exp = map(json!({"sub": "a"}));
        assert_eq!(
            principal("i", &no_exp, &ClaimMapping::default(), Some(7))
                .unwrap()
                .expires_at,
            7
        );
    }
}
