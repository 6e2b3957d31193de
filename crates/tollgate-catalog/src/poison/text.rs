//! `model_instructions`: words addressed to the model (a lexicon of
//! phrases, matched word by word on the folded text, never across a
//! sentence end), tags and chat-template markers that frame text as a
//! system message, hidden HTML comments, and a line that addresses the
//! assistant by name.
//!
//! Severity follows what the words do: setting the model's instructions
//! aside, hiding something from the user or claiming a consent nobody gave
//! is high; "you must" and "system prompt" are info, since honest
//! definitions say them all the time ("you must call resolve-library-id
//! first"). A phrase between quotation marks is a mention, not a use, and
//! counts as info.

use std::sync::LazyLock;

use super::finding::{Check, Hit, Severity, push};
use super::phrase::{Lexicon, Reading, negated};

use Severity::{High, Info, Medium};

const ASIDE: &str = "tells the model to set its instructions aside";
const HIDE: &str = "tells the model to keep something from the user";
const ADDRESS: &str = "addresses the model directly, not the reader";
const MODE: &str = "tells the model it is in a special mode or has new orders";
const CONSENT: &str = "claims a consent or setting of the user's that the definition cannot know";
const UNCONFIRMED: &str = "tells the model to act without the user's confirmation";
const RETURNED: &str = "tells the model to run what the tool returns";
const RUSH: &str = "tells the model to act without asking the user";
const OBLIGE: &str = "addresses the model with an obligation, common in honest definitions too";

const PHRASES: &[(&str, Severity, &str)] = &[
    (
        "ignore|disregard|forget|override|bypass|overrule|skip *2 previous|prior|above|earlier|preceding|former|existing|original|system|all|any|other|your|initial|safety|security instructions|instruction|prompts|prompt|directions|directives|rules|guidelines|guidance|messages|context|constraints|policies|restrictions",
        High,
        ASIDE,
    ),
    (
        "forget|ignore|disregard *2 what you were|have|had been? told|instructed|taught",
        High,
        ASIDE,
    ),
    (
        "disregard",
        Info,
        "a word that often starts an instruction to the model",
    ),
    ("you must", Info, OBLIGE),
    ("you are required to", Info, OBLIGE),
    ("you should always|never|first", Info, OBLIGE),
    (
        "do|does not tell|inform|notify|alert|mention|reveal|show|disclose|let|report *3 user|users|human|humans|operator|anyone|person|people|customer|customers|requester|caller",
        High,
        HIDE,
    ),
    (
        "don't|doesn't|never tell|inform|notify|alert|mention|reveal|show|disclose|let|report *3 user|users|human|humans|operator|anyone|person|people|customer|customers|requester|caller",
        High,
        HIDE,
    ),
    (
        "without telling|informing|notifying|alerting|asking|showing|mentioning|letting *3 user|users|human|humans|operator|person|people|customer|customers|requester|caller",
        High,
        HIDE,
    ),
    (
        "hide|conceal *4 from *2 user|users|human|humans|operator|person|people|customer|customers|requester|caller",
        High,
        HIDE,
    ),
    (
        "keep *4 from *2 user|users|human|humans|operator|person|people|customer|customers|requester|caller",
        High,
        HIDE,
    ),
    (
        "user|users|human must|should|need|will not|never learn|know|notice|find|see|hear",
        High,
        HIDE,
    ),
    (
        "need|needs not be reported|mentioned|shown|disclosed|told|brought",
        High,
        HIDE,
    ),
    ("not something *3 user|users need|needs to know", High, HIDE),
    ("do|don't|never *1 bring|bringing it|this|that|them up", High, HIDE),
    (
        "out of your reply|replies|answer|answers|response|responses",
        High,
        HIDE,
    ),
    ("secretly|covertly|surreptitiously", High, HIDE),
    (
        "quietly|silently|discreetly|invisibly add|send|pass|upload|include|forward|copy|read|run|call|append|delete|execute|collect|share|post|attach|mirror|store|log|record|put",
        High,
        HIDE,
    ),
    (
        "note|message to|for the? ai|assistant|assistants|model|llm|agent|agents|claude|gpt|chatgpt|copilot",
        High,
        ADDRESS,
    ),
    ("attention ai|assistant|model|llm|agent|agents", High, ADDRESS),
    ("you are now in *2 mode", High, MODE),
    ("god|jailbreak|unrestricted|dan mode", Medium, MODE),
    ("system|administrator|admin override", High, MODE),
    ("you are now", Medium, MODE),
    ("from now on", Medium, "sets a rule for the rest of the conversation"),
    (
        "real|actual|true|secret instructions|instruction|directive|directives|orders|task",
        High,
        MODE,
    ),
    ("new|hidden instructions|instruction|directive|directives", Medium, MODE),
    (
        "system prompt|prompts|message",
        Info,
        "mentions the model's system prompt",
    ),
    (
        "user|users has|have|already? already? granted|agreed|consented|approved|authorized|authorised|permitted",
        Medium,
        CONSENT,
    ),
    (
        "without asking|checking|confirming|consulting *3 user|users|human|them|you",
        High,
        UNCONFIRMED,
    ),
    (
        "without confirmation|approval|permission|verification",
        Info,
        UNCONFIRMED,
    ),
    (
        "do|don't|never *1 ask *4 confirmation|permission|approval|consent",
        High,
        UNCONFIRMED,
    ),
    (
        "not|never|don't *1 ask|asking|consult|check *3 user|users|human|them *2 before|first",
        High,
        UNCONFIRMED,
    ),
    (
        "call|run|execute|delete|remove|send|invoke *8 without asking|confirming|checking|confirmation",
        High,
        RUSH,
    ),
    (
        "user|users *1 configured|requested|enabled|set|asked|wants|prefers|chose this|it|that",
        Medium,
        CONSENT,
    ),
    (
        "run|execute|perform *4 commands|command|steps|actions *3 this|the? tool|it|output|result|results returns|gives|outputs|suggests|lists|says",
        High,
        RETURNED,
    ),
    (
        "run|execute *4 script|scripts|command|commands *2 from|returned|given|provided|in *2 this|the tool|output|result|response",
        High,
        RETURNED,
    ),
];

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(PHRASES));

