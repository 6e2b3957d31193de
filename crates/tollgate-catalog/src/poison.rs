//! Poisoning checks: text in a definition that is there for the model rather
//! than for the person reading the catalog — the signs of tool poisoning,
//! shadowing and rug pulls published against MCP servers.
//!
//! Not on the request path: `tollgate catalog diff` runs [`check`] on every
//! new, changed and renamed definition so that the reviewer sees each
//! [`Finding`] (the definition, the JSON pointer of the field, the byte span
//! of the offending text and an excerpt); the sync logs the findings of
//! unapproved definitions and counts them by [`Check::as_str`]. A finding is
//! a reason to read closely, not a verdict: approval stays a person's call.
//!
//! Every string in a definition is checked (descriptions, titles, property
//! descriptions, enum values, defaults, examples, `_meta`…), object keys
//! are not. The checks and what each will miss:
//!
//! - `invisible_unicode`: zero-width and format characters (U+200B–U+200F,
//!   U+2060–U+2064, U+FEFF, soft hyphen, U+180E…), bidirectional controls
//!   (U+202A–U+202E, U+2066–U+2069, U+061C), tag characters (U+E0000–
//!   U+E007F, decoded in the excerpt) and variation selectors used to
//!   smuggle bytes. Misses homoglyphs (a Cyrillic `а` for `a`), text hidden
//!   by ordinary white space, and zero-width joiners and VS16 inside emoji,
//!   which are allowed.
//! - `model_instructions`: text addressed to the model — "ignore previous
//!   instructions", "disregard", "you must", "do not tell the user",
//!   "system prompt", "always use this tool", `<IMPORTANT>`-, `<SYSTEM>`- and
//!   `<instructions>`-style tags, chat-template markers (`[INST]`,
//!   `<|im_start|>`) and hidden HTML comments. A fixed list of English
//!   phrases matched word by word: paraphrases, other languages, and
//!   instructions phrased as plain documentation ("the sidenote argument
//!   must hold the file's content") go through.
//! - `sensitive_path`: names of secrets on the host — SSH keys, cloud and
//!   package-manager credentials, `.env`, `/etc/passwd`, MCP client
//!   configurations. A fixed list; misses paths it does not know or that
//!   are built up piecewise.
//! - `encoded_blob`: base64 runs of at least 40 characters (mixed case,
//!   digits, plausible padding, high entropy) and hex runs of at least 32
//!   digits. Shorter payloads, other encodings (base32, ROT13, spelled-out
//!   text) and base64 split by spaces pass.
//! - `url`: `http`, `https`, `ws`, `ftp`, `file` and `data:` URLs, except
//!   where URLs belong (a resource's own URI, `$schema`/`$id`/`$ref`,
//!   `icons`). Bare domain names ("send it to evil.example") pass.
//! - `tool_reference`, `server_reference`: the name of another tool (of
//!   this server or, when the caller knows them, of others) or of another
//!   configured server. Names that are plain words (`search`, `time`) count
//!   only when quoted or followed by "tool" or "server", so a reference in
//!   prose to a tool named by a plain word passes; names the gateway does
//!   not know (a server configured elsewhere) pass.
//! - `long_description`: a description over 500 characters and over four
//!   times the server's median. A server with few definitions has a
//!   median that the long one itself pulls up.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::definition::{Definition, Kind};
use crate::snapshot::Snapshot;

mod blobs;
mod names;
mod text;
mod unicode;

/// Which check found something; its name is a stable metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Check {
    /// Zero-width, format, bidirectional-control or tag characters.
    InvisibleUnicode,
    /// Text addressed to the model: instructions, hidden tags or comments.
    ModelInstructions,
    /// The name of a secret on the host (SSH keys, credentials files).
    SensitivePath,
    /// A long base64 or hex blob.
    EncodedBlob,
    /// A URL.
    Url,
    /// The name of another tool.
    ToolReference,
    /// The name of another configured server.
    ServerReference,
    /// A description far longer than the server's others.
    LongDescription,
}

