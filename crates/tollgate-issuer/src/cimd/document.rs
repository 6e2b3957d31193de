//! Validation of a fetched Client ID Metadata Document (CIMD draft §4 and
//! §4.1; RFC 7591 §2 for the members and their defaults).

use serde_json::{Map, Value};
use url::Url;

use super::{CimdError, ClientMetadata};

/// Members a public document must not hold: shared secrets (§4.1).
const SECRET_MEMBERS: [&str; 2] = ["client_secret", "client_secret_expires_at"];

/// JWK members that hold private or symmetric key material.
const PRIVATE_JWK_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

/// Redirect URI schemes that run code or read local data in a browser.
const DANGEROUS_SCHEMES: [&str; 6] = ["javascript", "data", "vbscript", "file", "blob", "about"];

/// Parse and validate `body`, fetched for `client_id`.
pub(crate) fn parse(client_id: &str, body: &[u8], development: bool) -> Result<ClientMetadata, CimdError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| CimdError::NotJson {
        url: client_id.to_owned(),
        reason: format!("unparsable JSON ({e})"),
    })?;
    let Value::Object(doc) = value else {
        return Err(invalid(client_id, "the document is not a JSON object".into()));
    };
    let v = Validator {
        client_id,
        doc: &doc,
        development,
    };
    v.identity()?;
    v.no_secrets()?;
    let token_endpoint_auth_method = v
        .string("token_endpoint_auth_method")?
        .unwrap_or_else(|| "none".to_owned());
    if token_endpoint_auth_method.starts_with("client_secret_") {
        let reason = format!("token_endpoint_auth_method {token_endpoint_auth_method:?} needs a shared secret");
        return Err(invalid(client_id, reason));
    }
    Ok(ClientMetadata {
        client_id: client_id.to_owned(),
        client_name: v.string("client_name")?,
        client_uri: v.web_url("client_uri")?,
        logo_uri: v.web_url("logo_uri")?,
        redirect_uris: v.redirect_uris()?,
        grant_types: v
            .strings("grant_types")?
            .unwrap_or_else(|| vec!["authorization_code".to_owned()]),
        response_types: v.strings("response_types")?.unwrap_or_else(|| vec!["code".to_owned()]),
        token_endpoint_auth_method,
        scope: v.string("scope")?,
        software_id: v.string("software_id")?,
        software_version: v.string("software_version")?,
    })
}

fn invalid(client_id: &str, reason: String) -> CimdError {
    CimdError::Invalid {
        url: client_id.to_owned(),
        reason,
    }
}

struct Validator<'a> {
    client_id: &'a str,
    doc: &'a Map<String, Value>,
    development: bool,
}