/// Tag names (lowercase, `-` and `_` removed) that frame text for the
/// model, with their severity.
const TAGS: &[(&str, Severity)] = &[
    ("important", High),
    ("system", High),
    ("systemprompt", High),
    ("systemmessage", High),
    ("instructions", High),
    ("instruction", High),
    ("hidden", High),
    ("admin", High),
    ("override", High),
    ("jailbreak", High),
    ("notetoai", High),
    ("critical", Medium),
    ("assistant", Medium),
    ("ai", Medium),
    ("agent", Medium),
];

/// Chat-template markers (lowercase).
const MARKERS: &[&str] = &["[inst]", "[/inst]", "<<sys>>", "<</sys>>", "[system]", "[/system]"];

/// Names the model answers to, when a line opens with one and a colon.
const ADDRESSEES: &[&str] = &["assistant", "ai", "llm", "claude", "chatgpt", "gpt", "copilot"];

pub(super) fn scan(r: &Reading<'_>, hits: &mut Vec<Hit>) {
    for m in LEXICON.matches(&r.words) {
        // "Never delete files without confirmation" is a guardrail.
        let inner_negation = r.words[m.first..m.end]
            .iter()
            .any(|w| matches!(w.text.as_str(), "not" | "never" | "don't"));
        if m.reason == RUSH && (negated(&r.words, m.first) || inner_negation) {
            continue;
        }
        let (start, end) = r.span(m.first, m.end);
        let severity = if r.is_quoted(m.first, m.end) { Info } else { m.severity };
        push(hits, Hit::new(Check::ModelInstructions, severity, m.reason, start, end));
    }
    let lower = r.folded.text.as_str();
    let mut found = Vec::new();
    tags(lower, &mut found);
    for marker in MARKERS {
        for (at, m) in lower.match_indices(marker) {
            found.push((
                at,
                at + m.len(),
                High,
                "a chat-template marker that frames text as a system turn",
            ));
        }
    }
    for (at, _) in lower.match_indices("<!--") {
        let end = lower[at..].find("-->").map_or(lower.len(), |e| at + e + 3);
        found.push((
            at,
            end,
            Medium,
            "a hidden HTML comment: the model reads it, a rendered page does not show it",
        ));
    }
    addressed(lower, &mut found);
    commands(lower, &mut found);
    for (start, end, severity, reason) in found {
        let (start, end) = r.folded_span(start, end);
        push(hits, Hit::new(Check::ModelInstructions, severity, reason, start, end));
    }
}

