//! RFC 7662 token introspection for opaque (non-JWT) access tokens
//! (request path step 5 on a cache miss). The answer is cached by the
//! authenticator for at most `cache_ttl`, never past the token's `exp`.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};
use tollgate_config::{Introspection, Secret};
use url::Url;
use url::form_urlencoded::{Serializer, byte_serialize};

use crate::fetch::{check_url, read_body};

/// A configured introspection endpoint and the gateway's client there.
pub(crate) struct Introspector {
    endpoint: Url,
    basic: Secret,
    pub(crate) cache_ttl: Duration,
    allow_http: bool,
}

impl Introspector {
    pub(crate) fn new(cfg: &Introspection, secret: Secret, allow_http: bool) -> Introspector {
        Introspector {
            endpoint: cfg.endpoint.clone(),
            basic: basic_auth(&cfg.client_id, secret.expose()),
            cache_ttl: cfg.cache_ttl,
            allow_http,
        }
    }

    /// The token's claims when active, `None` when not.
    ///
    /// # Errors
    ///
    /// The endpoint failed or answered something other than an
    /// introspection response (the text is for logs).
    pub(crate) async fn introspect(
        &self,
        http: &reqwest::Client,
        token: &str,
    ) -> Result<Option<Map<String, Value>>, String> {
        check_url(&self.endpoint, self.allow_http)?;
        let form = Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let res = http
            .post(self.endpoint.clone())
            .header(http::header::AUTHORIZATION, self.basic.expose())
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(form)
            .send()
            .await
            .map_err(|e| format!("introspection: {e}"))?;
        let status = res.status();
        if !status.is_success() {
            return Err(format!("introspection: HTTP {status}"));
        }
        let body = read_body(res).await?;
        let claims: Map<String, Value> =
            serde_json::from_slice(&body).map_err(|e| format!("introspection: invalid JSON: {e}"))?;
        match claims.get("active") {
            Some(Value::Bool(true)) => Ok(Some(claims)),
            Some(Value::Bool(false)) => Ok(None),
            _ => Err("introspection: the answer has no boolean `active`".into()),
        }
    }
}

/// `Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1).
pub(crate) fn basic_auth(client_id: &str, secret: &[u8]) -> Secret {
    let mut pair: String = byte_serialize(client_id.as_bytes()).collect();
    pair.push(':');
    pair.extend(byte_serialize(secret));
    Secret::new(format!("Basic {}", STANDARD.encode(pair)).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        let b = basic_auth("gw client", b"s:e/cret");
        let text = String::from_utf8(b.expose().to_vec()).unwrap();
        let decoded = STANDARD.decode(text.strip_prefix("Basic ").unwrap()).unwrap();
        assert_eq!(decoded, b"gw+client:s%3Ae%2Fcret");
    }
}
