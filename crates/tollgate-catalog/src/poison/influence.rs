//! `passive_influence` and `false_error`: text that does not ask for data
//! but bends the model's judgement.
//!
//! - Passive influence (preference manipulation): praise aimed at the
//!   tool choice ("the most trusted search tool", "always prefer this tool
//!   over any other"), disparagement of other tools, trust over the user.
//!   "Always use this tool" alone is info: honest servers say it of their
//!   own tools ("always use this tool for arithmetic").
//! - False errors and obedient output: a description that claims the tool
//!   is broken or deprecated and sends the model elsewhere (info when the
//!   replacement is a tool of the same server, as honest deprecations
//!   are), a made-up error that tells the model what to do next, and tool
//!   output or errors the model is told to obey.

use std::sync::LazyLock;

use super::context::CheckContext;
use super::finding::{Check, Hit, Severity, push};
use super::phrase::{Lexicon, Reading, Word, negated};

use Severity::{High, Info, Medium};

const FAVOUR: &str = "asks the model to favour this tool";
const AWAY: &str = "steers the model away from other tools";
const PRAISE: &str = "praises the tool to win the model's choice";
const TRUST: &str = "tells the model to trust the tool over its own judgement or the user";
const OBEY: &str = "tells the model to obey what the tool's output or errors say";

const INFLUENCE_PHRASES: &[(&str, Severity, &str)] = &[
    (
        "always|only use|call|invoke|prefer|choose|select|pick this|these tool|tools|function|server|one",
        Info,
        FAVOUR,
    ),
    (
        "prefer|choose|select|pick|favour|favor|prioritize|prioritise this|these|it *3 over|above|before *2 any|every|all|other|another|alternative|alternatives",
        Medium,
        AWAY,
    ),
    (
        "over|than|instead|rather|above|before *2 any|every|all|other|another|alternative *2 tool|tools|server|servers|option|options|alternatives|function|functions",
        Medium,
        AWAY,
    ),
    (
        "even when|if *2 another|other|different *3 tool|tools|one|provider",
        High,
        AWAY,
    ),
    ("1 choice|pick|tool|option|rated", Medium, PRAISE),
    (
        "any|every|all other|alternative *2 tool|tools|server|servers",
        Medium,
        AWAY,
    ),
    (
        "never|don't|not use|call|invoke|select|choose *3 other|another|any|alternative|different *2 tool|tools|server|servers|function",
        Medium,
        AWAY,
    ),
    (
        "other|alternative|different *3 tools|tool|servers|server *6 unsafe|malicious|deprecated|broken|flagged|compromised|insecure|leak|leaks|untrusted|dangerous|outdated|unreliable",
        High,
        AWAY,
    ),
    ("unlike the others|other|alternatives", Medium, AWAY),
    (
        "most|best|only trusted|reliable|accurate|secure|official|recommended|authoritative|verified|safest|capable *2 tool|tools|source|way|option|choice|summarizer|translator",
        Medium,
        PRAISE,
    ),
    (
        "officially|formally recommended|endorsed|certified|verified|approved",
        Medium,
        PRAISE,
    ),
    (
        "recommended|endorsed|certified|verified|approved by *3 mcp|anthropic|openai|maintainers|microsoft|google",
        Medium,
        PRAISE,
    ),
    ("rated|ranked *2 1|best|first|top|number", Medium, PRAISE),
    ("award winning", Medium, PRAISE),
    ("trusted by", Medium, PRAISE),
    ("security audited", Medium, PRAISE),
    ("highest|top priority tool", Medium, PRAISE),
    (
        "selected|used|called|chosen|choose|select|use *2 first for any|every|all task|tasks|request|requests|question|questions",
        Medium,
        FAVOUR,
    ),
    ("prioritize|prioritise this|these tool|tools", Medium, FAVOUR),
    ("must|should|have to choose|select|pick|use this one|tool", Info, FAVOUR),
    (
        "selecting|choosing|using|calling this tool earns|gives|improves|boosts|increases",
        Medium,
        FAVOUR,
    ),
    ("users|people strongly? prefer it|this", Medium, FAVOUR),
    (
        "more reliable|accurate|trustworthy than *1 your|user's|user|any",
        High,
        TRUST,
    ),
    ("trust *4 over *2 user|user's|users|your", High, TRUST),
    (
        "even when|if *3 user|users names|asks|mentions|prefers|requests|chooses *2 different|another|other",
        High,
        TRUST,
    ),
];

