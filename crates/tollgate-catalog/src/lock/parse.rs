//! Reading `catalog.lock` text into a [`Lock`], collecting every problem
//! with its line, column and key instead of stopping at the first: a
//! reviewer fixing a refused lock sees the whole list at once.
//!
//! The TOML is parsed into spanned values (`toml::de::DeTable`) and walked
//! by hand, so that unknown, missing and ill-typed keys are all reported
//! and an error inside a definition's JSON points at the file line it is on.

use std::collections::HashMap;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Approval, Lock, LockError, LockErrors};
use crate::definition::{Kind, Revision};

/// The keys of an `[[approval]]` table, in the order they are written.
const KEYS: [&str; 8] = [
    "server",
    "kind",
    "name",
    "revision",
    "approved_by",
    "approved_at",
    "note",
    "definition",
];

pub(super) fn parse(path: &Path, text: &str) -> Result<Lock, LockErrors> {
    let mut report = Report {
        path,
        text,
        errors: Vec::new(),
    };
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        Err(e) => {
            report.push(e.span().map_or(0, |s| s.start), String::new(), e.message());
            return report.finish(Lock::default());
        }
    };
    let mut lock = Lock::default();
    let mut seen: HashMap<(String, Kind, String), usize> = HashMap::new();
    for (key, value) in root.get_ref() {
        if key.get_ref() != "approval" {
            let message = "unknown key: a lock file holds only [[approval]] tables";
            report.push(key.span().start, key.get_ref().to_string(), message);
            continue;
        }
        let Some(items) = value.get_ref().as_array() else {
            let message = "must be an array of tables: write each entry under [[approval]]";
            report.push(value.span().start, "approval".into(), message);
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let Some(approval) = entry(&mut report, i, item) else {
                continue;
            };
            let at = item.span().start;
            let id = (approval.server.clone(), approval.kind, approval.key.clone());
            if let Some(first) = seen.get(&id) {
                let (kind, name, server) = (approval.kind, &approval.key, &approval.server);
                let message =
                    format!("duplicate approval of {kind} {name:?} of server {server:?} (first at line {first})");
                report.push(at, format!("approval[{i}]"), message);
                continue;
            }
            seen.insert(id, report.line_col(at).0);
            lock.insert(approval);
        }
    }
    report.finish(lock)
}

/// The problems found so far, located in `text`.
struct Report<'a> {
    path: &'a Path,
    text: &'a str,
    errors: Vec<LockError>,
}

impl Report<'_> {
    fn push(&mut self, at: usize, key: String, message: impl Into<String>) {
        let (line, column) = self.line_col(at);
        self.errors.push(LockError {
            file: self.path.to_owned(),
            line,
            column,
            key,
            message: message.into(),
        });
    }

    /// 1-based line and column (in characters) of a byte offset.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line_start = before.rfind('\n').map_or(0, |nl| nl + 1);
        (
            before.matches('\n').count() + 1,
            before[line_start..].chars().count() + 1,
        )
    }

    fn finish<T>(mut self, value: T) -> Result<T, LockErrors> {
        if self.errors.is_empty() {
            return Ok(value);
        }
        self.errors.sort_by_key(|e| (e.line, e.column));
        Err(LockErrors(self.errors))
    }
}

type Field<'t> = &'t Spanned<DeValue<'t>>;

/// One `[[approval]]` table being read.
struct Entry<'r, 'a, 't> {
    report: &'r mut Report<'a>,
    /// `approval[i]`.
    path: String,
    /// Where the table starts (its header).
    header: usize,
    /// The values of [`KEYS`], by index.
    fields: [Option<Field<'t>>; 8],
}

fn entry<'t>(report: &mut Report<'_>, i: usize, item: Field<'t>) -> Option<Approval> {
    let path = format!("approval[{i}]");
    let Some(table) = item.get_ref().as_table() else {
        report.push(
            item.span().start,
            path,
            "must be a table: write the entry under [[approval]]",
        );
        return None;
    };
    let fields = known_fields(report, &path, table);
    let mut e = Entry {
        report,
        path,
        header: item.span().start,
        fields,
    };
    let server = e
        .text("server", true)
        .and_then(|(s, at)| e.ok("server", at, server_name(s)));
    let kind = e.text("kind", true).and_then(|(s, at)| e.ok("kind", at, kind_named(s)));
    let key = e.text("name", true).and_then(|(s, at)| e.ok("name", at, non_empty(s)));
    let revision = e
        .text("revision", true)
        .and_then(|(s, at)| e.ok("revision", at, revision(s)));
    let approved_by = e
        .text("approved_by", true)
        .and_then(|(s, at)| e.ok("approved_by", at, non_empty(s)));
    let approved_at = e.time();
    let note = e.text("note", false).map(|(s, _)| s.to_owned());
    let definition = e.definition(kind, key.as_deref(), revision.as_ref());
    Some(Approval {
        server: server?,
        kind: kind?,
        key: key?,
        revision: revision?,
        approved_by: approved_by?,
        approved_at: approved_at?,
        note,
        definition: definition?,
    })
}

/// The values of the [`KEYS`] in `table`; other keys are reported.
fn known_fields<'t>(report: &mut Report<'_>, path: &str, table: &'t DeTable<'t>) -> [Option<Field<'t>>; 8] {
    let mut fields = [None; 8];
    for (k, v) in table {
        match KEYS.iter().position(|name| k.get_ref() == *name) {
            Some(n) => fields[n] = Some(v),
            None => {
                let message = format!("unknown key; expected one of {}", KEYS.join(", "));
                report.push(k.span().start, format!("{path}.{}", k.get_ref()), message);
            }
        }
    }
    fields
}

