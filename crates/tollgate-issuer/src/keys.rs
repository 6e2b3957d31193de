//! The authorization server's signing keys: the current P-256 key signs
//! access tokens (JOSE `typ` `at+jwt`, RFC 9068); previous keys stay in
//! the published key set while tokens they signed may still be live, so a
//! rotation never breaks a client mid-session.

use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::IssuerError;

/// The current key and every published key. `Debug` shows key ids only.
pub struct Keys {
    kid: String,
    current: EncodingKey,
    published: Vec<Value>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("kid", &self.kid)
            .field("published", &self.published.len())
            .finish_non_exhaustive()
    }
}

/// A PEM key's encoding key, public JWK and RFC 7638 key id.
fn load(pem: &[u8]) -> Result<(EncodingKey, Value, String), IssuerError> {
    let bad = |e: jsonwebtoken::errors::Error| IssuerError::Setup(format!("signing key: {e}"));
    let key = EncodingKey::from_ec_pem(pem).map_err(bad)?;
    let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(bad)?;
    let kid = jwk.thumbprint(ThumbprintHash::SHA256).map_err(bad)?;
    let mut jwk = serde_json::to_value(&jwk).map_err(|e| IssuerError::Setup(e.to_string()))?;
    if let Some(obj) = jwk.as_object_mut() {
        obj.insert("kid".into(), Value::String(kid.clone()));
        obj.insert("use".into(), Value::String("sig".into()));
        obj.insert("alg".into(), Value::String("ES256".into()));
    }
    Ok((key, jwk, kid))
}

impl Keys {
    /// The current key `current` (PKCS#8 PEM, P-256) and the previous keys
    /// still published.
    ///
    /// # Errors
    ///
    /// A key is not a P-256 PKCS#8 PEM key.
    pub fn from_pems(current: &[u8], previous: &[&[u8]]) -> Result<Keys, IssuerError> {
        let (key, jwk, kid) = load(current)?;
        let mut published = vec![jwk];
        for pem in previous {
            let (_, jwk, old) = load(pem)?;
            if old != kid {
                published.push(jwk);
            }
        }
        Ok(Keys {
            kid,
            current: key,
            published,
        })
    }

    /// The published key set, `{"keys": [...]}`: the current key first.
    pub fn jwks(&self) -> Value {
        json!({ "keys": self.published })
    }

    /// The current key's id.
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// The claims of `token` when one of our published keys signed it
    /// with JOSE `typ` `typ` (expiry not checked: revocation reads it).
    pub(crate) fn verify(&self, token: &str, typ: &str) -> Option<Value> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        if header.alg != Algorithm::ES256 || header.typ.as_deref() != Some(typ) {
            return None;
        }
        let kid = header.kid?;
        let jwk = self
            .published
            .iter()
            .find(|k| k["kid"].as_str() == Some(kid.as_str()))?;
        let jwk: Jwk = serde_json::from_value(jwk.clone()).ok()?;
        let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).ok()?;
        let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
        v.validate_exp = false;
        v.validate_aud = false;
        v.set_required_spec_claims::<&str>(&[]);
        jsonwebtoken::decode::<Value>(token, &key, &v).ok().map(|d| d.claims)
    }

    /// `claims` signed with the current key, JOSE `typ` `typ`.
    pub(crate) fn sign(&self, claims: &Value, typ: &str) -> Result<String, IssuerError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(typ.into());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.current).map_err(|e| IssuerError::Setup(format!("signing: {e}")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_rotation_publishes_both_keys_and_signs_with_the_new_one() {
        let old_pem = tollgate_auth::DevIssuer::generate_pem().unwrap();
        let new_pem = tollgate_auth::DevIssuer::generate_pem().unwrap();
        let before = Keys::from_pems(&old_pem, &[]).unwrap();
        let old_token = before.sign(&json!({"sub": "a"}), "at+jwt").unwrap();

        let during = Keys::from_pems(&new_pem, &[&old_pem, &new_pem]).unwrap();
        let jwks = during.jwks();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(
            kids,
            vec![during.key_id(), before.key_id()],
            "the current key first, each once"
        );
        assert!(jwks["keys"][0].get("d").is_none(), "no private part");
        let new_token = during.sign(&json!({"sub": "b"}), "at+jwt").unwrap();
        let kid = |t: &str| jsonwebtoken::decode_header(t).unwrap().kid.unwrap();
        assert_eq!(kid(&new_token), during.key_id());
        // Tokens signed before the rotation still verify against the key set.
        assert_eq!(during.verify(&old_token, "at+jwt").unwrap()["sub"], "a");
        assert_eq!(during.verify(&new_token, "at+jwt").unwrap()["sub"], "b");
        assert!(during.verify(&new_token, "dev-code").is_none(), "typ is checked");
        let after = Keys::from_pems(&new_pem, &[]).unwrap();
        assert!(
            after.verify(&old_token, "at+jwt").is_none(),
            "dropped keys stop verifying"
        );
    }
}