impl Validator<'_> {
    fn fail(&self, reason: String) -> CimdError {
        invalid(self.client_id, reason)
    }

    /// A member's value; `null` counts as absent.
    fn member(&self, name: &str) -> Option<&Value> {
        self.doc.get(name).filter(|v| !v.is_null())
    }

    /// `client_id` must be the URL fetched, compared as strings (§4).
    fn identity(&self) -> Result<(), CimdError> {
        match self.member("client_id") {
            Some(Value::String(id)) if id == self.client_id => Ok(()),
            Some(Value::String(id)) => {
                Err(self.fail(format!("its client_id {id:?} is not the URL it was fetched from")))
            }
            Some(_) => Err(self.fail("client_id is not a string".into())),
            None => Err(self.fail("client_id is missing".into())),
        }
    }

    /// No shared secrets, no private keys (§4.1).
    fn no_secrets(&self) -> Result<(), CimdError> {
        if let Some(name) = SECRET_MEMBERS.iter().find(|m| self.doc.contains_key(**m)) {
            return Err(self.fail(format!("a public document cannot hold {name}")));
        }
        let keys = self
            .member("jwks")
            .and_then(|j| j.get("keys"))
            .and_then(Value::as_array);
        let private = keys
            .into_iter()
            .flatten()
            .any(|k| PRIVATE_JWK_MEMBERS.iter().any(|m| k.get(*m).is_some()));
        if private {
            return Err(self.fail("jwks holds private or symmetric key material".into()));
        }
        Ok(())
    }

    fn string(&self, name: &str) -> Result<Option<String>, CimdError> {
        match self.member(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.fail(format!("{name} is not a string"))),
        }
    }

    fn strings(&self, name: &str) -> Result<Option<Vec<String>>, CimdError> {
        let Some(value) = self.member(name) else {
            return Ok(None);
        };
        let not_strings = || self.fail(format!("{name} is not an array of strings"));
        let items = value.as_array().ok_or_else(not_strings)?;
        let strings = items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or_else(not_strings));
        strings.collect::<Result<Vec<_>, _>>().map(Some)
    }

    /// A URL shown or linked on the consent page: http(s) only, and https
    /// outside development.
    fn web_url(&self, name: &str) -> Result<Option<String>, CimdError> {
        let Some(text) = self.string(name)? else {
            return Ok(None);
        };
        match Url::parse(&text).map(|u| u.scheme().to_owned()) {
            Ok(s) if s == "https" || (s == "http" && self.development) => Ok(Some(text)),
            _ => Err(self.fail(format!("{name} {text:?} is not an https URL"))),
        }
    }

    /// A non-empty array of absolute URLs, without fragments (RFC 6749
    /// §3.1.2), none in a scheme a browser runs, and `http` only to a
    /// loopback host outside development (MCP: "localhost or HTTPS").
    fn redirect_uris(&self) -> Result<Vec<String>, CimdError> {
        let uris = self.strings("redirect_uris")?.unwrap_or_default();
        if uris.is_empty() {
            return Err(self.fail("redirect_uris is missing or empty".into()));
        }
        for uri in &uris {
            let bad = |why: &str| self.fail(format!("redirect URI {uri:?} {why}"));
            let url = Url::parse(uri).map_err(|_| bad("is not an absolute URL"))?;
            if url.fragment().is_some() {
                return Err(bad("has a fragment"));
            }
            if DANGEROUS_SCHEMES.contains(&url.scheme()) {
                return Err(bad("has a refused scheme"));
            }
            let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
            if url.scheme() == "http" && !loopback && !self.development {
                return Err(bad("is http:// to a host other than localhost"));
            }
        }
        Ok(uris)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    const ID: &str = "https://app.example/client.json";

    fn check(doc: Value) -> Result<ClientMetadata, CimdError> {
        parse(ID, doc.to_string().as_bytes(), false)
    }

    fn refused(doc: Value, needle: &str) {
        match check(doc) {
            Err(e @ CimdError::Invalid { .. }) => assert!(e.to_string().contains(needle), "{e}"),
            other => panic!("expected Invalid({needle}), got {other:?}"),
        }
    }

    #[test]
    fn minimal_document_gets_defaults() {
        let meta = check(json!({"client_id": ID, "redirect_uris": ["http://127.0.0.1:8080/cb"]})).unwrap();
        assert_eq!(meta.client_id, ID);
        assert_eq!(meta.token_endpoint_auth_method, "none");
        assert_eq!(meta.grant_types, ["authorization_code"]);
        assert_eq!(meta.response_types, ["code"]);
        assert_eq!(meta.client_name, None);
    }

    #[test]
    fn full_document_is_kept() {
        let meta = check(json!({
            "client_id": ID, "client_name": "App", "client_uri": "https://app.example/",
            "logo_uri": "https://app.example/logo.png", "redirect_uris": ["https://app.example/cb", "com.example.app:/cb"],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": [{"kty": "EC", "x": "..", "y": ".."}]},
            "scope": "mcp", "software_id": "app", "software_version": "1.2", "extension": {"ignored": true}
        }))
        .unwrap();
        assert_eq!(meta.client_name.as_deref(), Some("App"));
        assert_eq!(meta.redirect_uris.len(), 2);
        assert_eq!(meta.token_endpoint_auth_method, "private_key_jwt");
        assert_eq!(meta.software_version.as_deref(), Some("1.2"));
    }

    /// A valid document with `changes` applied (a `null` removes a member).
    fn with(changes: Value) -> Value {
        let mut doc = json!({"client_id": ID, "redirect_uris": ["https://app.example/cb"]});
        for (name, value) in changes.as_object().unwrap() {
            match value {
                Value::Null => doc.as_object_mut().unwrap().remove(name),
                _ => doc.as_object_mut().unwrap().insert(name.clone(), value.clone()),
            };
        }
        doc
    }

    #[test]
    fn wrong_identity_and_secrets_are_refused() {
        let private_jwk = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]});
        let cases = [
            ("not the URL", json!({"client_id": "https://other.example/c"})),
            ("not the URL", json!({"client_id": format!("{ID}/")})),
            ("client_id is missing", json!({"client_id": null})),
            ("client_id is not a string", json!({"client_id": [ID]})),
            ("client_secret", json!({"client_secret": "s"})),
            ("client_secret", json!({"client_secret_expires_at": 0})),
            (
                "shared secret",
                json!({"token_endpoint_auth_method": "client_secret_basic"}),
            ),
            (
                "shared secret",
                json!({"token_endpoint_auth_method": "client_secret_jwt"}),
            ),
            ("jwks", json!({"jwks": private_jwk})),
        ];
        for (needle, changes) in cases {
            refused(with(changes), needle);
        }
        refused(json!([ID]), "not a JSON object");
        assert!(matches!(parse(ID, b"{not json", false), Err(CimdError::NotJson { .. })));
    }

    #[test]
    fn malformed_members_are_refused() {
        let cases = [
            ("redirect_uris is missing", json!({"redirect_uris": null})),
            ("redirect_uris is missing", json!({"redirect_uris": []})),
            ("array of strings", json!({"redirect_uris": "https://app.example/cb"})),
            ("array of strings", json!({"redirect_uris": [1]})),
            ("absolute", json!({"redirect_uris": ["/cb"]})),
            ("fragment", json!({"redirect_uris": ["https://app.example/cb#x"]})),
            ("scheme", json!({"redirect_uris": ["javascript:alert(1)"]})),
            ("localhost", json!({"redirect_uris": ["http://app.example/cb"]})),
            ("grant_types", json!({"grant_types": "authorization_code"})),
            ("client_name", json!({"client_name": 7})),
            ("logo_uri", json!({"logo_uri": "javascript:x"})),
            ("client_uri", json!({"client_uri": "http://app.example/"})),
        ];
        for (needle, changes) in cases {
            refused(with(changes), needle);
        }
    }
}