/// `<important>`, `</SYSTEM>`, `<system-prompt foo="x">`, `<|im_start|>`.
fn tags(lower: &str, found: &mut Vec<(usize, usize, Severity, &'static str)>) {
    const FRAME: &str = "a tag that frames text as instructions for the model";
    for (at, _) in lower.match_indices('<') {
        let rest = &lower[at + 1..];
        if let Some(inner) = rest.strip_prefix('|') {
            let name_len = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            if name_len > 0 && inner[name_len..].starts_with("|>") {
                found.push((at, at + 1 + 1 + name_len + 2, High, "a chat-template token"));
            }
            continue;
        }
        let body = rest.trim_start_matches('/').trim_start();
        let name_len = body
            .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
            .unwrap_or(body.len());
        let name: String = body[..name_len].chars().filter(|c| c.is_ascii_alphabetic()).collect();
        let after = &body[name_len..];
        let closes = match after.find('>') {
            Some(0) => Some(0),
            Some(n) if after.starts_with(' ') && n <= 120 && !after[..n].contains('<') => Some(n),
            _ => None,
        };
        let tag = TAGS.iter().find(|(t, _)| *t == name);
        if let (Some(close), Some((_, severity))) = (closes, tag) {
            let end = lower.len() - after.len() + close + 1;
            found.push((at, end, *severity, FRAME));
        }
    }
}

/// A shell command that downloads and runs a script (`curl … | sh`) or
/// uploads data (`curl -d @- …`, `curl -T …`), within one line.
fn commands(lower: &str, found: &mut Vec<(usize, usize, Severity, &'static str)>) {
    const RUN: &[&str] = &["| sh", "|sh", "| bash", "|bash", "| zsh", "| python"];
    const UPLOAD: &[&str] = &[" -d ", " -d@", " -t ", " -f ", "--data", "--upload-file", "--form"];
    for tool in ["curl ", "wget "] {
        for (at, _) in lower.match_indices(tool) {
            let end = lower[at..].find('\n').map_or(lower.len(), |e| at + e);
            let line = &lower[at..end];
            if RUN.iter().any(|r| line.contains(r)) {
                found.push((at, end, High, "a command that downloads a script and runs it"));
            } else if UPLOAD.iter().any(|u| line.contains(u)) {
                found.push((at, end, High, "a command that uploads data"));
            }
        }
    }
}

/// `Assistant: …` at the start of a line, a sentence or a bracket.
fn addressed(lower: &str, found: &mut Vec<(usize, usize, Severity, &'static str)>) {
    for name in ADDRESSEES {
        for (at, _) in lower.match_indices(name) {
            let end = at + name.len();
            let before = lower[..at].trim_end_matches([' ', '\t']);
            let opens = before.is_empty() || before.ends_with(['.', '!', '?', '\n', '(', '[', '>', '—', '-', ':', ';']);
            let comma =
                lower[end..].starts_with(',') && matches!(*name, "assistant" | "claude" | "chatgpt" | "copilot");
            let colon = lower[end..].starts_with(':') || lower[end..].starts_with(" :") || comma;
            let word_start = !lower[..at].chars().next_back().is_some_and(char::is_alphanumeric);
            if opens && colon && word_start {
                found.push((at, end + 1, High, ADDRESS));
            }
        }
    }
}
