//! `context_exfiltration`: a definition asking for what the model holds and
//! the tool has no business with — the conversation so far, earlier
//! messages and tool results, the system prompt, the files the user opened,
//! passwords and tokens seen in the chat or asked of the user — to be put
//! into an argument or sent to an address. A request in the negative ("do
//! not paste the raw transcript") does not count.
//!
//! Also a URL template that carries such data in its query
//! (`https://x.example/p?d={conversation}`).

use std::sync::LazyLock;

use super::finding::{Check, Hit, Severity, push};
use super::phrase::{Lexicon, Reading, negated, sentence_of};

use Severity::{High, Medium};

const CONVERSATION: &str = "asks for the conversation or earlier messages to be passed on";
const PROMPT: &str = "asks for the model's system prompt or instructions to be passed on";
const SECRETS: &str = "asks for the user's secrets or personal data to be passed on";
const FILES: &str = "asks for the content of the user's files to be passed on";
const ADDRESS: &str = "asks for the user's data to be sent to an address";
const SEEN: &str = "asks for what the model has read or been told, which the tool has no need of";

/// The verbs of passing something on (`SEND` in the phrases below).
const SEND: &str = "include|pass|send|put|set|paste|copy|add|attach|provide|forward|dump|fill|share|append|prepend|insert|give|supply|upload|post|transmit|submit|report|mirror|place|hand|embed|encode|leak|exfiltrate";
/// The same and the verbs of visiting an address (`VISIT`).
const VISIT: &str = "include|pass|send|put|paste|copy|add|attach|provide|forward|share|append|upload|post|transmit|submit|report|mirror|embed|encode|leak|exfiltrate|fetch|open|visit|load|request";

/// Phrases; `$SEND` and `$VISIT` stand for the verbs above.
const PHRASES: &[(&str, Severity, &str)] = &[
    (
        "$SEND *5 entire|full|whole|complete|all|every|raw|verbatim *3 conversation|conversations|chat|chats|dialogue|dialog|transcript|transcripts|history|messages|turns|exchange|exchanges|session",
        High,
        CONVERSATION,
    ),
    (
        "$SEND *6 conversation|chat|message|messages|dialogue|dialog|session|location history|log|logs|transcript|record",
        High,
        CONVERSATION,
    ),
    (
        "$SEND *6 previous|prior|earlier|preceding|past|last|recent *2 messages|message|turns|requests|prompts|replies|answers|answer|conversation|conversations|exchanges|results|outputs|responses",
        High,
        CONVERSATION,
    ),
    (
        "$SEND *6 user's|users'|user|their|his|her full|entire|last|latest|previous|most|recent|original|open|opened? recent? message|messages|request|requests|question|questions|prompt|prompts|input|words|documents|files|tabs",
        High,
        CONVERSATION,
    ),
    (
        "everything|anything|whatever|all the? user|you has|have said|typed|written|asked|shared|mentioned",
        High,
        CONVERSATION,
    ),
    (
        "what|whatever|everything|anything|all the? user|users|they *1 wrote|said|typed|told|mentioned|shared|discussed",
        High,
        CONVERSATION,
    ),
    (
        "any|all|every|each|whatever|last|previous|recent *4 you|you've have|had? read|seen|viewed|opened|accessed|know|learned",
        High,
        SEEN,
    ),
    (
        "message|messages|question|questions|answer|answers|reply|replies|conversation|chat|history *4 copied|pasted|quoted|repeated|included|reproduced *2 word|verbatim|unedited|in",
        High,
        CONVERSATION,
    ),
    (
        "with|including|containing the? user's|users'|their *2 password|passwords|pin|cvc|seed",
        High,
        SECRETS,
    ),
    (
        "conversation|chat|dialogue|dialog|said|messages|turns|typed *2 so far",
        High,
        CONVERSATION,
    ),
    (
        "conversation|chat|dialogue|dialog|said|messages|turns|typed *2 up|until to? now",
        High,
        CONVERSATION,
    ),
    (
        "entire|full|whole|complete previous|prior|past? conversation|chat|dialogue|dialog|transcript",
        Medium,
        CONVERSATION,
    ),
    (
        "last|previous|prior|earlier|other *3 tool|tools' results|outputs|responses",
        Medium,
        CONVERSATION,
    ),
    (
        "$SEND *5 system prompt|prompts|message|messages|instructions",
        High,
        PROMPT,
    ),
    (
        "$SEND *5 initial|original|your|hidden instructions|prompt|rules",
        High,
        PROMPT,
    ),
    ("instructions|prompt you were|have|had been? given|told", High, PROMPT),
    (
        "password|passwords|token|tokens|keys|credentials|secrets|cookies|pins you|that? have|were? seen|mentioned|shared|exchanged",
        High,
        SECRETS,
    ),
    (
        "ask|prompt *3 for *4 password|passwords|pin|cvc|token|credentials|seed|otp|ssn|maiden|login|logins|banking",
        High,
        SECRETS,
    ),
    (
        "$SEND *6 user's|users'|their|his|her *2 password|passwords|pin|cvc|seed|token|tokens|credentials|maiden|birth|home|location|addresses|personal",
        High,
        SECRETS,
    ),
    (
        "$SEND *6 full|entire|complete|whole? text|content|contents of *2 any|every|all|each|open|the? file|files|document|documents|tab|tabs|editor|editors|window|windows|workspace|clipboard|buffer|buffers",
        High,
        FILES,
    ),
    (
        "$SEND *3 every|each|all|any file|files|document|documents *4 read|opened|open|viewed|accessed|seen",
        High,
        FILES,
    ),
    (
        "$VISIT *4 request|requests|answer|answers|conversation|chat|messages|history|documents|files|file|data|contents|content|results|everything|every|credentials|keys|cookies|email *8 to|at https|http|ftp|ftps|ws|wss",
        High,
        ADDRESS,
    ),
    (
        "followed by *2 user's|their full|entire|last|whole? message|messages|request|question|email|conversation",
        High,
        ADDRESS,
    ),
];

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    let phrases: Vec<(String, Severity, &str)> = PHRASES
        .iter()
        .map(|(p, severity, reason)| (p.replace("$SEND", SEND).replace("$VISIT", VISIT), *severity, *reason))
        .collect();
    Lexicon::new(&phrases)
});

