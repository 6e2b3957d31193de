//! What a poisoning check reports: the [`Check`] that fired (a stable metric
//! label), how much it matters ([`Severity`]), and the [`Finding`] a
//! reviewer reads — where the text is, what it says and why it was
//! flagged. The value types of the poisoning checks; they import nothing
//! above them.

use std::fmt;

use serde::Serialize;

use super::unicode;
use crate::definition::Kind;

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
    /// A long base64 or hex blob, or a short one that decodes to text.
    EncodedBlob,
    /// A URL.
    Url,
    /// The name of another tool.
    ToolReference,
    /// The name of another configured server.
    ServerReference,
    /// A description far longer than the server's others.
    LongDescription,
    /// A request for the conversation, the system prompt, earlier tool
    /// results or the user's secrets.
    ContextExfiltration,
    /// Instructions where a name, title, parameter name, enum value,
    /// default or example belongs.
    LabelInstructions,
    /// Look-alike letters: words mixing scripts, full-width or styled
    /// Latin letters.
    Homoglyphs,
    /// Instructions to the model in a language other than English.
    ForeignInstructions,
    /// A made-up error or deprecation, or tool output the model is told to
    /// obey.
    FalseError,
    /// Text steering the model's choice of tool.
    PassiveInfluence,
    /// Text changing how other tools or servers are used.
    Shadowing,
    /// Text telling the model to enumerate or call the tools it has.
    ToolDiscovery,
    /// Terminal control sequences and other control characters.
    TerminalEscape,
}

impl Check {
    /// Every check.
    pub const ALL: [Check; 17] = [
        Check::InvisibleUnicode,
        Check::ModelInstructions,
        Check::SensitivePath,
        Check::EncodedBlob,
        Check::Url,
        Check::ToolReference,
        Check::ServerReference,
        Check::LongDescription,
        Check::ContextExfiltration,
        Check::LabelInstructions,
        Check::Homoglyphs,
        Check::ForeignInstructions,
        Check::FalseError,
        Check::PassiveInfluence,
        Check::Shadowing,
        Check::ToolDiscovery,
        Check::TerminalEscape,
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
            Check::ContextExfiltration => "context_exfiltration",
            Check::LabelInstructions => "label_instructions",
            Check::Homoglyphs => "homoglyphs",
            Check::ForeignInstructions => "foreign_instructions",
            Check::FalseError => "false_error",
            Check::PassiveInfluence => "passive_influence",
            Check::Shadowing => "shadowing",
            Check::ToolDiscovery => "tool_discovery",
            Check::TerminalEscape => "terminal_escape",
        }
    }

    /// Whether the check reads instructions in words, so that finding one
    /// in a label (a name, an enum value) is worse than in prose.
    pub(super) fn is_instruction(self) -> bool {
        matches!(
            self,
            Check::ModelInstructions
                | Check::ContextExfiltration
                | Check::ForeignInstructions
                | Check::FalseError
                | Check::PassiveInfluence
                | Check::Shadowing
                | Check::ToolDiscovery
        )
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much a finding matters. `High` and `Medium` are what a reviewer
/// must read before approving; `Info` is context (a documentation link, a
/// long description, a mention of a sibling tool) that is common in
/// honest definitions too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing, common in honest definitions.
    Info,
    /// Unusual in an honest definition: read it closely.
    Medium,
    /// Text aimed at the model against the user: a poisoned definition
    /// looks like this.
    High,
}

impl Severity {
    /// `info`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }

    /// One step up (`Info` → `Medium` → `High`).
    pub(super) fn raised(self) -> Severity {
        match self {
            Severity::Info => Severity::Medium,
            Severity::Medium | Severity::High => Severity::High,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One suspicious span of text in a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was found.
    pub check: Check,
    /// How much it matters.
    pub severity: Severity,
    /// Why it was flagged, in one sentence.
    pub reason: String,
    /// The kind of the definition.
    pub kind: Kind,
    /// Its name, URI or URI template.
    pub key: String,
    /// The JSON pointer of the string in the definition, e.g.
    /// `/description` or `/inputSchema/properties/path/description`; for
    /// an object key (a parameter name), the pointer of the member it
    /// names, e.g. `/inputSchema/properties/sidenote`.
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
            "{} {}: {} {:?} {} [{start}..{end}]: {} — {}",
            self.severity, self.check, self.kind, self.key, self.field, self.excerpt, self.reason
        )
    }
}

/// One offending span found by a check, before it becomes a [`Finding`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) check: Check,
    pub(super) severity: Severity,
    pub(super) reason: String,
    pub(super) start: usize,
    pub(super) end: usize,
    /// What was decoded or measured, for the excerpt.
    pub(super) note: Option<String>,
}

impl Hit {
    pub(super) fn new(check: Check, severity: Severity, reason: impl Into<String>, start: usize, end: usize) -> Hit {
        Hit {
            check,
            severity,
            reason: reason.into(),
            start,
            end,
            note: None,
        }
    }

    pub(super) fn with_note(mut self, note: impl Into<String>) -> Hit {
        self.note = Some(note.into());
        self
    }
}

/// Add `hit`, merged with a hit of the same check it overlaps or touches
/// (`~/.ssh/` and `id_rsa` in `~/.ssh/id_rsa` are one finding); the merged
/// hit keeps the higher severity and its reason.
pub(super) fn push(hits: &mut Vec<Hit>, hit: Hit) {
    for h in hits.iter_mut().filter(|h| h.check == hit.check) {
        if hit.start <= h.end && h.start <= hit.end {
            h.start = h.start.min(hit.start);
            h.end = h.end.max(hit.end);
            if hit.severity > h.severity {
                h.severity = hit.severity;
                h.reason = hit.reason;
            }
            return;
        }
    }
    hits.push(hit);
}

/// Characters of context shown on each side of a span.
const CONTEXT_CHARS: usize = 24;
/// About the most bytes of the span itself shown (escapes included).
const SPAN_CHARS: usize = 96;

/// The span with some context, made printable, and the note.
pub(super) fn excerpt(text: &str, start: usize, end: usize, note: Option<&str>) -> String {
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
