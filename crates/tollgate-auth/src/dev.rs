//! The development issuer: a local ES256 key that signs tokens the gateway
//! accepts, for `tollgate token mint` and `make run`.
//!
//! Not on the request path: the authenticator trusts it like any issuer,
//! with its key fixed in memory (no fetch), and the server publishes
//! [`DevIssuer::jwks`] on the admin listener. Reading and creating the key
//! file is `tollgate-config`'s job ([`tollgate_config::read_or_create_file`]
//! with [`DevIssuer::generate_pem`]).

use std::time::Duration;

use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::SetupError;
use crate::fetch::unix_now;
use crate::jwks::KeySet;
use crate::verify::IssuerState;

/// The client id written into minted tokens.
pub const DEV_CLIENT_ID: &str = "tollgate-dev";

/// A local token issuer. `Debug` does not show the key.
pub struct DevIssuer {
    issuer: String,
    kid: String,
    key: EncodingKey,
    pub(crate) verify_key: jsonwebtoken::DecodingKey,
    jwk: Value,
}

impl std::fmt::Debug for DevIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevIssuer")
            .field("issuer", &self.issuer)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// PEM text for DER bytes.
pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

impl DevIssuer {
    /// A new P-256 private key, PKCS#8 PEM: the content of a new key file.
    ///
    /// # Errors
    ///
    /// Key generation failure (as text, for the key file helper).
    pub fn generate_pem() -> Result<Vec<u8>, String> {
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| "cannot generate a P-256 key".to_owned())?;
        Ok(pem("PRIVATE KEY", doc.as_ref()).into_bytes())
    }

    /// The issuer `issuer` signing with the PKCS#8 PEM key `key_pem`. Its
    /// key id is the key's RFC 7638 thumbprint.
    ///
    /// # Errors
    ///
    /// The key is not a P-256 PKCS#8 PEM key.
    pub fn from_pem(issuer: &str, key_pem: &[u8]) -> Result<DevIssuer, SetupError> {
        let bad = |e: jsonwebtoken::errors::Error| SetupError(format!("development issuer key: {e}"));
        let key = EncodingKey::from_ec_pem(key_pem).map_err(bad)?;
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(bad)?;
        let kid = jwk.thumbprint(ThumbprintHash::SHA256).map_err(bad)?;
        let verify_key = jsonwebtoken::DecodingKey::from_jwk(&jwk).map_err(bad)?;
        let mut jwk = serde_json::to_value(&jwk).map_err(|e| SetupError(e.to_string()))?;
        if let Some(obj) = jwk.as_object_mut() {
            obj.insert("kid".into(), Value::String(kid.clone()));
            obj.insert("use".into(), Value::String("sig".into()));
            obj.insert("alg".into(), Value::String("ES256".into()));
        }
        Ok(DevIssuer {
            issuer: issuer.to_owned(),
            kid,
            key,
            verify_key,
            jwk,
        })
    }

    /// Its issuer URL.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Its key id.
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// Its public key set (`{"keys": [...]}`), to serve as JSON.
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk] })
    }

    /// A signed access token (`typ: at+jwt`) for `subject`, valid for `ttl`
    /// from now, for `audience` (route resource URLs), with `scopes` and an
    /// optional `team` claim.
    ///
    /// # Errors
    ///
    /// Signing failure.
    pub fn mint(
        &self,
        subject: &str,
        team: Option<&str>,
        scopes: &[String],
        ttl: Duration,
        audience: &[String],
    ) -> Result<String, SetupError> {
        let mut extra = serde_json::Map::new();
        if let Some(team) = team {
            extra.insert("team".into(), Value::String(team.to_owned()));
        }
        self.mint_with(subject, extra, scopes, ttl, audience)
    }

    /// [`DevIssuer::mint`] with any further claims (`team`, `groups`, ...).
    ///
    /// # Errors
    ///
    /// Signing failure.
    pub fn mint_with(
        &self,
        subject: &str,
        extra: serde_json::Map<String, Value>,
        scopes: &[String],
        ttl: Duration,
        audience: &[String],
    ) -> Result<String, SetupError> {
        let now = unix_now();
        let mut jti = [0u8; 16];
        SystemRandom::new()
            .fill(&mut jti)
            .map_err(|_| SetupError("no randomness for jti".into()))?;
        let mut claims = json!({
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "client_id": DEV_CLIENT_ID,
            "scope": scopes.join(" "),
            "iat": now,
            "nbf": now,
            "exp": now + ttl.as_secs(),
            "jti": jti.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        });
        if let Some(obj) = claims.as_object_mut() {
            obj.extend(extra);
        }
        self.sign(&claims, "at+jwt")
    }

    /// `claims` signed with its key, with JOSE `typ` `typ`.
    pub(crate) fn sign(&self, claims: &Value, typ: &str) -> Result<String, SetupError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(typ.into());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).map_err(|e| SetupError(format!("signing: {e}")))
    }

    /// The authenticator's view of this issuer: its key, fixed.
    pub(crate) fn issuer_state(&self) -> IssuerState {
        let keys = KeySet::from_jwks(self.jwks()).unwrap_or_default();
        IssuerState::fixed(&self.issuer, Algorithm::ES256, keys, 30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Authenticator;
    use crate::authenticator::no_issuers;

    #[tokio::test]
    async fn minted_tokens_pass_the_authenticator() {
        let pem = DevIssuer::generate_pem().unwrap();
        let dev = DevIssuer::from_pem("http://127.0.0.1:9090/dev-issuer", &pem).unwrap();
        let again = DevIssuer::from_pem("http://127.0.0.1:9090/dev-issuer", &pem).unwrap();
        assert_eq!(dev.key_id(), again.key_id(), "the key id is stable across restarts");
        assert!(!format!("{dev:?}").contains("PRIVATE"));
        let jwks = dev.jwks();
        assert_eq!(jwks["keys"][0]["kty"], "EC");
        assert!(jwks["keys"][0].get("d").is_none(), "no private part");

        let auth = Authenticator::new(&no_issuers(), Some(&dev)).unwrap();
        assert!(auth.is_ready());
        assert_eq!(auth.issuers(), vec!["http://127.0.0.1:9090/dev-issuer".to_owned()]);
        let route = "http://127.0.0.1:8080/mcp/demo";
        let token = dev
            .mint(
                "alice",
                Some("payments"),
                &["mcp:tools".into()],
                Duration::from_secs(3600),
                &[route.into()],
            )
            .unwrap();
        let p = auth.authenticate(&token, route).await.unwrap();
        assert_eq!(p.subject, "alice");
        assert_eq!(p.team.as_deref(), Some("payments"));
        assert_eq!(p.client_id.as_deref(), Some(DEV_CLIENT_ID));
        assert!(p.has_scope("mcp:tools"));
        assert!(
            auth.authenticate(&token, "http://127.0.0.1:8080/mcp/other")
                .await
                .is_err()
        );
        assert!(DevIssuer::from_pem("x", b"not a key").is_err());
    }
}
