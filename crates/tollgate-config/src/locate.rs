//! Map key paths and byte offsets in a TOML document to lines and columns.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Render a path as `servers[0].url`.
pub(crate) fn render(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The span of the value at `path`, or of the deepest prefix that exists.
pub(crate) fn span_of(root: &Spanned<DeTable<'_>>, path: &[Seg]) -> Option<Range<usize>> {
    let mut span = root.span();
    let mut value: Option<&DeValue<'_>> = None;
    let mut table = Some(root.get_ref());
    for seg in path {
        let next = match (seg, table, value) {
            (Seg::Key(k), Some(t), _) => t
                .iter()
                .find(|(key, _)| key.get_ref().as_ref() == k)
                .map(|(key, v)| (key.span(), v)),
            (Seg::Index(i), _, Some(DeValue::Array(a))) => a.get(*i).map(|v| (v.span(), v)),
            _ => None,
        };
        let Some((key_span, v)) = next else { break };
        span = if matches!(seg, Seg::Key(_)) { key_span } else { v.span() };
        value = Some(v.get_ref());
        table = match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    Some(span)
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, col)
}
