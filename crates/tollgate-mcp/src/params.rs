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
    /// Where the argument is in `params.arguments`: the chain of
    /// `properties` keys from the schema's root (one key for a top-level
    /// argument).
    pub path: Vec<String>,
    /// Its type.
    pub kind: ParamKind,
}

impl ParamHeader {
    /// The argument's path, dotted (`filter.region`).
    pub fn argument(&self) -> String {
        self.path.join(".")
    }
}

/// The mirrored arguments an `inputSchema` declares, at any depth reached
/// through `properties` alone. Annotations the specification does not
/// allow (not a token, on a non-primitive property) are left out, and a
/// header name claimed by two properties (ignoring case) is ambiguous:
/// neither is kept.
pub fn param_headers(input_schema: &Value) -> Vec<ParamHeader> {
    let mut out: Vec<ParamHeader> = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut out);
    let claimed: Vec<String> = out.iter().map(|p| p.header.clone()).collect();
    out.retain(|p| claimed.iter().filter(|c| **c == p.header).count() == 1);
    out
}

/// The annotated properties under `schema`, whose path is `path`.
fn collect(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (argument, property) in props {
        path.push(argument.clone());
        if let Some(p) = annotated(property, path) {
            out.push(p);
        }
        collect(property, path, out);
        path.pop();
    }
}

/// The mirrored argument a property declares, if it validly does.
fn annotated(property: &Value, path: &[String]) -> Option<ParamHeader> {
    let name = property.get("x-mcp-header").and_then(Value::as_str)?;
    let kind = match property.get("type").and_then(Value::as_str) {
        Some("string") => ParamKind::String,
        Some("integer") => ParamKind::Integer,
        Some("boolean") => ParamKind::Boolean,
        _ => return None,
    };
    is_token(name).then(|| ParamHeader {
        header: name.to_ascii_lowercase(),
        path: path.to_vec(),
        kind,
    })
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
                Some(
                    decode_header_value(text.trim())
                        .map_err(|_| mismatch(&name, "is not valid sentinel-encoded base64 UTF-8"))?,
                )
            }
        };
        if let Some(value) = &sent {
            check_kind(p.kind, value).map_err(|why| mismatch(&name, why))?;
        }
        if let Some(args) = body {
            agree(p, sent.as_deref(), value_at(args, &p.path)).map_err(|why| mismatch(&name, why))?;
        }
        if let Some(value) = sent {
            out.push((p.header.clone(), value));
        }
    }
    Ok(out)
}

/// The argument at `path`, if every step is an object holding the next key.
fn value_at<'a>(args: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(args.get(first)?, |node, key| node.get(key))
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
                (ParamKind::Integer, Value::Number(n)) => same_number(s, n),
                (ParamKind::Boolean, Value::Bool(b)) => s.parse::<bool>() == Ok(*b),
                _ => false,
            };
            if equal { Ok(()) } else { Err("disagrees with the body") }
        }
    }
}

/// Whether an integer header equals the body's number, compared as
/// numbers (`42` equals `42` and `42.0`; `042` equals `42`).
fn same_number(sent: &str, body: &serde_json::Number) -> bool {
    let Ok(sent) = sent.parse::<i64>() else { return false };
    match body.as_i64() {
        Some(b) => b == sent,
        #[allow(clippy::cast_precision_loss, reason = "within ±(2^53 − 1), checked before")]
        None => body.as_f64().is_some_and(|b| b == sent as f64),
    }
}

#[cfg(test)]
mod tests;
