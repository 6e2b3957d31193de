//! JSON-RPC ids and error bodies.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON-RPC request id, kept as its exact JSON text so an error can echo it
/// byte for byte (string or number).
#[derive(Debug, Clone)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// Copy an id out of a scanned body.
    pub fn from_raw(raw: &RawValue) -> RequestId {
        RequestId(raw.to_owned())
    }

    /// The id as JSON text (e.g. `7` or `"abc"`).
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &RequestId) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for RequestId {}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RawValue>,
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i32,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

/// Serialize a JSON-RPC error response.
///
/// `id` is echoed exactly; without one the body carries `"id": null`.
pub fn error_body(id: Option<&RequestId>, code: i32, message: &str, data: Option<&Value>) -> Bytes {
    let envelope = ErrorEnvelope {
        jsonrpc: "2.0",
        id: id.map(|id| id.0.as_ref()),
        error: ErrorObject { code, message, data },
    };
    // Serializing these plain structs cannot fail; fall back to a fixed body
    // rather than panicking on the request path.
    match serde_json::to_vec(&envelope) {
        Ok(v) => Bytes::from(v),
        Err(_) => {
            Bytes::from_static(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_ids_exactly() {
        let raw: Box<RawValue> = serde_json::from_str(r#""a\"b""#).unwrap();
        let id = RequestId(raw);
        let body = error_body(Some(&id), -32020, "Header mismatch", None);
        assert_eq!(
            &body[..],
            br#"{"jsonrpc":"2.0","id":"a\"b","error":{"code":-32020,"message":"Header mismatch"}}"#
        );
        let body = error_body(None, -32022, "x", Some(&serde_json::json!({"supported": []})));
        assert_eq!(
            &body[..],
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"x","data":{"supported":[]}}}"#
        );
    }
}
