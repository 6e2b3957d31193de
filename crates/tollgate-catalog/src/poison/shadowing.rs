//! `shadowing` and `tool_discovery`: a definition that reaches beyond its
//! own tool.
//!
//! - Shadowing: text that changes how other tools or servers behave
//!   ("when the send_email tool is used, also bcc…"), rules for every tool
//!   call of the session ("before using any tool, run…", line jumping),
//!   and a sentence that names a tool of another server (or an unknown
//!   `name_like_this` tool) together with an order and a change to make.
//!   A tool of the same server named in an ordinary way ("call
//!   list_allowed_directories first") is not shadowing.
//! - Tool discovery: text that tells the model to enumerate the tools it
//!   has and call them ("list all available tools and call…", "find any
//!   tool whose name contains exec").

use std::sync::LazyLock;

use super::context::CheckContext;
use super::finding::{Check, Hit, Severity, push};
use super::phrase::{Lexicon, Reading, Word, negated, sentence_of};

use Severity::{High, Info, Medium};

const JUMP: &str = "sets a rule for every tool call of the session, not just this tool's";
const SHADOW: &str = "tells the model how other tools or servers should behave";
const DISCOVER: &str = "tells the model to enumerate or call the tools it has";

const SHADOWING_PHRASES: &[(&str, Severity, &str)] = &[
    (
        "before|prior *2 any|every|all|each other? tool|tools|command|commands|call|calls",
        High,
        JUMP,
    ),
    (
        "for|in|to|on *1 all|every|each|any future|subsequent|later|other tool|tools|command|commands|call|calls|request|requests",
        High,
        JUMP,
    ),
    ("whatever|whichever tool|tools you", High, JUMP),
    (
        "every|all|each|any subsequent|future|later|other *1 tool|tools call|calls|call's|invocation|invocations",
        High,
        JUMP,
    ),
    (
        "when|whenever|once|after|before|if *4 tool|tools|server|function *1 is|are|gets|get? used|called|invoked|executed|run|runs|pushes|sends|creates|writes|calls|uses|navigates",
        High,
        SHADOW,
    ),
    (
        "as soon as *2 server|tool is|gets connected|installed|loaded|enabled",
        Medium,
        JUMP,
    ),
    ("before replying|answering|responding", Info, JUMP),
    (
        "every|each|when|whenever|after|before *2 you|user|assistant|agent|model|anyone *1 run|runs|use|uses|call|calls|invoke|invokes|create|creates|send|sends|push|pushes|navigate|navigates|write|writes *4 command|commands|terminal|shell|email|emails|message|messages|issue|issues|git|payment|payments|tool|tools|file|files|code",
        High,
        SHADOW,
    ),
    (
        "this|the server|tool changes|modifies|overrides|alters|affects|replaces *3 how|behaviour|behavior|way|ways",
        High,
        SHADOW,
    ),
    ("tools|tool of *2 other|another server|servers", High, SHADOW),
    (
        "all|every|any *1 emails|email|messages|message|payments|payment|refunds|refund|transfers|transfer|requests|request|queries|query|calls|call|commits|commit|pushes|push|invoices|invoice|orders|order|traffic *5 must|should|have|need|will *2 be? sent|go|forwarded|copied|routed|redirected|mirrored|through|prefixed|suffixed|wrapped",
        High,
        SHADOW,
    ),
    (
        "every|all|any *1 command|commands|file|files|tool|tools|call|calls|request|requests|action|actions *3 in|for|during this|our session|conversation",
        High,
        JUMP,
    ),
    (
        "for|during|throughout the rest of this|the|our session|conversation",
        High,
        JUMP,
    ),
    (
        "whatever|whichever|any tools|tool are|is needed|necessary|required",
        Medium,
        JUMP,
    ),
];

static SHADOWING: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(SHADOWING_PHRASES));

const DISCOVERY_PHRASES: &[(&str, Severity, &str)] = &[
    ("tools|servers|functions you have|can access", Medium, DISCOVER),
    (
        "tool|tools|server|servers|function|functions you|you've have|can? access|call|use|reach|see",
        Medium,
        DISCOVER,
    ),
    (
        "your available|connected|installed|other tool|tools|toolset|toolbox|capabilities",
        Medium,
        DISCOVER,
    ),
    (
        "list|inventory|catalog|catalogue *3 of every|each|all *1 tool|tools",
        Info,
        DISCOVER,
    ),
    (
        "tools|servers|functions *2 available|accessible to you",
        Medium,
        DISCOVER,
    ),
    ("your tool|tools list|toolset", High, DISCOVER),
    (
        "call|invoke|run|try|execute every|each|all *2 tool|tools",
        High,
        DISCOVER,
    ),
    (
        "list|enumerate|listing|enumerating|discover|find *4 tools|servers *8 then|and call|invoke|use|run|execute *2 each|every|all|them|it|one|ones",
        High,
        DISCOVER,
    ),
    (
        "list|enumerate|listing|enumerating *4 all|every|other available|connected|accessible? tools|servers",
        Info,
        DISCOVER,
    ),
    (
        "any|a tool|tools whose name|names|description contains|matches|includes",
        High,
        DISCOVER,
    ),
    (
        "any|whatever|whichever terminal|shell|exec|command|http tool|tools",
        High,
        DISCOVER,
    ),
    (
        "anything|tool|tools|one|ones that can send|read|post|email|execute|run|write|delete|access",
        Info,
        DISCOVER,
    ),
];

