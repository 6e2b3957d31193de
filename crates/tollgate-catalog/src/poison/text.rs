//! `model_instructions` and `sensitive_path`: words addressed to the model
//! (a fixed list of phrases, matched word by word and case-insensitively,
//! never across a sentence end), tags and chat-template markers that frame
//! text as a system message, hidden HTML comments, and the names of secrets
//! on the host.

use std::sync::LazyLock;

use super::{Check, Hit};

/// Phrases, one slot per word: `a|b` alternatives, `x?` optional, `*N` up
/// to N arbitrary words (within the sentence).
const PHRASES: &[&str] = &[
    "ignore|disregard|forget|override|bypass|overrule *2 previous|prior|above|earlier|preceding|former|existing|original|system|all|any|other instructions|instruction|prompts|prompt|directions|directives|rules|guidelines|guidance|messages|context",
    "disregard",
    "you must",
    "you are required to",
    "you should always|never|first",
    "do|does not tell|inform|notify|alert|mention|reveal|show|disclose|let *3 user|users|human|humans|operator",
    "don't|doesn't|never tell|inform|notify|alert|mention|reveal|show|disclose|let *3 user|users|human|humans|operator",
    "without telling|informing|notifying|alerting|asking|showing|mentioning|letting *3 user|users|human|humans|operator",
    "hide|conceal *4 from *2 user|users|human|humans|operator",
    "keep this|it|these|that secret|hidden|confidential",
    "system prompt|prompts|instructions",
    "note|message to|for the? ai|assistant|model|llm|agent|claude|gpt|chatgpt|copilot",
    "attention ai|assistant|model|llm|agent",
    "you are now",
    "from now on",
    "new|real|actual|true|hidden|secret instructions|instruction|directive|directives",
    "always use|call|invoke|prefer|choose this|these tool|tools|function|server",
    "instead of *2 other|another|any tool|tools|server|servers|function",
    "do|does not use|call|invoke *2 other|another|any tool|tools|server|servers",
    "never|don't use|call|invoke *2 other|another|any tool|tools|server|servers",
];

/// Tag names (lowercase, `-` and `_` removed) that frame text for the model.
const TAGS: &[&str] = &[
    "important",
    "system",
    "systemprompt",
    "systemmessage",
    "instructions",
    "instruction",
    "hidden",
    "admin",
    "critical",
    "assistant",
    "ai",
    "notetoai",
    "override",
    "jailbreak",
];

/// Chat-template markers (lowercase).
const MARKERS: &[&str] = &["[inst]", "[/inst]", "<<sys>>", "<</sys>>", "[system]", "[/system]"];

/// Secrets on the host (lowercase); `.env` is matched as a whole word.
const SECRETS: &[&str] = &[
    "~/.ssh",
    ".ssh/",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "authorized_keys",
    "/etc/passwd",
    "/etc/shadow",
    "~/.aws",
    ".aws/credentials",
    ".config/gcloud",
    ".azure/",
    ".kube/config",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    "mcp.json",
    "claude_desktop_config",
    "wallet.dat",
    "cookies.sqlite",
    ".bash_history",
    ".zsh_history",
];

pub(super) fn scan(text: &str, hits: &mut Vec<Hit>) {
    let lower = text.to_ascii_lowercase();
    let words = words(text);
    for pattern in PATTERNS.iter() {
        for i in 0..words.len() {
            if let Some(end) = match_at(pattern, &words, i) {
                push(
                    hits,
                    Hit::new(Check::ModelInstructions, words[i].start, words[end - 1].end),
                );
            }
        }
    }
    tags(&lower, hits);
    for marker in MARKERS {
        for (at, m) in lower.match_indices(marker) {
            push(hits, Hit::new(Check::ModelInstructions, at, at + m.len()));
        }
    }
    for (at, _) in lower.match_indices("<!--") {
        let end = lower[at..].find("-->").map_or(lower.len(), |e| at + e + 3);
        push(hits, Hit::new(Check::ModelInstructions, at, end));
    }
    secrets(&lower, hits);
}

/// Add `hit`, merged with a hit of the same check it overlaps or touches
/// (`~/.ssh/` and `id_rsa` in `~/.ssh/id_rsa` are one finding).
fn push(hits: &mut Vec<Hit>, hit: Hit) {
    for h in hits.iter_mut().filter(|h| h.check == hit.check) {
        if hit.start <= h.end && h.start <= hit.end {
            h.start = h.start.min(hit.start);
            h.end = h.end.max(hit.end);
            return;
        }
    }
    hits.push(hit);
}

