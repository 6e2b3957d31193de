//! `tool_reference` and `server_reference`: a definition that names another
//! tool or server is how shadowing works ("when the mail server's
//! send_email is used, also…"), but honest definitions name their sibling
//! tools all the time ("call list_allowed_directories first"), so these
//! are info; `shadowing` reads what the text does with the name.
//! Identifier-like names (`send_email`, `getUser`, `db2`) count wherever
//! they stand as a whole word; names that are plain words (`search`,
//! `time`) only when quoted (`` `time` ``, `"time"`, but not `'notes'
//! argument`) or followed by "tool", "server", "mcp" or "function", so that
//! ordinary prose does not count — and not after "this", "a" or "our" ("this
//! demo server" describes the definition's own server, whatever another
//! route is called).

use super::context::CheckContext;
use super::finding::{Check, Hit, Severity};

pub(super) fn scan(text: &str, own: &str, context: &CheckContext, hits: &mut Vec<Hit>) {
    let lower = text.to_ascii_lowercase();
    let tools = context.tools.iter().chain(&context.other_tools);
    for name in tools.filter(|n| n.as_str() != own) {
        find(&lower, name, Check::ToolReference, hits);
    }
    for name in &context.other_servers {
        find(&lower, name, Check::ServerReference, hits);
    }
}

fn find(lower: &str, name: &str, check: Check, hits: &mut Vec<Hit>) {
    if name.chars().count() < 2 {
        return;
    }
    let identifier = is_identifier_like(name);
    let needle = name.to_ascii_lowercase();
    for (at, _) in lower.match_indices(&needle) {
        let end = at + needle.len();
        let before = lower[..at].chars().next_back();
        let after = lower[end..].chars().next();
        if before.is_some_and(is_word_char) || after.is_some_and(is_word_char) {
            continue;
        }
        let rest = &lower[end..];
        let quoted = is_quoted(before, after)
            && !matches!(
                next_word(&rest[1..]).as_str(),
                "argument" | "parameter" | "field" | "property" | "key"
            );
        let marked = matches!(
            next_word(rest).as_str(),
            "tool" | "tools" | "server" | "servers" | "mcp" | "function"
        );
        let counted = identifier || quoted || (marked && !describes_itself(&lower[..at]));
        let known = hits.iter().any(|h| h.check == check && h.start == at);
        if counted && !known {
            let reason = match check {
                Check::ServerReference => "names another configured server",
                _ => "names another tool",
            };
            hits.push(Hit::new(check, Severity::Info, reason, at, end));
        }
    }
}

/// Whether the word before a plain-word name makes it a description ("this
/// demo server", "a weather tool") rather than a name.
fn describes_itself(before: &str) -> bool {
    let before = before.trim_end();
    let start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric())
        .last()
        .map_or(before.len(), |(i, _)| i);
    matches!(
        &before[start..],
        "this" | "a" | "an" | "our" | "my" | "your" | "each" | "every" | "any" | "same"
    )
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A name no one writes in prose by chance: with `_`, `-`, `.`, `/`, a
/// digit, or an upper-case letter after the first character.
fn is_identifier_like(name: &str) -> bool {
    name.chars()
        .any(|c| matches!(c, '_' | '-' | '.' | '/' | ':') || c.is_ascii_digit())
        || name.chars().skip(1).any(char::is_uppercase)
}

fn is_quoted(before: Option<char>, after: Option<char>) -> bool {
    let quote = |c: Option<char>| matches!(c, Some('`' | '"' | '\'' | '“' | '”' | '‘' | '’'));
    quote(before) && quote(after)
}

/// The word after `rest`'s leading white space (and a possessive `'s`).
fn next_word(rest: &str) -> String {
    let rest = rest
        .strip_prefix("'s")
        .or_else(|| rest.strip_prefix("’s"))
        .unwrap_or(rest);
    rest.trim_start().chars().take_while(|c| c.is_alphanumeric()).collect()
}
