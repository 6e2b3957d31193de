//! JSON-RPC ids and error bodies.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use smol_str::SmolStr;

/// A JSON-RPC request id, kept as its exact JSON text so an error can echo it
/// byte for byte (string or number). The usual id (a number, a short
/// string) is held inline, so scanning and cloning one does not allocate.
#[derive(Debug, Clone)]
pub struct RequestId(SmolStr);

impl RequestId {
    /// Copy an id out of a scanned body.
    pub fn from_raw(raw: &RawValue) -> RequestId {
        RequestId(SmolStr::new(raw.get()))
    }

    /// The id as JSON text (e.g. `7` or `"abc"`).
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &RequestId) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for RequestId {}

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
    // The id is JSON text taken from a parsed body: it is written as is.
    let id = id.map_or("null", RequestId::as_json);
    let mut out = Vec::with_capacity(64 + id.len() + message.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","error":"#);
    // Serializing this plain struct cannot fail; fall back to a fixed body
    // rather than panicking on the request path.
    if serde_json::to_writer(&mut out, &ErrorObject { code, message, data }).is_err() {
        return Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#,
        );
    }
    out.push(b'}');
    Bytes::from(out)
}

/// Serialize a JSON-RPC result response: the gateway's own answer to a
/// request it does not forward (an MRTR `input_required` result).
///
/// `id` is echoed exactly, as in [`error_body`].
pub fn result_body(id: Option<&RequestId>, result: &Value) -> Bytes {
    let id = id.map_or("null", RequestId::as_json);
    let mut out = Vec::with_capacity(128 + id.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":"#);
    if serde_json::to_writer(&mut out, result).is_err() {
        return Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#,
        );
    }
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_ids_exactly() {
        let raw: Box<RawValue> = serde_json::from_str(r#""a\"b""#).unwrap();
        let id = RequestId::from_raw(&raw);
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