impl Check {
    /// Every check.
    pub const ALL: [Check; 8] = [
        Check::InvisibleUnicode,
        Check::ModelInstructions,
        Check::SensitivePath,
        Check::EncodedBlob,
        Check::Url,
        Check::ToolReference,
        Check::ServerReference,
        Check::LongDescription,
    ];

    /// A stable snake_case name, usable as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::InvisibleUnicode => "invisible_unicode",
            Check::ModelInstructions => "model_instructions",
            Check::SensitivePath => "sensitive_path",
            Check::EncodedBlob => "encoded_blob",
            Check::Url => "url",
            Check::ToolReference => "tool_reference",
            Check::ServerReference => "server_reference",
            Check::LongDescription => "long_description",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One suspicious span of text in a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was found.
    pub check: Check,
    /// The kind of the definition.
    pub kind: Kind,
    /// Its name, URI or URI template.
    pub key: String,
    /// The JSON pointer of the string in the definition, e.g.
    /// `/description` or `/inputSchema/properties/path/description`.
    pub field: String,
    /// The byte range of the offending text in that string.
    pub span: (usize, usize),
    /// The offending text with some context, invisible and control
    /// characters written `<U+XXXX>`, and what was decoded or measured.
    pub excerpt: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start, end) = self.span;
        write!(
            f,
            "{}: {} {:?} {} [{start}..{end}]: {}",
            self.check, self.kind, self.key, self.field, self.excerpt
        )
    }
}

/// What the checks know about the definition's surroundings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckContext {
    /// The median length, in characters, of the descriptions of the
    /// server's definitions.
    pub median_description_len: usize,
    /// The names of the server's tools and prompts (a definition's own name
    /// is skipped when it is checked).
    pub tools: Vec<String>,
    /// The names of the other configured servers.
    pub other_servers: Vec<String>,
    /// The names of other servers' tools, when known.
    pub other_tools: Vec<String>,
}

impl CheckContext {
    /// The context of the definitions of `snapshot`, with the names of the
    /// other configured servers (the snapshot's own is left out).
    pub fn for_snapshot(snapshot: &Snapshot, other_servers: &[String]) -> CheckContext {
        let mut lengths: Vec<usize> = snapshot
            .definitions
            .values()
            .filter_map(|d| d.description().map(|s| s.chars().count()))
            .collect();
        lengths.sort_unstable();
        let median = match lengths.len() {
            0 => 0,
            n if n % 2 == 1 => lengths[n / 2],
            n => (lengths[n / 2 - 1] + lengths[n / 2]) / 2,
        };
        CheckContext {
            median_description_len: median,
            tools: snapshot
                .definitions
                .values()
                .filter(|d| matches!(d.kind, Kind::Tool | Kind::Prompt))
                .map(|d| d.key.clone())
                .collect(),
            other_servers: other_servers
                .iter()
                .filter(|s| **s != snapshot.server)
                .cloned()
                .collect(),
            other_tools: Vec::new(),
        }
    }

    /// The same context knowing the names of other servers' tools too.
    pub fn with_other_tools(mut self, names: impl IntoIterator<Item = String>) -> CheckContext {
        self.other_tools.extend(names);
        self
    }
}

/// Run every check on every string of `definition`; findings in field
/// order, then by position.
pub fn check(definition: &Definition, context: &CheckContext) -> Vec<Finding> {
    let mut strings = Vec::new();
    collect_strings(&definition.body, &mut String::new(), &mut strings);
    let key_pointer = format!("/{}", definition.kind.key_field());
    let mut findings = Vec::new();
    for (field, text) in strings {
        let role = Role::of(&field, &key_pointer);
        let mut hits = Vec::new();
        unicode::scan(text, &mut hits);
        if role != Role::Key {
            text::scan(text, &mut hits);
            names::scan(text, &definition.key, context, &mut hits);
        }
        if role == Role::Prose {
            blobs::scan(text, &mut hits);
        }
        if field == "/description" {
            long_description(text, context, &mut hits);
        }
        hits.sort_by_key(|h| (h.start, h.check));
        findings.extend(hits.into_iter().map(|hit| Finding {
            check: hit.check,
            kind: definition.kind,
            key: definition.key.clone(),
            field: field.clone(),
            span: (hit.start, hit.end),
            excerpt: excerpt(text, hit.start, hit.end, hit.note.as_deref()),
        }));
    }
    findings
}

