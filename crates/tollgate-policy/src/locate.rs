//! Turning Cedar's diagnostics and byte offsets into file:line:column, and
//! finding where each policy of a file starts.
//!
//! Used while loading a policy set (start, reload, `tollgate policy
//! validate`); never on the request path.

use std::path::Path;

use miette::Diagnostic;

use crate::error::SourceError;

/// 1-based line and column of a byte offset in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, col)
}

/// Every problem a Cedar diagnostic reports (itself and its related
/// diagnostics), located in `text`, the contents of `file`.
pub(crate) fn diagnostics(file: &Path, text: &str, d: &dyn Diagnostic) -> Vec<SourceError> {
    let mut out = Vec::new();
    collect(file, text, d, &mut out);
    out
}

fn collect(file: &Path, text: &str, d: &dyn Diagnostic, out: &mut Vec<SourceError>) {
    let mut message = d.to_string();
    if let Some(help) = d.help() {
        message.push_str(&format!(" ({help})"));
    }
    let offset = d.labels().and_then(|mut l| l.next()).map(|l| l.offset());
    out.push(SourceError::new(file, message).at(offset.map(|o| line_col(text, o))));
    if let Some(related) = d.related() {
        for r in related {
            collect(file, text, r, out);
        }
    }
}

/// The byte offset where each policy of a Cedar file starts (its first
/// annotation or its effect keyword), in order: policies end at a `;`
/// outside strings and comments, and Cedar has no other `;`.
pub(crate) fn policy_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = Vec::new();
    let mut in_policy = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b if b.is_ascii_whitespace() => {}
            b';' => in_policy = false,
            b => {
                if !in_policy {
                    starts.push(i);
                    in_policy = true;
                }
                if b == b'"' {
                    i = skip_string(bytes, i + 1);
                    continue;
                }
            }
        }
        i += 1;
    }
    starts
}

/// The index just past the string literal whose contents start at `i`.
fn skip_string(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_are_one_based() {
        let text = "ab\ncd\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 4), (2, 2));
        assert_eq!(line_col(text, 99), (3, 1));
        assert_eq!(line_col("é", 1), (1, 1));
    }

    #[test]
    fn policy_starts_skip_comments_and_strings() {
        let text = r#"// a comment; with a semicolon
@id("one;")
permit (principal, action, resource)
when { resource.name == "a;b\";" };

  forbid (principal, action, resource); // trailing; comment
"#;
        let starts = policy_starts(text);
        assert_eq!(starts.len(), 2);
        assert_eq!(line_col(text, starts[0]), (2, 1));
        assert_eq!(line_col(text, starts[1]), (6, 3));
        assert!(policy_starts("// only a comment\n").is_empty());
    }
}