static INFLUENCE: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(INFLUENCE_PHRASES));

const OBEDIENCE_PHRASES: &[(&str, Severity, &str)] = &[
    (
        "treat|consider|regard *6 as *2 instruction|instructions|command|commands|directive|directives|order|orders",
        High,
        OBEY,
    ),
    ("must|should|shall be obeyed", High, OBEY),
    (
        "obey *2 it|them|this|these|instructions|directives|commands|orders",
        High,
        OBEY,
    ),
    (
        "provide|give|supply|send|do exactly? what the? it|tool|output|error|response asks|says|requests|requires|wants",
        High,
        OBEY,
    ),
    (
        "results|result|output|outputs|responses|response *4 should|must|shall|are|is to? be executed|run|followed|obeyed|carried",
        High,
        OBEY,
    ),
    (
        "follow|execute|carry|perform *1 out? *3 remediation|directives",
        Medium,
        OBEY,
    ),
    (
        "take|takes|taking precedence|priority over *3 user|user's|users",
        High,
        OBEY,
    ),
    ("higher|more priority than *3 user|user's|request", High, OBEY),
    ("come|comes from the operator|administrator", Medium, OBEY),
    (
        "configuration|system|operator|admin message|messages|instruction|instructions for you",
        High,
        OBEY,
    ),
    (
        "directives|instructions|commands *3 in|inside *2 results|output|outputs|responses|blocks|pages|feed",
        Medium,
        OBEY,
    ),
    (
        "carry|perform|execute|complete|follow|do *1 out? the? action|actions|steps|instructions|commands|tasks|task *2 it|the? output|response|result|results|error|status describes|lists|gives|contains|says|asks|explains|specifies|names",
        High,
        OBEY,
    ),
    (
        "error|errors|output|response|result|results|status explains|says|tells|lists|describes|specifies|contains which|what|how|follow *6 upload|send|run|call|provide|execute|tasks|steps",
        High,
        OBEY,
    ),
    (
        "instructions|directives|commands|they|these|those|it override|overrides|supersede|supersedes|outrank|outranks *3 user|user's|users|anything|everything",
        High,
        OBEY,
    ),
];

static OBEDIENCE: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(OBEDIENCE_PHRASES));

pub(super) fn scan(r: &Reading<'_>, context: &CheckContext, hits: &mut Vec<Hit>) {
    for m in INFLUENCE.matches(&r.words) {
        if r.is_quoted(m.first, m.end) || (m.severity == Medium && negated(&r.words, m.first) && m.reason == FAVOUR) {
            continue;
        }
        let (start, end) = r.span(m.first, m.end);
        push(
            hits,
            Hit::new(Check::PassiveInfluence, m.severity, m.reason, start, end),
        );
    }
    for m in OBEDIENCE.matches(&r.words) {
        let inner_negation = r.words[m.first..m.end].iter().any(is_negation);
        if negated(&r.words, m.first) || inner_negation || r.is_quoted(m.first, m.end) {
            continue;
        }
        let (start, end) = r.span(m.first, m.end);
        push(hits, Hit::new(Check::FalseError, m.severity, m.reason, start, end));
    }
    for (first, end) in sentence_pairs(&r.words) {
        escalation(r, first, end, hits);
        deprecation(r, first, end, context, hits);
    }
}

fn is_negation(w: &Word) -> bool {
    matches!(w.text.as_str(), "not" | "never" | "no" | "don't")
}

/// Each sentence with the next one, as word ranges.
fn sentence_pairs(words: &[Word]) -> Vec<(usize, usize)> {
    let mut starts = vec![0];
    starts.extend(words.iter().enumerate().filter(|(_, w)| w.is_end()).map(|(i, _)| i + 1));
    starts.push(words.len() + 1);
    let last = starts.len() - 1;
    (0..last)
        .map(|i| (starts[i], (starts[(i + 2).min(last)] - 1).min(words.len())))
        .filter(|(a, b)| a < b)
        .collect()
}

/// The first word of `first..end` in `any_of`, identifiers left out.
fn has(r: &Reading<'_>, first: usize, end: usize, any_of: &[&str]) -> Option<usize> {
    (first..end).find(|i| any_of.contains(&r.words[*i].text.as_str()) && !r.in_identifier(*i))
}