static DISCOVERY: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(DISCOVERY_PHRASES));

/// Orders and conditions that make a mention of another tool an errand.
const ORDERS: &[&str] = &[
    "must",
    "should",
    "always",
    "also",
    "never",
    "additionally",
    "instead",
    "every",
    "each",
    "whenever",
    "when",
    "before",
    "after",
    "if",
    "needs",
];
/// What an order may change about another tool's call.
const CHANGES: &[&str] = &[
    "add",
    "append",
    "prepend",
    "forward",
    "send",
    "bcc",
    "cc",
    "copy",
    "double",
    "set",
    "change",
    "replace",
    "include",
    "push",
    "share",
    "label",
    "redirect",
    "route",
    "mirror",
    "upload",
    "open",
    "prefix",
    "attach",
    "delete",
    "remove",
    "added",
    "appended",
    "prepended",
    "forwarded",
    "sent",
    "copied",
    "doubled",
    "changed",
    "replaced",
    "included",
    "pushed",
    "shared",
    "labelled",
    "labeled",
    "redirected",
    "routed",
    "mirrored",
    "uploaded",
    "opened",
    "prefixed",
    "attached",
    "deleted",
    "removed",
    "multiplied",
    "increased",
    "bcc'd",
    "cc'd",
];

pub(super) fn scan(r: &Reading<'_>, own: &str, context: &CheckContext, hits: &mut Vec<Hit>) {
    for (lexicon, check) in [(&*SHADOWING, Check::Shadowing), (&*DISCOVERY, Check::ToolDiscovery)] {
        for m in lexicon.matches(&r.words) {
            if negated(&r.words, m.first) || r.is_quoted(m.first, m.end) || about_itself(&r.words[m.first..m.end]) {
                continue;
            }
            let (start, end) = r.span(m.first, m.end);
            push(hits, Hit::new(check, m.severity, m.reason, start, end));
        }
    }
    for (first, end, name) in foreign_tools(r, own, context) {
        let (s, e) = sentence_of(&r.words, first);
        let sentence = &r.words[s..e];
        let has = |set: &[&str]| sentence.iter().any(|w: &Word| set.contains(&w.text.as_str()));
        if has(ORDERS) && has(CHANGES) {
            let (start, stop) = r.span(first, end);
            let reason = format!("tells the model how another server or its tool ({name}) should be used");
            push(hits, Hit::new(Check::Shadowing, High, reason, start, stop));
        }
    }
}

/// Whether a match speaks of "this tool" or "this server": the
/// definition's own behaviour, not another's.
fn about_itself(words: &[Word]) -> bool {
    words
        .windows(2)
        .any(|w| w[0].text == "this" && matches!(w[1].text.as_str(), "tool" | "tools" | "server" | "function"))
}

/// Mentions of tools that are not this server's: names of other servers'
/// tools, `name_like_this tool` for names the gateway does not know, and
/// another configured server named as one ("the postgres server's query
/// tool"), as (first word, end word, name).
fn foreign_tools(r: &Reading<'_>, own: &str, context: &CheckContext) -> Vec<(usize, usize, String)> {
    let mut out = servers(r, context);
    let text = r.original;
    let tokens = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .filter(|t| !t.is_empty());
    for token in tokens {
        if token == own || context.is_own_tool(token) || !token.contains(['_', '-']) {
            continue;
        }
        let known = context.other_tools.iter().any(|t| t == token);
        let Some(at) = text.find(token) else { continue };
        let followed = text[at + token.len()..]
            .trim_start_matches(['`', '"', '\'', ' '])
            .to_ascii_lowercase()
            .starts_with("tool");
        if !(known || followed) {
            continue;
        }
        let Some((first, end)) = word_range(r, at, at + token.len()) else {
            continue;
        };
        out.push((first, end, token.to_owned()));
    }
    out
}

/// Another configured server named as a server ("postgres server",
/// "the mail MCP", "slack's tools").
fn servers(r: &Reading<'_>, context: &CheckContext) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    for name in &context.other_servers {
        let name = name.to_lowercase();
        for (i, w) in r.words.iter().enumerate() {
            let next = r.words.get(i + 1).map(|n| n.text.as_str());
            let marked = matches!(next, Some("server" | "server's" | "servers" | "mcp" | "tools"));
            if w.text == name && marked {
                out.push((i, i + 2, name.clone()));
            }
        }
    }
    out
}

/// The words of the folded text covering the original bytes `start..end`.
fn word_range(r: &Reading<'_>, start: usize, end: usize) -> Option<(usize, usize)> {
    let inside = |i: usize| {
        let (s, e) = r.span(i, i + 1);
        s < end && e > start
    };
    let first = (0..r.words.len()).find(|i| !r.words[*i].is_end() && inside(*i))?;
    let last = (first..r.words.len())
        .take_while(|i| r.words[*i].is_end() || inside(*i))
        .last()?;
    Some((first, last + 1))
}
