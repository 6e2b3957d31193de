//! The MCP standard request headers (2026-07-28) and their value encoding.
//!
//! Header names compare case-insensitively (the `http` crate lower-cases
//! them); values compare case-sensitively after trimming optional white
//! space. `Mcp-Name` and `Mcp-Param-*` values may carry the
//! `=?base64?<standard padded base64 of UTF-8>?=` sentinel, which is decoded
//! before any comparison, policy match or metering key.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};
use smol_str::SmolStr;

use crate::{McpError, ProtocolVersion, Result};

// Header names are constants, not strings: looking a header up by a
// `&str` parses and classifies the name on every call.

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub const METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub const NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `Mcp-Session-Id` (legacy eras only).
pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// Prefix of the tool-argument headers.
pub const PARAM_PREFIX: &str = "mcp-param-";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// The standard headers of one request, read but not yet checked against the
/// body. A header that is present but unreadable is kept as an error so the
/// caller can decide whether it matters for this era.
#[derive(Debug, Default)]
pub struct StandardHeaders {
    /// `MCP-Protocol-Version`: absent, a known revision, or the unknown text.
    pub version: Option<std::result::Result<ProtocolVersion, String>>,
    /// `Mcp-Method`, trimmed.
    pub method: Option<Result<SmolStr>>,
    /// `Mcp-Name`, trimmed and sentinel-decoded.
    pub name: Option<Result<SmolStr>>,
}

impl StandardHeaders {
    /// Read the standard headers. Repeated headers are an error: a
    /// disagreement between two copies must not be resolved by guessing.
    pub fn read(headers: &HeaderMap) -> StandardHeaders {
        let version = single(headers, PROTOCOL_VERSION).map(|v| {
            let text = v.map_err(|e| e.message)?;
            ProtocolVersion::parse(text).ok_or_else(|| text.to_owned())
        });
        let method = single(headers, METHOD).map(|v| v.and_then(check_method));
        let name = single(headers, NAME).map(|v| v.and_then(|s| decode(s).map(SmolStr::new)));
        StandardHeaders { version, method, name }
    }
}

fn single(headers: &HeaderMap, name: HeaderName) -> Option<Result<&str>> {
    let mut all = headers.get_all(&name).iter();
    let first = all.next()?;
    if all.next().is_some() {
        return Some(Err(McpError::header(format!("Header mismatch: {name} is repeated"))));
    }
    Some(plain_value(first.as_bytes(), name.as_str()))
}

/// Trim optional white space and reject anything that is not visible ASCII
/// or an inner space.
fn plain_value<'h>(raw: &'h [u8], name: &str) -> Result<&'h str> {
    let trimmed = raw.trim_ascii();
    let invalid = || McpError::header(format!("Header mismatch: {name} has invalid characters"));
    if trimmed.iter().any(|b| !(0x20..0x7f).contains(b)) {
        return Err(invalid());
    }
    // Visible ASCII is valid UTF-8.
    std::str::from_utf8(trimmed).map_err(|_| invalid())
}

fn check_method(method: &str) -> Result<SmolStr> {
    if method.is_empty() || method.contains(' ') {
        return Err(McpError::header("Header mismatch: Mcp-Method is malformed"));
    }
    Ok(SmolStr::new(method))
}

/// Decode an `Mcp-Name` / `Mcp-Param-*` value that has already been trimmed.
///
/// Only the exact lowercase sentinel with its suffix is decoded; anything
/// else is a literal. Inside the sentinel, the payload must be standard,
/// padded Base64 of valid UTF-8.
///
/// ```
/// use tollgate_mcp::decode_header_value;
///
/// assert_eq!(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(), "Hello, 世界");
/// assert_eq!(decode_header_value("plain-name").unwrap(), "plain-name");
/// assert!(decode_header_value("=?base64?not base64?=").is_err());
/// ```
///
/// # Errors
///
/// A `HeaderMismatch` error when the sentinel payload is not valid.
pub fn decode_header_value(value: &str) -> Result<String> {
    decode(value).map(Cow::into_owned)
}

/// The value of an `Mcp-Name` (or `Mcp-Param-*`) header that carries
/// `value`: as it is when it is visible ASCII with inner spaces only and
/// could not be read as the sentinel, otherwise sentinel-encoded (the
/// inverse of [`decode_header_value`]).
///
/// ```
/// use tollgate_mcp::{decode_header_value, encode_header_value};
///
/// assert_eq!(encode_header_value("echo"), "echo");
/// assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// for v in [" padded", "=?base64?eA==?=", "tab\there"] {
///     assert_eq!(decode_header_value(&encode_header_value(v)).unwrap(), v);
/// }
/// ```
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    let visible = value.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX);
    if visible && !padded && !sentinel {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}", STANDARD.encode(value)))
    }
}

/// [`decode_header_value`] without copying a literal.
fn decode(value: &str) -> Result<Cow<'_, str>> {
    let Some(inner) = value
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX))
    else {
        return Ok(Cow::Borrowed(value));
    };
    let bytes = STANDARD
        .decode(inner)
        .map_err(|_| McpError::header("Header mismatch: invalid base64 in header value"))?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| McpError::header("Header mismatch: base64 header value is not UTF-8"))
}

#[cfg(test)]
mod tests;
