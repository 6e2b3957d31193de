//! RFC 8414 authorization server metadata: what MCP clients of every
//! revision read to find the endpoints. Served at
//! `/.well-known/oauth-authorization-server` (2025-03-26 clients read it at
//! the origin), with the issuer's path appended, and at the OpenID
//! Connect discovery paths newer clients also try.

use serde_json::{Value, json};

use crate::jag::ID_JAG_TYP;
use crate::state::Issuer;
use crate::token::JWT_BEARER;

/// The paths metadata is served at (a trailing `/{*rest}` also matches).
pub(crate) const METADATA_PATHS: [&str; 2] = [
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
];

impl Issuer {
    /// The metadata document.
    pub fn metadata(&self) -> Value {
        let iss = &self.settings.issuer;
        let resources = self.resources.load();
        let mut scopes: Vec<&String> = resources.values().flatten().collect();
        scopes.sort();
        scopes.dedup();
        let mut doc = json!({
            "issuer": iss,
            "authorization_endpoint": format!("{iss}/authorize"),
            "token_endpoint": format!("{iss}/token"),
            "revocation_endpoint": format!("{iss}/revoke"),
            "jwks_uri": format!("{iss}/oauth/jwks.json"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", JWT_BEARER],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "scopes_supported": scopes,
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": self.settings.registration.metadata_documents,
            "identity_assertion_types_supported": [ID_JAG_TYP],
            "resource_indicators_supported": true,
        });
        if self.settings.registration.dynamic {
            doc["registration_endpoint"] = Value::String(format!("{iss}/register"));
        }
        doc
    }
}