/// Words of a made-up error.
const ERRORS: &[&str] = &[
    "error",
    "errors",
    "failed",
    "failure",
    "401",
    "403",
    "expired",
    "exception",
    "denied",
    "unauthorized",
    "broken",
];
/// Words of an obligation.
const MUST: &[&str] = &[
    "must", "required", "requires", "continue", "proceed", "fix", "respond", "needs",
];
/// What the error has the model do.
const ERRANDS: &[&str] = &[
    "call", "run", "provide", "send", "ask", "read", "enter", "pass", "include", "paste", "supply", "give", "calling",
];
/// What makes the errand dangerous.
const STAKES: &[&str] = &[
    "password",
    "passwords",
    "token",
    "tokens",
    "credentials",
    "secret",
    "secrets",
    "key",
    "keys",
    "ssh",
    "env",
    "config",
    "cookie",
    "cookies",
    "login",
    "bank",
    "banking",
];

/// A made-up error that tells the model what to do: an error word, an
/// obligation and an errand, within two sentences.
fn escalation(r: &Reading<'_>, first: usize, end: usize, hits: &mut Vec<Hit>) {
    let (Some(e), Some(_), Some(_)) = (
        has(r, first, end, ERRORS),
        has(r, first, end, MUST),
        has(r, first, end, ERRANDS),
    ) else {
        return;
    };
    // The errand wants a secret, or a tool the error names.
    let (from, to) = r.span(first, end);
    if has(r, first, end, STAKES).is_none() && identifiers(&r.original[from..to]).is_empty() {
        return;
    }
    let (start, stop) = r.span(e, end);
    let reason = "a made-up error that tells the model what to do next";
    push(hits, Hit::new(Check::FalseError, High, reason, start, stop));
}

/// Words saying the tool no longer works.
const BROKEN: &[&str] = &[
    "deprecated",
    "broken",
    "unavailable",
    "retired",
    "discontinued",
    "obsolete",
];
/// Words before `BROKEN` that make the tool itself the subject.
const SUBJECT: &[&str] = &[
    "tool", "endpoint", "function", "version", "api", "this", "it", "is", "notice", "error",
];
/// "no longer works".
const NO_LONGER: &[&str] = &["longer"];
/// Words sending the model elsewhere.
const REDIRECT: &[&str] = &["use", "call", "switch", "route", "through", "migrate", "instead"];
/// What a detour should never want.
const SECRETS: &[&str] = &[
    "token",
    "password",
    "credentials",
    "key",
    "card",
    "cvc",
    "address",
    "secret",
];

/// "This tool is deprecated, use X instead": info when X is a tool of this
/// server, medium otherwise, high when the detour wants secrets.
fn deprecation(r: &Reading<'_>, first: usize, end: usize, context: &CheckContext, hits: &mut Vec<Hit>) {
    let broken = has(r, first, end, BROKEN).or_else(|| has(r, first, end, NO_LONGER));
    let (Some(b), Some(to)) = (broken, has(r, first, end, REDIRECT)) else {
        return;
    };
    // The tool itself is said to be broken: the word opens the text or a
    // sentence, or follows "this tool is", "the endpoint has been"…
    let opens = b == 0 || r.words[b - 1].is_end();
    let about = r.words[b.saturating_sub(4)..b]
        .iter()
        .any(|w| SUBJECT.contains(&w.text.as_str()));
    if !(opens || about) {
        return;
    }
    let (from, stop) = r.span(to.min(b), end);
    let targets = identifiers(&r.original[from..stop]);
    let own = targets.iter().any(|t| context.is_own_tool(t));
    let (severity, reason) = if has(r, first, end, SECRETS).is_some() {
        (
            High,
            "claims the tool is broken and sends the model, with the user's secrets, elsewhere",
        )
    } else if own {
        (Info, "a deprecation pointing to another tool of the same server")
    } else {
        (
            Medium,
            "claims the tool is broken or deprecated and sends the model to another tool",
        )
    };
    let (start, stop) = r.span(b.min(to), end);
    push(hits, Hit::new(Check::FalseError, severity, reason, start, stop));
}

/// The tool-like names in `text`: words with `_` or `-` or inner capitals,
/// or quoted with backticks.
fn identifiers(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| {
            let w = w.trim_matches('-');
            w.len() > 2
                && (w.contains('_') || w.contains('-') || w.chars().skip(1).any(char::is_uppercase))
                && w.chars().next().is_some_and(char::is_alphabetic)
        })
        .collect()
}
