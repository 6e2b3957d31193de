//! What a legacy `initialize` request declares that the gateway itself
//! acts on: whether the client takes URL-mode elicitation requests
//! (`params.capabilities.elicitation.url`, MCP 2025-11-25). Read once per
//! session, from the body the scan already read.

use serde::Deserialize;
use serde::de::IgnoredAny;

#[derive(Deserialize)]
struct Request {
    params: Params,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    capabilities: Capabilities,
}

#[derive(Deserialize, Default)]
struct Capabilities {
    #[serde(default)]
    elicitation: Option<Elicitation>,
}

#[derive(Deserialize)]
struct Elicitation {
    #[serde(default)]
    url: Option<IgnoredAny>,
}

/// Whether an `initialize` body declares URL-mode elicitation.
pub fn declares_url_elicitation(body: &[u8]) -> bool {
    serde_json::from_slice::<Request>(body)
        .ok()
        .and_then(|r| r.params.capabilities.elicitation)
        .is_some_and(|e| e.url.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_url_mode_capability_only() {
        let with = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"c","version":"1"}}}"#;
        assert!(declares_url_elicitation(with));
        let form_only =
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{}}}}"#;
        assert!(!declares_url_elicitation(form_only));
        assert!(!declares_url_elicitation(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#
        ));
        assert!(!declares_url_elicitation(b"[]"));
    }
}