/// `<important>`, `</SYSTEM>`, `<system-prompt foo="x">`, `<|im_start|>`.
fn tags(lower: &str, hits: &mut Vec<Hit>) {
    for (at, _) in lower.match_indices('<') {
        let rest = &lower[at + 1..];
        if let Some(inner) = rest.strip_prefix('|') {
            let name_len = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            if name_len > 0 && inner[name_len..].starts_with("|>") {
                push(hits, Hit::new(Check::ModelInstructions, at, at + 1 + 1 + name_len + 2));
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
        if let Some(close) = closes.filter(|_| TAGS.contains(&name.as_str())) {
            let end = lower.len() - after.len() + close + 1;
            push(hits, Hit::new(Check::ModelInstructions, at, end));
        }
    }
}

fn secrets(lower: &str, hits: &mut Vec<Hit>) {
    for secret in SECRETS {
        for (at, m) in lower.match_indices(secret) {
            push(hits, Hit::new(Check::SensitivePath, at, at + m.len()));
        }
    }
    for (at, _) in lower.match_indices(".env") {
        let before = lower[..at].chars().next_back();
        let after = lower[at + 4..].chars().next();
        let word_char = |c: char| c.is_alphanumeric() || c == '_';
        if !before.is_some_and(word_char) && !after.is_some_and(word_char) {
            push(hits, Hit::new(Check::SensitivePath, at, at + 4));
        }
    }
}

/// A word, or a sentence end (`text` empty).
#[derive(Debug)]
struct Word {
    text: String,
    start: usize,
    end: usize,
}

/// The words of `text`, lowercase, with `’` as `'`; a sentence end (`.`,
/// `!`, `?`, `;`, a line break) becomes an empty word no phrase matches.
fn words(text: &str) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut current: Option<Word> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_alnum = chars.peek().is_some_and(|(_, n)| n.is_alphanumeric());
        let inner_quote = matches!(c, '\'' | '\u{2019}') && current.is_some() && next_alnum;
        if c.is_alphanumeric() || inner_quote {
            let w = current.get_or_insert_with(|| Word {
                text: String::new(),
                start: i,
                end: i,
            });
            w.text.extend(if inner_quote { '\'' } else { c }.to_lowercase());
            w.end = i + c.len_utf8();
            continue;
        }
        out.extend(current.take());
        if matches!(c, '.' | '!' | '?' | ';' | '\n') {
            out.push(Word {
                text: String::new(),
                start: i,
                end: i,
            });
        }
    }
    out.extend(current);
    out
}

/// One slot of a phrase.
#[derive(Debug)]
enum Slot {
    Words { any_of: Vec<&'static str>, optional: bool },
    Gap(usize),
}

static PATTERNS: LazyLock<Vec<Vec<Slot>>> = LazyLock::new(|| PHRASES.iter().map(|p| compile(p)).collect());

fn compile(phrase: &'static str) -> Vec<Slot> {
    phrase
        .split(' ')
        .map(|slot| match slot.strip_prefix('*').and_then(|n| n.parse().ok()) {
            Some(n) => Slot::Gap(n),
            None => {
                let (words, optional) = slot.strip_suffix('?').map_or((slot, false), |w| (w, true));
                Slot::Words {
                    any_of: words.split('|').collect(),
                    optional,
                }
            }
        })
        .collect()
}

/// Where a match of `slots` starting at word `i` ends (exclusive), if any.
fn match_at(slots: &[Slot], words: &[Word], i: usize) -> Option<usize> {
    let Some((first, rest)) = slots.split_first() else {
        return Some(i);
    };
    match first {
        Slot::Words { any_of, optional } => {
            let here = words.get(i).is_some_and(|w| any_of.contains(&w.text.as_str()));
            let taken = if here { match_at(rest, words, i + 1) } else { None };
            taken.or_else(|| if *optional { match_at(rest, words, i) } else { None })
        }
        Slot::Gap(n) => (0..=*n)
            .take_while(|k| words[i..].iter().take(*k).all(|w| !w.text.is_empty()) && i + k <= words.len())
            .find_map(|k| match_at(rest, words, i + k)),
    }
}
