//! Renaming the target (or the id) of one JSON-RPC message in place.
//!
//! A virtual server exposes a member's tool under another name
//! (`github_create_issue` for `create_issue`); the request it forwards must
//! carry the member's own name. The body is not rebuilt as a document: a
//! bounded parse borrows every value as raw JSON (nothing is copied or
//! built), finds the byte range of the string at a path such as
//! `params.name` or `params.ref.name`, and only that range is replaced.
//! Every other byte reaches the upstream as the client sent it.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::value::RawValue;
use tollgate_core::ErrorKind;

use crate::{McpError, Result};

/// The byte range, quotes included, of the JSON string at `path` in a
/// single JSON-RPC message `body` (for example `["params", "name"]`).
///
/// ```
/// use tollgate_mcp::splice::locate;
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x_echo","arguments":{}}}"#;
/// let at = locate(body, &["params", "name"]).unwrap().unwrap();
/// assert_eq!(&body[at], br#""x_echo""#);
/// ```
///
/// # Errors
///
/// `ParseError` when the body is not JSON; `Ok(None)` when the path does
/// not lead to a string.
pub fn locate(body: &[u8], path: &[&str]) -> Result<Option<Range<usize>>> {
    Ok(locate_value(body, path)?.filter(|at| body.get(at.start) == Some(&b'"')))
}

/// The byte range of the JSON value of any type at `path` (for example
/// `["id"]`, a string or a number).
///
/// # Errors
///
/// `ParseError` when the body is not JSON; `Ok(None)` when nothing is at
/// `path`.
pub fn locate_value(body: &[u8], path: &[&str]) -> Result<Option<Range<usize>>> {
    let text = std::str::from_utf8(body).map_err(|_| parse_error())?;
    let mut node: &RawValue = serde_json::from_str(text).map_err(|_| parse_error())?;
    for key in path {
        let Some(next) = member(node, key)? else {
            return Ok(None);
        };
        node = next;
    }
    let raw = node.get();
    let start = raw.as_ptr() as usize - text.as_ptr() as usize;
    Ok(Some(start..start + raw.len()))
}

/// `body` with the JSON value at `path` replaced by `raw`, which must be
/// JSON text (the caller's responsibility: it is copied as is).
///
/// ```
/// use tollgate_mcp::splice::replace_raw;
///
/// let body = br#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}"#;
/// let out = replace_raw(body, &["id"], r#""m.7""#).unwrap();
/// assert_eq!(out, br#"{"jsonrpc":"2.0","id":"m.7","method":"sampling/createMessage"}"#);
/// ```
///
/// # Errors
///
/// `ParseError` when the body is not JSON; `InvalidRequest` when nothing
/// is at `path`.
pub fn replace_raw(body: &[u8], path: &[&str], raw: &str) -> Result<Vec<u8>> {
    let at = locate_value(body, path)?.ok_or_else(|| {
        McpError::new(
            ErrorKind::InvalidRequest,
            format!("Invalid Request: no {}", path.join(".")),
        )
    })?;
    Ok(spliced(body, at, raw))
}

fn spliced(body: &[u8], at: Range<usize>, raw: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + raw.len());
    out.extend_from_slice(&body[..at.start]);
    out.extend_from_slice(raw.as_bytes());
    out.extend_from_slice(&body[at.end..]);
    out
}

/// `body` with the JSON string at `path` replaced by `value` (encoded as
/// a JSON string).
///
/// ```
/// use tollgate_mcp::splice::replace;
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x_echo","arguments":{"a":1}}}"#;
/// let out = replace(body, &["params", "name"], "echo").unwrap();
/// assert_eq!(out, br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}"#);
/// ```
///
/// # Errors
///
/// `ParseError` when the body is not JSON; `InvalidRequest` when the path
/// does not lead to a string.
pub fn replace(body: &[u8], path: &[&str], value: &str) -> Result<Vec<u8>> {
    let Some(at) = locate(body, path)? else {
        return Err(McpError::new(
            ErrorKind::InvalidRequest,
            format!("Invalid params: {} is not a string", path.join(".")),
        ));
    };
    let encoded = serde_json::to_string(value).map_err(|_| parse_error())?;
    Ok(spliced(body, at, &encoded))
}

/// The value of `key` in the object `node`, if it is an object holding it.
fn member<'a>(node: &'a RawValue, key: &str) -> Result<Option<&'a RawValue>> {
    if !node.get().starts_with('{') {
        return Ok(None);
    }
    let object: HashMap<std::borrow::Cow<'a, str>, &'a RawValue> =
        serde_json::from_str(node.get()).map_err(|_| parse_error())?;
    Ok(object.get(key).copied())
}

fn parse_error() -> McpError {
    McpError::new(ErrorKind::ParseError, "Parse error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_paths_escapes_and_whitespace_are_handled() {
        let body = br#" { "id" : 7, "params" : { "ref" : { "type":"ref/prompt", "name" : "a\"b" } } } "#;
        let at = locate(body, &["params", "ref", "name"]).unwrap().unwrap();
        assert_eq!(&body[at], br#""a\"b""#);
        let out = replace(body, &["params", "ref", "name"], "greet\u{e9}").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["params"]["ref"]["name"], "greet\u{e9}");
        assert_eq!(v["id"], 7);
    }

    #[test]
    fn missing_or_non_string_targets_are_not_found() {
        let body = br#"{"params":{"name":5}}"#;
        assert_eq!(locate(body, &["params", "name"]).unwrap(), None);
        assert_eq!(locate(body, &["params", "uri"]).unwrap(), None);
        assert_eq!(locate(br#"[1]"#, &["params"]).unwrap(), None);
        assert!(locate(b"{", &["params"]).is_err());
        assert!(replace(body, &["params", "name"], "x").is_err());
    }

    #[test]
    fn raw_values_of_any_type_are_replaced() {
        let body = br#"{"id": 12 ,"result":{}}"#;
        assert_eq!(locate_value(body, &["id"]).unwrap(), Some(7..9));
        assert_eq!(
            replace_raw(body, &["id"], "\"a\"").unwrap(),
            br#"{"id": "a" ,"result":{}}"#
        );
        assert!(replace_raw(body, &["error"], "1").is_err());
    }
}
