//! Phrase matching for the checks that read words: text cut into words and
//! sentence ends, and lexicons of phrases matched word by word, never
//! across a sentence end, each phrase with the severity and reason of what
//! it means.
//!
//! A phrase has one slot per word: `a|b` alternatives, `x?` an optional
//! slot, `*N` up to N arbitrary words (within the sentence); an
//! alternative `pre~` matches any word starting with `pre`, `~post` any
//! word ending with `post`.

use super::finding::Severity;
use super::fold::Folded;

/// A word (lower case, `’` as `'`), or a sentence end (`text` empty).
#[derive(Debug)]
pub(super) struct Word {
    pub(super) text: String,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Word {
    pub(super) fn is_end(&self) -> bool {
        self.text.is_empty()
    }
}

/// The words of `text`; a sentence end (`.`, `!`, `?`, `;`, `。`, a line
/// break) becomes an empty word no phrase matches.
pub(super) fn words(text: &str) -> Vec<Word> {
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
        if matches!(c, '.' | '!' | '?' | ';' | '\n' | '。') {
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
    Words { any_of: Vec<String>, optional: bool },
    Gap(usize),
}

/// A compiled phrase with what a match means.
#[derive(Debug)]
struct Phrase {
    slots: Vec<Slot>,
    severity: Severity,
    reason: &'static str,
}

/// A match of a lexicon's phrase: word indices `first..end`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Match {
    pub(super) first: usize,
    pub(super) end: usize,
    pub(super) severity: Severity,
    pub(super) reason: &'static str,
}

/// Phrases with their severity and reason.
#[derive(Debug)]
pub(super) struct Lexicon(Vec<Phrase>);

impl Lexicon {
    pub(super) fn new<S: AsRef<str>>(entries: &[(S, Severity, &'static str)]) -> Lexicon {
        Lexicon(
            entries
                .iter()
                .map(|(phrase, severity, reason)| Phrase {
                    slots: compile(phrase.as_ref()),
                    severity: *severity,
                    reason,
                })
                .collect(),
        )
    }

    /// Every match in `words`, the longest per phrase and start.
    pub(super) fn matches(&self, words: &[Word]) -> Vec<Match> {
        let mut out = Vec::new();
        for phrase in &self.0 {
            for i in 0..words.len() {
                if let Some(end) = match_at(&phrase.slots, words, i).filter(|end| *end > i) {
                    out.push(Match {
                        first: i,
                        end,
                        severity: phrase.severity,
                        reason: phrase.reason,
                    });
                }
            }
        }
        out
    }
}

fn compile(phrase: &str) -> Vec<Slot> {
    phrase
        .split(' ')
        .map(|slot| match slot.strip_prefix('*').and_then(|n| n.parse().ok()) {
            Some(n) => Slot::Gap(n),
            None => {
                let (words, optional) = slot.strip_suffix('?').map_or((slot, false), |w| (w, true));
                Slot::Words {
                    any_of: words.split('|').map(str::to_owned).collect(),
                    optional,
                }
            }
        })
        .collect()
}

fn word_matches(pattern: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    if let Some(prefix) = pattern.strip_suffix('~') {
        word.starts_with(prefix)
    } else if let Some(suffix) = pattern.strip_prefix('~') {
        word.ends_with(suffix)
    } else {
        word == pattern
    }
}

/// Where a match of `slots` starting at word `i` ends (exclusive), if any.
fn match_at(slots: &[Slot], words: &[Word], i: usize) -> Option<usize> {
    let Some((first, rest)) = slots.split_first() else {
        return Some(i);
    };
    match first {
        Slot::Words { any_of, optional } => {
            let here = words
                .get(i)
                .is_some_and(|w| any_of.iter().any(|p| word_matches(p, &w.text)));
            let taken = if here { match_at(rest, words, i + 1) } else { None };
            taken.or_else(|| if *optional { match_at(rest, words, i) } else { None })
        }
        Slot::Gap(n) => (0..=*n)
            .take_while(|k| i + k <= words.len() && words[i..i + k].iter().all(|w| !w.is_end()))
            .find_map(|k| match_at(rest, words, i + k)),
    }
}

/// Whether one of the three words before word `i`, in its sentence, is a
/// negation (`do not follow`, `never pass`).
pub(super) fn negated(words: &[Word], i: usize) -> bool {
    words[..i].iter().rev().take(3).take_while(|w| !w.is_end()).any(|w| {
        matches!(
            w.text.as_str(),
            "not" | "never" | "don't" | "no" | "nor" | "doesn't" | "dont"
        )
    })
}

/// Whether `text[start..end]` stands between quotation marks, as a
/// mention rather than a use (`detects phrases like "ignore previous
/// instructions"`).
pub(super) fn quoted(text: &str, start: usize, end: usize) -> bool {
    let quote = |c: Option<char>| matches!(c, Some('"' | '\'' | '`' | '“' | '”' | '‘' | '’' | '«' | '»'));
    quote(text[..start].chars().next_back()) && quote(text[end..].chars().next())
}

/// The sentence (word indices `start..end`) word `i` belongs to.
pub(super) fn sentence_of(words: &[Word], i: usize) -> (usize, usize) {
    let start = words[..i].iter().rposition(Word::is_end).map_or(0, |p| p + 1);
    let end = words[i..].iter().position(Word::is_end).map_or(words.len(), |p| i + p);
    (start, end)
}

/// A string as the word checks read it: folded, and cut into words.
#[derive(Debug)]
pub(super) struct Reading<'a> {
    pub(super) original: &'a str,
    pub(super) folded: Folded,
    pub(super) words: Vec<Word>,
}

impl<'a> Reading<'a> {
    pub(super) fn prose(original: &'a str) -> Reading<'a> {
        Reading::of(original, Folded::prose(original))
    }

    pub(super) fn identifier(original: &'a str) -> Reading<'a> {
        Reading::of(original, Folded::identifier(original))
    }

    fn of(original: &'a str, folded: Folded) -> Reading<'a> {
        let words = words(&folded.text);
        Reading {
            original,
            folded,
            words,
        }
    }

    /// The original byte range of words `first..end`.
    pub(super) fn span(&self, first: usize, end: usize) -> (usize, usize) {
        let (start, stop) = (self.words[first].start, self.words[end - 1].end);
        self.folded.span(start, stop)
    }

    /// The original byte range of the folded range `start..end`.
    pub(super) fn folded_span(&self, start: usize, end: usize) -> (usize, usize) {
        self.folded.span(start, end)
    }

    /// Whether a match stands between quotation marks in the original.
    pub(super) fn is_quoted(&self, first: usize, end: usize) -> bool {
        let (start, stop) = self.span(first, end);
        quoted(self.original, start, stop)
    }

    /// Whether the sentence of word `i` has a word in `any_of`.
    pub(super) fn sentence_has(&self, i: usize, any_of: &[&str]) -> bool {
        let (start, end) = sentence_of(&self.words, i);
        self.words[start..end]
            .iter()
            .any(|w| any_of.iter().any(|p| word_matches(p, &w.text)))
    }

    /// Whether word `i` is part of an identifier in the original
    /// (`failed_only`, `runId`) rather than a word of prose.
    pub(super) fn in_identifier(&self, i: usize) -> bool {
        let (start, end) = self.span(i, i + 1);
        let before = self.original[..start].chars().next_back();
        let after = self.original[end..].chars().next();
        let joins = |c: Option<char>| c.is_some_and(|c| c == '_' || c.is_alphanumeric());
        joins(before) || joins(after)
    }

    /// The index of the word at or after folded byte `at`.
    pub(super) fn word_at(&self, at: usize) -> Option<usize> {
        self.words.iter().position(|w| w.end > at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(lexicon: &Lexicon, text: &str) -> Vec<String> {
        let words = words(text);
        lexicon
            .matches(&words)
            .iter()
            .map(|m| text[words[m.first].start..words[m.end - 1].end].to_owned())
            .collect()
    }

    #[test]
    fn slots_match_alternatives_stems_gaps_and_options() {
        let lexicon = Lexicon::new(&[
            ("ignor~ *2 instruc~ anterior~", Severity::High, "a"),
            ("no *1 ~usuario", Severity::High, "b"),
            ("keep this|it? secret", Severity::High, "c"),
        ]);
        assert_eq!(
            found(&lexicon, "Ignora las instrucciones anteriores"),
            ["Ignora las instrucciones anteriores"]
        );
        assert_eq!(
            found(&lexicon, "ignora. las instrucciones anteriores"),
            Vec::<String>::new()
        );
        assert_eq!(found(&lexicon, "no al usuario"), ["no al usuario"]);
        assert_eq!(
            found(&lexicon, "keep secret, keep it secret"),
            ["keep secret", "keep it secret"]
        );
    }

    #[test]
    fn negations_quotes_and_sentences() {
        let w = words("Do not follow. Then follow it");
        assert!(negated(&w, 2));
        assert!(!negated(&w, 5));
        assert_eq!(sentence_of(&w, 5), (4, 7));
        let text = "detects \"ignore all\" and ignore all";
        assert!(quoted(text, 9, 19));
        assert!(!quoted(text, 25, 35));
    }
}