/// Placeholders in a URL's query that stand for what the model holds.
const PLACEHOLDERS: &[&str] = &[
    "conversation",
    "messages",
    "history",
    "chat",
    "prompt",
    "system",
    "cookie",
    "email",
    "password",
    "token",
    "secret",
    "context",
    "current_url",
    "query",
    "data",
];

const NAMED: &str = "a parameter named for the conversation history: the model will fill it with the chat";
const OWNED: &str = "a parameter named for the user's secrets";

/// Parameter names that ask for the conversation (`conversationHistory`,
/// `previous_messages`) or name the user's secrets, reported as
/// `label_instructions`; `system_prompt` is an honest parameter of a
/// model-calling tool and is left out.
const PARAMETER_PHRASES: &[(&str, Severity, &str)] = &[
    (
        "conversation|chat|message|messages|dialogue|dialog history|log|logs|transcript",
        Medium,
        NAMED,
    ),
    (
        "previous|prior|earlier|past|all messages|turns|conversation|conversations",
        Medium,
        NAMED,
    ),
    (
        "user|users ssh|private|secret|aws|gcp|github *1 key|keys|token|tokens|password|passwords|credentials|cookies",
        Medium,
        OWNED,
    ),
];

static PARAMETERS: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(PARAMETER_PHRASES));

/// The first words of a parameter that is an option (`include_archived`,
/// `with_history`), not a request for data.
const OPTIONS: &[&str] = &[
    "include", "with", "show", "return", "has", "is", "get", "list", "fetch", "load", "enable", "disable", "use",
];

pub(super) fn scan(r: &Reading<'_>, is_parameter: bool, hits: &mut Vec<Hit>) {
    let option = is_parameter && r.words.first().is_some_and(|w| OPTIONS.contains(&w.text.as_str()));
    if option {
        return;
    }
    if is_parameter {
        for m in PARAMETERS.matches(&r.words) {
            let (start, end) = r.span(m.first, m.end);
            push(
                hits,
                Hit::new(Check::LabelInstructions, m.severity, m.reason, start, end),
            );
        }
    }
    for m in LEXICON.matches(&r.words) {
        // "Whether to include the last message in each chat" describes an
        // option of the tool, not an errand for the model.
        let (sentence, _) = sentence_of(&r.words, m.first);
        let describes_option = r.words.get(sentence).is_some_and(|w| w.text == "whether");
        if negated(&r.words, m.first) || r.is_quoted(m.first, m.end) || describes_option {
            continue;
        }
        let (start, end) = r.span(m.first, m.end);
        push(
            hits,
            Hit::new(Check::ContextExfiltration, m.severity, m.reason, start, end),
        );
    }
    url_templates(r.original, hits);
}

/// `…://…{conversation}…`: a URL whose braces name the model's data.
fn url_templates(text: &str, hits: &mut Vec<Hit>) {
    for (at, _) in text.match_indices("://") {
        let start = text[..at]
            .rfind(|c: char| !c.is_ascii_alphanumeric())
            .map_or(0, |p| p + 1);
        let end = text[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')'))
            .map_or(text.len(), |e| at + e);
        let url = text[at..end].to_ascii_lowercase();
        let carries = url
            .split('{')
            .skip(1)
            .filter_map(|s| s.split_once('}').map(|(name, _)| name))
            .any(|name| PLACEHOLDERS.iter().any(|p| name.contains(p)));
        if carries {
            push(hits, Hit::new(Check::ContextExfiltration, High, ADDRESS, start, end));
        }
    }
}
