//! Text to index terms, the same way for tool definitions and for queries:
//! words split on anything that is not a letter or digit and on
//! `snake_case`, `kebab-case` and `camelCase` boundaries, lowercased, short
//! English stop words and single letters dropped, and a light suffix
//! stripping so that plural, `-ing`, `-ed` and superlative forms meet
//! their stem (`issues`, `issue` → `issu`; `creating`, `created`, `create`
//! → `creat`; `policies` → `policy`; `slowest` → `slow`).
//!
//! The stemmer is deliberately small: it only has to map a word and its
//! inflections to the same term, never to produce a dictionary word, and
//! it leaves non-ASCII words as they are. Letters and digits stay together
//! (`s3`, `ec2`, `oauth2`).

/// Words that carry no meaning for finding a tool.
pub(super) const STOP_WORDS: &[&str] = &[
    "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by", "can", "could",
    "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "here", "him", "his", "how", "if", "in",
    "into", "is", "it", "its", "just", "me", "my", "now", "of", "on", "or", "our", "please", "she", "should", "so",
    "some", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too",
    "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your",
];

/// Calls `emit` with each index term of `text`, in order.
pub(super) fn terms(text: &str, mut emit: impl FnMut(&str)) {
    let mut word = String::new();
    let mut stemmed = String::new();
    words(text, |raw| {
        word.clear();
        word.extend(raw.iter().flat_map(|c| c.to_lowercase()));
        if is_noise(&word) {
            return;
        }
        stemmed.clear();
        stemmed.push_str(&word);
        stem(&mut stemmed);
        emit(&stemmed);
    });
}

fn is_noise(word: &str) -> bool {
    let mut chars = word.chars();
    let single_letter = matches!((chars.next(), chars.next()), (Some(c), None) if c.is_alphabetic());
    single_letter || STOP_WORDS.binary_search(&word).is_ok()
}

/// Calls `emit` with each word of `text` as written: runs of letters and
/// digits, cut where a lowercase letter or digit meets an uppercase one
/// (`createIssue`) and before the last capital of a run followed by a
/// lowercase letter (`HTTPServer` → `HTTP`, `Server`).
fn words(text: &str, mut emit: impl FnMut(&[char])) {
    let chars: Vec<char> = text.chars().collect();
    let mut start = 0;
    for i in 0..chars.len() {
        let c = chars[i];
        if !c.is_alphanumeric() {
            if start < i {
                emit(&chars[start..i]);
            }
            start = i + 1;
            continue;
        }
        if i > start && starts_word(chars[i - 1], c, chars.get(i + 1).copied()) {
            emit(&chars[start..i]);
            start = i;
        }
    }
    if start < chars.len() {
        emit(&chars[start..]);
    }
}

/// Whether `c`, following `prev` inside a run of letters and digits, begins
/// a new word.
fn starts_word(prev: char, c: char, next: Option<char>) -> bool {
    if !c.is_uppercase() {
        return false;
    }
    if prev.is_lowercase() || prev.is_numeric() {
        return true;
    }
    prev.is_uppercase() && next.is_some_and(char::is_lowercase)
}

/// Strips plural, `-ing`/`-ed`/`-est` and final-`e` suffixes from a
/// lowercase word in place (not `-uest`: `request` stays whole).
pub(super) fn stem(word: &mut String) {
    if !word.is_ascii() || word.len() < 3 {
        return;
    }
    strip_plural(word);
    strip_verb_suffix(word);
    if word.len() > 3 && word.ends_with('e') {
        word.pop();
    }
}

fn strip_plural(word: &mut String) {
    if word.ends_with("sses") {
        word.truncate(word.len() - 2);
    } else if word.len() > 4 && word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if word.ends_with('s') && !["ss", "us", "is"].iter().any(|s| word.ends_with(s)) {
        word.pop();
    }
}

fn strip_verb_suffix(word: &mut String) {
    if word.len() > 4 && word.ends_with("ied") {
        word.truncate(word.len() - 3);
        word.push('y');
        return;
    }
    let superlative = word.ends_with("est") && !word.ends_with("uest");
    let cut = if word.ends_with("ing") || superlative {
        3
    } else if word.ends_with("ed") && !word.ends_with("eed") {
        2
    } else {
        return;
    };
    let stem = &word[..word.len() - cut];
    if stem.len() < 3 || !stem.bytes().any(is_vowel) {
        return;
    }
    word.truncate(stem.len());
    let bytes = word.as_bytes();
    let n = bytes.len();
    if bytes[n - 1] == bytes[n - 2] && !is_vowel(bytes[n - 1]) && !b"lsz".contains(&bytes[n - 1]) {
        word.pop();
    }
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}
