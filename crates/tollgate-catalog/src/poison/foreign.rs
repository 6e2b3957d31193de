//! `foreign_instructions`: the instructions `model_instructions` knows in
//! English, in Spanish, French, German, Portuguese, Italian, Russian,
//! Chinese, Japanese and Korean — setting previous instructions aside,
//! keeping something from the user, acting in secret, and (medium) the
//! conversation history or the system prompt. A small lexicon, matched on
//! the folded text (no accents, lower case): word phrases for the
//! alphabetic languages, substrings for the others. Ordinary documentation
//! in these languages ("获取天气信息") does not match.

use std::sync::LazyLock;

use super::finding::{Check, Hit, Severity, push};
use super::fold::Folded;
use super::phrase::{Lexicon, Reading};

use Severity::{High, Medium};

const ASIDE: &str = "tells the model, in another language, to set its instructions aside";
const HIDE: &str = "tells the model, in another language, to keep something from the user";
const SECRET: &str = "tells the model, in another language, to act in secret";
const HISTORY: &str = "mentions, in another language, the conversation history or the system prompt";

const WORD_PHRASES: &[(&str, Severity, &str)] = &[
    // Spanish, Portuguese
    (
        "ignor~|olvid~|esquec~|esqueca *3 instrucc~|instruc~|indicac~|regla~|regra~ *1 anterior~|previa~|previo~",
        High,
        ASIDE,
    ),
    (
        "no|nao *2 digas|diga|cuentes|cuente|menciones|mencione|informes|informe|conte|conta|diz|avise *2 ~usuario|~usuaria|~utilizador",
        High,
        HIDE,
    ),
    ("sin|sem que *1 usuario|utilizador", High, HIDE),
    ("en|em secreto|segredo", High, SECRET),
    ("secretamente|escondidas", High, SECRET),
    // French
    (
        "ignor~|oubli~ *3 instructions|consignes|regles precedent~|anterieur~",
        High,
        ASIDE,
    ),
    (
        "ne *2 dis|dites|mentionne|mentionnez|informe|informez|revele|revelez|previens|prevenez pas *2 ~utilisateur|~utilisatrice",
        High,
        HIDE,
    ),
    ("en secret", High, SECRET),
    ("secretement|l'insu", High, SECRET),
    // German
    (
        "ignorier~|vergiss|vergessen *4 vorherig~|bisherig~|obig~|fruh~|vorig~|alle anweisung~|instruktion~|regeln|vorgaben",
        High,
        ASIDE,
    ),
    (
        "sag~|erzahl~|verrat~|teil~ *3 benutzer~|nutzer~|anwender~ nicht|nichts",
        High,
        HIDE,
    ),
    ("heimlich|insgeheim|unbemerkt", High, SECRET),
    ("gesprachsverlauf~|chatverlauf~|systemprompt~", Medium, HISTORY),
    // Italian
    ("ignora|ignorare|dimentica *3 istruzion~|regole precedent~", High, ASIDE),
    (
        "non *1 dire|dirlo|dirglielo|informare|menzionare *2 ~utente",
        High,
        HIDE,
    ),
    ("segretamente|nascosto|segreto", High, SECRET),
    ("cronologia della chat|conversazione", Medium, HISTORY),
    // Russian (й folds to и, ё to е)
    (
        "игнориру~|забуд~|забудь *3 предыдущ~|прежн~|все инструкц~|указан~|правил~",
        High,
        ASIDE,
    ),
    (
        "не *1 говори|сообщаи|рассказываи|говорите|сообщаите|упоминаи *2 пользовател~",
        High,
        HIDE,
    ),
    ("таино|втаине|незаметно", High, SECRET),
    ("истори~ переписк~|диалог~|чат~", Medium, HISTORY),
    ("системн~ промпт~", Medium, HISTORY),
];

static WORDS: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::new(WORD_PHRASES));

/// Substrings for languages written without spaces between words.
const SUBSTRINGS: &[(&str, Severity, &str)] = &[
    ("忽略之前", High, ASIDE),
    ("忽略以上", High, ASIDE),
    ("忽略先前", High, ASIDE),
    ("忽略所有", High, ASIDE),
    ("忽略前面", High, ASIDE),
    ("无视之前", High, ASIDE),
    ("不要告诉用户", High, HIDE),
    ("不要告知用户", High, HIDE),
    ("不要让用户知道", High, HIDE),
    ("别告诉用户", High, HIDE),
    ("秘密地", High, SECRET),
    ("悄悄", High, SECRET),
    ("偷偷", High, SECRET),
    ("对话记录", Medium, HISTORY),
    ("聊天记录", Medium, HISTORY),
    ("系统提示", Medium, HISTORY),
    ("指示を無視", High, ASIDE),
    ("以前の指示", High, ASIDE),
    ("ユーザーに伝えない", High, HIDE),
    ("ユーザーに言わない", High, HIDE),
    ("ユーザーには言わない", High, HIDE),
    ("ユーザーに知らせない", High, HIDE),
    ("こっそり", High, SECRET),
    ("秘密裏に", High, SECRET),
    ("内緒で", High, SECRET),
    ("会話の履歴", Medium, HISTORY),
    ("システムプロンプト", Medium, HISTORY),
    ("지시를 무시", High, ASIDE),
    ("이전 지시", High, ASIDE),
    ("사용자에게 알리지", High, HIDE),
    ("사용자에게 말하지", High, HIDE),
    ("몰래", High, SECRET),
    ("대화 기록", Medium, HISTORY),
];

/// The substrings, folded as the text is.
static FOLDED: LazyLock<Vec<(String, Severity, &'static str)>> = LazyLock::new(|| {
    SUBSTRINGS
        .iter()
        .map(|(s, severity, reason)| (Folded::prose(s).text, *severity, *reason))
        .collect()
});

pub(super) fn scan(r: &Reading<'_>, hits: &mut Vec<Hit>) {
    for m in WORDS.matches(&r.words) {
        let (start, end) = r.span(m.first, m.end);
        push(
            hits,
            Hit::new(Check::ForeignInstructions, m.severity, m.reason, start, end),
        );
    }
    for (needle, severity, reason) in FOLDED.iter() {
        for (at, found) in r.folded.text.match_indices(needle.as_str()) {
            let (start, end) = r.folded_span(at, at + found.len());
            push(
                hits,
                Hit::new(Check::ForeignInstructions, *severity, *reason, start, end),
            );
        }
    }
}
