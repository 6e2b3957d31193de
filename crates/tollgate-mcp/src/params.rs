//! Tool arguments mirrored in headers (2026-07-28): a tool's `inputSchema`
//! property annotated `"x-mcp-header": "Name"` must travel as the
//! `Mcp-Param-Name` header too, and a server (or gateway) that reads the
//! body must refuse a header that is missing, malformed or disagrees with
//! the body's argument (400, `-32020`).
//!
//! The catalog gate reads the annotations from the approved definition
//! ([`param_headers`]), checks the request's headers against them
//! ([`check_params`]) and hands only the checked values to the policies.

use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::headers::{PARAM_PREFIX, decode_header_value};
use crate::{McpError, Result};

/// The type of a mirrored argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ParamKind {
    /// A string, sent as is (or sentinel-encoded).
    String,
    /// An integer within ±(2^53 − 1), sent in decimal.
    Integer,
    /// `true` or `false`.
    Boolean,
}

/// One argument a tool mirrors in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The header's name after `Mcp-Param-`, lowercase.
    pub header: String,
    /// The argument's name in `params.arguments`.
    pub argument: String,
    /// Its type.
    pub kind: ParamKind,
}

/// The mirrored arguments an `inputSchema` declares. Annotations the
/// specification does not allow (not a token, on a non-primitive property)
/// are left out, and a header name claimed by two properties (ignoring
/// case) is ambiguous: neither is kept.
pub fn param_headers(input_schema: &Value) -> Vec<ParamHeader> {
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<ParamHeader> = Vec::new();
    let mut claimed: Vec<String> = Vec::new();
    for (argument, schema) in props {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let kind = match schema.get("type").and_then(Value::as_str) {
            Some("string") => ParamKind::String,
            Some("integer") => ParamKind::Integer,
            Some("boolean") => ParamKind::Boolean,
            _ => continue,
        };
        if !is_token(name) {
            continue;
        }
        let header = name.to_ascii_lowercase();
        claimed.push(header.clone());
        out.push(ParamHeader {
            header,
            argument: argument.clone(),
            kind,
        });
    }
    out.retain(|p| claimed.iter().filter(|c| **c == p.header).count() == 1);
    out
}

/// An RFC 9110 token.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

/// The `params.arguments` of a single JSON-RPC message (read only when a
/// tool mirrors arguments in headers and the route verifies the body).
///
/// # Errors
///
/// `ParseError` when the body is not JSON.
pub fn tool_arguments(body: &[u8]) -> Result<Map<String, Value>> {
    let parsed: Body =
        serde_json::from_slice(body).map_err(|_| McpError::new(tollgate_core::ErrorKind::ParseError, "Parse error"))?;
    Ok(parsed.params.and_then(|p| p.arguments).unwrap_or_default())
}

/// Check the `Mcp-Param-*` headers of a call against the mirrored
/// arguments it declares; with `body` (a verified route), each header must
/// also equal the body's argument. The checked values, by header name.
///
/// # Errors
///
/// `header_mismatch` (`-32020`) for a header that is missing, malformed,
/// of the wrong type, or disagrees with the body.
pub fn check_params(
    declared: &[ParamHeader],
    headers: &HeaderMap,
    body: Option<&Map<String, Value>>,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::with_capacity(declared.len());
    for p in declared {
        let name = format!("{PARAM_PREFIX}{}", p.header);
        let sent = match headers.get(&name) {
            None => None,
            Some(v) => {
                let text = v.to_str().map_err(|_| mismatch(&name, "has invalid characters"))?;
                Some(decode_header_value(text.trim())?)
            }
        };
        if let Some(value) = &sent {
            check_kind(p.kind, value).map_err(|why| mismatch(&name, why))?;
        }
        if let Some(args) = body {
            agree(p, sent.as_deref(), args.get(&p.argument)).map_err(|why| mismatch(&name, why))?;
        }
        if let Some(value) = sent {
            out.push((p.header.clone(), value));
        }
    }
    Ok(out)
}

fn mismatch(name: &str, why: &str) -> McpError {
    McpError::header(format!("Header mismatch: {name} {why}"))
}

/// Whether a header value has the declared type.
fn check_kind(kind: ParamKind, value: &str) -> std::result::Result<(), &'static str> {
    const MAX_SAFE: i64 = (1 << 53) - 1;
    match kind {
        ParamKind::String => Ok(()),
        ParamKind::Integer => match value.parse::<i64>() {
            Ok(n) if n.abs() <= MAX_SAFE => Ok(()),
            _ => Err("is not an integer"),
        },
        ParamKind::Boolean if matches!(value, "true" | "false") => Ok(()),
        ParamKind::Boolean => Err("is not true or false"),
    }
}

/// Whether a header agrees with the body's argument.
fn agree(p: &ParamHeader, sent: Option<&str>, arg: Option<&Value>) -> std::result::Result<(), &'static str> {
    let arg = arg.filter(|v| !v.is_null());
    match (sent, arg) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err("is required: the body carries the argument"),
        (Some(_), None) => Err("disagrees with the body: the argument is absent"),
        (Some(s), Some(v)) => {
            let equal = match (p.kind, v) {
                (ParamKind::String, Value::String(b)) => s == b,
                (ParamKind::Integer, Value::Number(n)) => n.as_i64().is_some_and(|n| s.parse::<i64>() == Ok(n)),
                (ParamKind::Boolean, Value::Bool(b)) => s.parse::<bool>() == Ok(*b),
                _ => false,
            };
            if equal { Ok(()) } else { Err("disagrees with the body") }
        }
    }
}

#[cfg(test)]
mod tests;