impl<'t> Entry<'_, '_, 't> {
    fn fail(&mut self, key: &str, at: usize, message: impl Into<String>) {
        let path = format!("{}.{key}", self.path);
        self.report.push(at, path, message);
    }

    fn ok<T>(&mut self, key: &str, at: usize, result: Result<T, String>) -> Option<T> {
        result.map_err(|message| self.fail(key, at, message)).ok()
    }

    /// The value of `key`; a missing required key is reported.
    fn field(&mut self, key: &str, required: bool) -> Option<Field<'t>> {
        let n = KEYS.iter().position(|name| *name == key)?;
        let field = self.fields[n];
        if field.is_none() && required {
            let header = self.header;
            self.fail(key, header, format!("missing key `{key}`"));
        }
        field
    }

    /// The string value of `key` and where it starts.
    fn text(&mut self, key: &str, required: bool) -> Option<(&'t str, usize)> {
        let field = self.field(key, required)?;
        match field.get_ref() {
            DeValue::String(s) => Some((s.as_ref(), field.span().start)),
            other => {
                let message = format!("must be a string, not {}", other.type_str());
                self.fail(key, field.span().start, message);
                None
            }
        }
    }

    /// `approved_at`: an RFC 3339 UTC time, quoted (as written) or a TOML
    /// date-time.
    fn time(&mut self) -> Option<SystemTime> {
        let field = self.field("approved_at", true)?;
        let at = field.span().start;
        let text = match field.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Datetime(d) => d.to_string(),
            other => {
                let message = format!("must be a string, not {}", other.type_str());
                self.fail("approved_at", at, message);
                return None;
            }
        };
        let parsed = humantime::parse_rfc3339(&text)
            .map_err(|e| format!("not an RFC 3339 UTC time such as \"2026-12-03T14:00:00Z\": {e}"));
        self.ok("approved_at", at, parsed)
    }

    /// `definition`: a JSON object naming itself `key` whose revision is
    /// `revision` (each compared only when it was read without error).
    fn definition(&mut self, kind: Option<Kind>, key: Option<&str>, revision: Option<&Revision>) -> Option<Value> {
        let (text, at) = self.text("definition", true)?;
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) => {
                let pos = self.json_position(at, text, e.line(), e.column());
                self.fail("definition", pos, format!("not JSON: {e}"));
                return None;
            }
        };
        if !value.is_object() {
            self.fail(
                "definition",
                at,
                "must be a JSON object: the definition as the server lists it",
            );
            return None;
        }
        if let (Some(kind), Some(key)) = (kind, key) {
            let field = kind.key_field();
            match value.get(field).and_then(Value::as_str) {
                Some(named) if named == key => {}
                Some(named) => self.fail(
                    "definition",
                    at,
                    format!("its `{field}` is {named:?}, not `name` {key:?}"),
                ),
                None => self.fail(
                    "definition",
                    at,
                    format!("a {kind} definition needs a string `{field}`"),
                ),
            }
        }
        if let Some(revision) = revision {
            match Revision::of(&value) {
                Ok(of) if &of == revision => {}
                Ok(of) => {
                    let message = format!(
                        "its revision is {of}, not `revision` {revision}: the entry was edited by hand; approve the \
                         definition again"
                    );
                    self.fail("definition", at, message);
                }
                Err(e) => self.fail("definition", at, e.to_string()),
            }
        }
        Some(value)
    }

    /// The byte offset in the file of 1-based `line` and `column` of the
    /// string value `text` starting at `at`, when it is a literal string
    /// (whose content is the file's text); else `at`.
    fn json_position(&self, at: usize, text: &str, line: usize, column: usize) -> usize {
        let file = self.report.text;
        let raw = &file[at.min(file.len())..];
        let open = if let Some(rest) = raw.strip_prefix("'''") {
            3 + if rest.starts_with("\r\n") {
                2
            } else {
                usize::from(rest.starts_with('\n'))
            }
        } else if raw.starts_with('\'') {
            1
        } else {
            return at;
        };
        if raw.get(open..open + text.len()) != Some(text) {
            return at;
        }
        let line_start: usize = text
            .split_inclusive('\n')
            .take(line.saturating_sub(1))
            .map(str::len)
            .sum();
        at + open + (line_start + column.saturating_sub(1)).min(text.len())
    }
}

fn non_empty(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    Ok(s.to_owned())
}

/// A route name, as `[[servers]] name` accepts it.
fn server_name(s: &str) -> Result<String, String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if s.is_empty() || s.len() > 64 || !s.chars().all(ok_char) {
        return Err(format!("invalid server name {s:?}: use 1 to 64 of A-Z a-z 0-9 _ . -"));
    }
    Ok(s.to_owned())
}

fn kind_named(s: &str) -> Result<Kind, String> {
    Kind::ALL
        .into_iter()
        .find(|k| k.as_str() == s)
        .ok_or_else(|| format!("unknown kind {s:?}: expected tool, prompt, resource or resource_template"))
}

fn revision(s: &str) -> Result<Revision, String> {
    Revision::parse(s).map_err(|_| format!("not a revision: {s:?}; expected sha256: and 64 lowercase hex digits"))
}
