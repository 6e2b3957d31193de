//! Keeping configured values out of what Tollgate shows: upstream URLs as
//! they may be displayed and recorded, and deserializer messages without
//! the value they complain about.
//!
//! A configuration value may hold a secret by mistake or by design (an API
//! key in a URL's query string, a password pasted into the wrong key).
//! Errors therefore name the file, line and key, never the value; pages,
//! logs and audit records show an upstream URL without its query.

use url::Url;

/// What replaces a hidden value.
pub const REDACTED: &str = "<redacted>";

/// `url` as Tollgate shows and records it: without user name, password and
/// fragment, and with a query string replaced by `?<redacted>` (a query may
/// carry an API key).
#[must_use]
pub fn redact_url(url: &Url) -> String {
    let mut shown = url.clone();
    // Both fail only for URLs that cannot have credentials (`mailto:`).
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    let mut text = shown.to_string();
    if url.query().is_some() {
        text.push('?');
        text.push_str(REDACTED);
    }
    text
}

/// Whether `url` names a user or password (`https://user:pass@host/`).
pub(crate) fn has_userinfo(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// Words after which serde writes the offending value in backquotes
/// (``unknown variant `x` ``, ``invalid type: integer `5` ``); other
/// backquoted text (``unknown field `x` ``, key names in our own messages)
/// names keys and stays.
const BEFORE_VALUE: [&str; 5] = ["variant ", "integer ", "floating point ", "boolean ", "character "];

/// A parser's or deserializer's message without the configuration value
/// it quotes. serde writes the offending value into its messages
/// (`invalid value: string "https://user:secret@…", expected …`,
/// ``unknown variant `x`, expected …``): before `expected`, every
/// double-quoted text and every backquoted value becomes `<redacted>`.
/// What follows `expected` comes from the schema, not the file, and stays.
pub(crate) fn scrub(message: &str) -> String {
    let (head, tail) = match message.find("expected") {
        Some(at) => message.split_at(at),
        None => (message, ""),
    };
    let mut out = String::with_capacity(message.len());
    let mut rest = head;
    while let Some(open) = rest.find(['"', '`']) {
        let (before, quoted) = rest.split_at(open);
        out.push_str(before);
        let Some(len) = quoted_len(quoted) else {
            // An unterminated quote: hide everything after it.
            out.push_str(REDACTED);
            rest = "";
            break;
        };
        let is_name = quoted.starts_with('`') && !BEFORE_VALUE.iter().any(|w| before.ends_with(w));
        out.push_str(if is_name { &quoted[..len] } else { REDACTED });
        rest = &quoted[len..];
    }
    out.push_str(rest);
    out.push_str(tail);
    out
}

/// The length of the quoted text at the start of `s` (opening quote,
/// content with backslash escapes, closing quote), `None` when unclosed.
fn quoted_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let quote = *bytes.first()?;
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b if b == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn shown_urls_lose_credentials_query_and_fragment() {
        assert_eq!(
            redact_url(&url("https://u:p@mcp.example.com:8443/v1/mcp?api_key=k&x=1#f")),
            "https://mcp.example.com:8443/v1/mcp?<redacted>"
        );
        assert_eq!(
            redact_url(&url("http://127.0.0.1:3001/mcp")),
            "http://127.0.0.1:3001/mcp"
        );
        assert_eq!(redact_url(&url("http://h/mcp?")), "http://h/mcp?<redacted>");
        assert!(has_userinfo(&url("https://user@h/")));
        assert!(has_userinfo(&url("https://:pw@h/")));
        assert!(!has_userinfo(&url("https://h/?user=x")));
    }

    #[test]
    fn scrubbed_messages_keep_keys_and_expectations_but_no_value() {
        assert_eq!(
            scrub(r#"invalid value: string "https://u:s\"x@h:99999/", expected relative URL without a base"#),
            "invalid value: string <redacted>, expected relative URL without a base"
        );
        assert_eq!(
            scrub("unknown variant `secret`, expected `verify` or `upstream`"),
            "unknown variant <redacted>, expected `verify` or `upstream`"
        );
        assert_eq!(
            scrub("unknown field `colour`, expected one of `name`, `url`"),
            "unknown field `colour`, expected one of `name`, `url`"
        );
        assert_eq!(
            scrub("invalid type: integer `123456`, expected a string"),
            "invalid type: integer <redacted>, expected a string"
        );
        assert_eq!(scrub("duplicate key `name`"), "duplicate key `name`");
        assert_eq!(
            scrub("a name, or a table with `issuer` and `subject`"),
            "a name, or a table with `issuer` and `subject`"
        );
        assert_eq!(
            scrub("invalid server name \"x y\": use 1 to 64 of A-Z"),
            "invalid server name <redacted>: use 1 to 64 of A-Z"
        );
        assert_eq!(
            scrub(r#"unknown time unit "xyz" in "5xyz"#),
            "unknown time unit <redacted> in <redacted>"
        );
        assert_eq!(scrub("must be greater than 0"), "must be greater than 0");
    }
}
