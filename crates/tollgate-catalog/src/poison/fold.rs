//! Text as the word checks read it, whatever disguise it wears: invisible
//! and control characters dropped, compatibility forms folded (NFKD:
//! full-width `ｉｇｎｏｒｅ`, styled `𝐢𝐠𝐧𝐨𝐫𝐞`, ligatures), accents and other
//! combining marks stripped, lower case, and look-alike Cyrillic, Greek and
//! Armenian letters read as the Latin ones they imitate (`іgnоre`), in
//! words that mix them with Latin letters or in text that is mostly Latin.
//! Every folded byte remembers the character it came from, so that a match
//! in the folded text is reported at its place in the original.
//!
//! Identifiers (a tool's name, a parameter's name) are split into words
//! first: `_`, `-`, `.`, `/` and `:` become spaces, and so does each step
//! from a lower-case letter to an upper-case one (`sendAllMessages`).

use unicode_normalization::char::{decompose_compatible, is_combining_mark};

use super::unicode::is_hidden;

/// Folded text and, for each of its bytes, the byte range of the original
/// character it came from.
#[derive(Debug, Clone)]
pub(super) struct Folded {
    pub(super) text: String,
    origin: Vec<(usize, usize)>,
}

/// One folded character and its origin.
type Unit = (char, (usize, usize));

impl Folded {
    /// Prose (a description, a title, a value).
    pub(super) fn prose(text: &str) -> Folded {
        let mut units = Vec::with_capacity(text.len());
        for (i, c) in text.char_indices() {
            fold_char(c, (i, i + c.len_utf8()), &mut units);
        }
        Folded::from_units(units)
    }

    /// An identifier, split into words.
    pub(super) fn identifier(text: &str) -> Folded {
        let mut units = Vec::with_capacity(text.len() + 8);
        let mut prev: Option<char> = None;
        for (i, c) in text.char_indices() {
            let at = (i, i + c.len_utf8());
            if matches!(c, '_' | '-' | '.' | '/' | ':') {
                units.push((' ', at));
            } else {
                if c.is_uppercase() && prev.is_some_and(char::is_lowercase) {
                    units.push((' ', (i, i)));
                }
                fold_char(c, at, &mut units);
            }
            prev = Some(c);
        }
        Folded::from_units(units)
    }

    fn from_units(mut units: Vec<Unit>) -> Folded {
        unmask_lookalikes(&mut units);
        let mut text = String::with_capacity(units.len());
        let mut origin = Vec::with_capacity(units.len());
        for (c, at) in units {
            text.push(c);
            origin.extend(std::iter::repeat_n(at, c.len_utf8()));
        }
        Folded { text, origin }
    }

    /// The original byte range of the folded range `start..end`.
    pub(super) fn span(&self, start: usize, end: usize) -> (usize, usize) {
        let Some(first) = self.origin.get(start) else {
            let last = self.origin.last().map_or(0, |o| o.1);
            return (last, last);
        };
        let last = end
            .checked_sub(1)
            .and_then(|e| self.origin.get(e))
            .filter(|_| end > start)
            .unwrap_or(first);
        (first.0, last.1.max(first.0))
    }
}

/// `c` folded: hidden and control characters (but line breaks and tabs)
/// dropped, compatibility decomposition, marks stripped, lower case.
fn fold_char(c: char, at: (usize, usize), units: &mut Vec<Unit>) {
    if is_hidden(c) || (c.is_control() && !matches!(c, '\n' | '\t' | '\r')) {
        return;
    }
    decompose_compatible(c, |d| {
        if !is_combining_mark(d) {
            units.extend(d.to_lowercase().map(|l| (l, at)));
        }
    });
}

/// The Latin letter a lower-case Cyrillic, Greek or Armenian letter is
/// drawn like, if it is drawn like one.
pub(super) fn lookalike(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' => 'a',
        'е' | 'ё' | 'ε' => 'e',
        'о' | 'ο' | 'օ' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'с' | 'ϲ' => 'c',
        'у' | 'ү' | 'γ' => 'y',
        'х' | 'χ' => 'x',
        'і' | 'ї' | 'ι' => 'i',
        'ј' | 'ϳ' => 'j',
        'ѕ' => 's',
        'ԁ' => 'd',
        'һ' | 'հ' => 'h',
        'ԛ' => 'q',
        'ԝ' | 'ω' => 'w',
        'к' | 'κ' => 'k',
        'ν' => 'v',
        'τ' => 't',
        'υ' | 'ս' => 'u',
        'ո' => 'n',
        'ɡ' => 'g',
        'ɩ' => 'i',
        _ => return None,
    })
}

/// Read look-alike letters as Latin in each word that mixes them with
/// Latin letters, and in words made only of them when the text is mostly
/// Latin (a Russian sentence stays Russian).
fn unmask_lookalikes(units: &mut [Unit]) {
    let latin = units.iter().filter(|(c, _)| c.is_ascii_alphabetic()).count();
    let other = units
        .iter()
        .filter(|(c, _)| c.is_alphabetic() && !c.is_ascii_alphabetic())
        .count();
    let mostly_latin = latin > other * 2;
    let mut start = 0;
    while start < units.len() {
        let len = units[start..].iter().take_while(|(c, _)| c.is_alphanumeric()).count();
        if len == 0 {
            start += 1;
            continue;
        }
        let word = &mut units[start..start + len];
        let has_latin = word.iter().any(|(c, _)| c.is_ascii_alphabetic());
        let all_lookalike = word
            .iter()
            .all(|(c, _)| c.is_ascii_alphanumeric() || lookalike(*c).is_some());
        if all_lookalike && (has_latin || mostly_latin) {
            for (c, _) in word.iter_mut() {
                *c = lookalike(*c).unwrap_or(*c);
            }
        }
        start += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(s: &str) -> String {
        Folded::prose(s).text
    }

    #[test]
    fn disguises_fold_to_plain_lower_case() {
        assert_eq!(fold("ＩＧＮＯＲＥ previous"), "ignore previous");
        assert_eq!(fold("𝐃𝐨 𝐧𝐨𝐭"), "do not");
        assert_eq!(fold("Іgnоre аll"), "ignore all");
        assert_eq!(fold("ig\u{200b}nore précédentes"), "ignore precedentes");
        assert_eq!(fold("Игнорируй всё"), "игнорируи все", "Russian stays Russian");
        assert_eq!(fold("a\u{1b}[8mb"), "a[8mb");
    }

    #[test]
    fn spans_map_back_to_the_original() {
        let original = "x ｉｇｎｏｒｅ y";
        let f = Folded::prose(original);
        let at = f.text.find("ignore").unwrap();
        let (s, e) = f.span(at, at + "ignore".len());
        assert_eq!(&original[s..e], "ｉｇｎｏｒｅ");
        let id = Folded::identifier("alsoSendAll_previous-messages");
        assert_eq!(id.text, "also send all previous messages");
        let at = id.text.find("send all").unwrap();
        let (s, e) = id.span(at, at + "send all".len());
        assert_eq!(&"alsoSendAll_previous-messages"[s..e], "SendAll");
    }
}