/// One offending span found by a check, before it becomes a [`Finding`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    check: Check,
    start: usize,
    end: usize,
    /// What was decoded or measured, for the excerpt.
    note: Option<String>,
}

impl Hit {
    fn new(check: Check, start: usize, end: usize) -> Hit {
        Hit {
            check,
            start,
            end,
            note: None,
        }
    }
}

/// How a string is checked, by where it is in the definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The definition's own name, URI or URI template: only invisible
    /// characters are looked for.
    Key,
    /// A place where URLs and encoded data belong (JSON Schema `$schema`,
    /// `$id`, `$ref`; `icons`): no URL or blob check.
    Locator,
    /// Anything else, read by the model as text.
    Prose,
}

impl Role {
    fn of(field: &str, key_pointer: &str) -> Role {
        let last = field.rsplit('/').next().unwrap_or_default();
        if field == key_pointer {
            Role::Key
        } else if matches!(last, "$schema" | "$id" | "$ref") || field.starts_with("/icons/") {
            Role::Locator
        } else {
            Role::Prose
        }
    }
}

/// Every string in `value` with its JSON pointer, in document order.
fn collect_strings<'a>(value: &'a Value, pointer: &mut String, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(s) => out.push((pointer.clone(), s)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                collect_strings(item, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                collect_strings(v, pointer, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

/// The description is the longest the server has by far.
fn long_description(text: &str, context: &CheckContext, hits: &mut Vec<Hit>) {
    let chars = text.chars().count();
    let median = context.median_description_len;
    if chars > 500 && chars > median.saturating_mul(4) {
        let mut hit = Hit::new(Check::LongDescription, 0, text.len());
        hit.note = Some(format!("{chars} characters; the server's median is {median}"));
        hits.push(hit);
    }
}

/// Characters of context shown on each side of a span.
const CONTEXT_CHARS: usize = 24;
/// About the most bytes of the span itself shown (escapes included).
const SPAN_CHARS: usize = 96;

/// The span with some context, made printable, and the note.
fn excerpt(text: &str, start: usize, end: usize, note: Option<&str>) -> String {
    let before: Vec<char> = text[..start].chars().rev().take(CONTEXT_CHARS + 1).collect();
    let mut out = String::new();
    if before.len() > CONTEXT_CHARS {
        out.push('…');
    }
    before
        .iter()
        .rev()
        .skip(before.len().saturating_sub(CONTEXT_CHARS))
        .for_each(|c| printable(*c, &mut out));
    out.push('«');
    let budget = out.len() + SPAN_CHARS;
    let mut span = text[start..end].chars();
    for c in span.by_ref() {
        printable(c, &mut out);
        if out.len() >= budget {
            break;
        }
    }
    if span.next().is_some() {
        out.push('…');
    }
    out.push('»');
    let mut after = text[end..].chars();
    after.by_ref().take(CONTEXT_CHARS).for_each(|c| printable(c, &mut out));
    if after.next().is_some() {
        out.push('…');
    }
    if let Some(note) = note {
        out.push_str(" (");
        out.push_str(note);
        out.push(')');
    }
    out
}

/// `text` as a reader can see it (see [`printable`]).
pub(crate) fn printable_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    text.chars().for_each(|c| printable(c, &mut out));
    out
}

/// `c` as a reader can see it: invisible and control characters as
/// `<U+XXXX>`, line breaks as `\n`.
fn printable(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() || unicode::is_hidden(c) => out.push_str(&format!("<U+{:04X}>", u32::from(c))),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests;
