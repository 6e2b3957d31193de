//! CLI flags in the docs: each `--flag` after `tollgate SUBCOMMAND…` is in
//! that subcommand's `--help`, as the built binary prints it.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::Mutex;

use tollgate_e2e::children::tollgate_bin;

use super::{fenced, pages, spans};

/// `tollgate PATH… --help`, run once per path.
fn help(path: &[String]) -> String {
    static CACHE: Mutex<BTreeMap<Vec<String>, String>> = Mutex::new(BTreeMap::new());
    let mut cache = CACHE.lock().unwrap();
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = Command::new(tollgate_bin()).args(path).arg("--help").output().unwrap();
            assert!(out.status.success(), "tollgate {path:?} --help failed");
            String::from_utf8(out.stdout).unwrap()
        })
        .clone()
}

/// The subcommands `tollgate PATH…` takes.
fn subcommands(path: &[String]) -> BTreeSet<String> {
    let text = help(path);
    let Some((_, commands)) = text.split_once("Commands:\n") else {
        return BTreeSet::new();
    };
    commands
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The long options of `tollgate PATH…`.
pub(super) fn long_options(path: &[String]) -> BTreeSet<String> {
    let text = help(path);
    let options = text.split_once("Options:\n").map_or("", |(_, o)| o);
    options
        .split_whitespace()
        .filter_map(flag_of)
        .chain(["--help".to_owned()])
        .collect()
}

/// `--name` at the start of `token`, without `=value`, `[…]` or
/// punctuation after it.
fn flag_of(token: &str) -> Option<String> {
    let rest = token.strip_prefix("--")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect();
    let name = name.trim_end_matches('-');
    (!name.is_empty() && name.starts_with(|c: char| c.is_ascii_lowercase())).then(|| format!("--{name}"))
}

/// Command lines of a page: code block lines (continuations joined) and
/// code spans.
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (_, body) in fenced(text) {
        let mut joined = String::new();
        for line in body.lines() {
            match line.trim_end().strip_suffix('\\') {
                Some(head) => {
                    joined.push_str(head);
                    joined.push(' ');
                }
                None => {
                    joined.push_str(line);
                    out.push(std::mem::take(&mut joined));
                }
            }
        }
    }
    out.extend(spans(text));
    out
}

/// Every `(tollgate SUBCOMMAND…, --flag)` a command line uses, a
/// `a|b|c` subcommand giving each alternative.
pub(super) fn invocations(line: &str) -> Vec<(Vec<String>, String)> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (at, token) in tokens.iter().enumerate() {
        if !(*token == "tollgate" || token.ends_with("/tollgate")) {
            continue;
        }
        let mut paths: Vec<Vec<String>> = vec![Vec::new()];
        let mut next = at + 1;
        while let Some(word) = tokens.get(next) {
            let alternatives: Vec<&str> = word.split('|').collect();
            let known = paths
                .iter()
                .all(|p| alternatives.iter().all(|a| subcommands(p).contains(*a)));
            if !known {
                break;
            }
            paths = paths
                .iter()
                .flat_map(|p| {
                    alternatives.iter().map(move |a| {
                        let mut longer = p.clone();
                        longer.push((*a).to_owned());
                        longer
                    })
                })
                .collect();
            next += 1;
        }
        if paths[0].is_empty() {
            continue;
        }
        for word in &tokens[next..] {
            if ["|", "||", "&&", ";"].contains(word) || word.starts_with('#') || word.starts_with('>') {
                break;
            }
            if let Some(flag) = flag_of(word) {
                out.extend(paths.iter().map(|p| (p.clone(), flag.clone())));
            }
        }
    }
    out
}

#[test]
fn every_flag_the_docs_give_a_subcommand_is_in_its_help() {
    let mut checked = 0;
    let mut wrong = BTreeSet::new();
    for (page, text) in pages() {
        for line in command_lines(&text) {
            for (path, flag) in invocations(&line) {
                checked += 1;
                if !long_options(&path).contains(&flag) {
                    wrong.insert(format!("{page}: tollgate {} {flag}", path.join(" ")));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} flags found in the docs");
    assert!(
        wrong.is_empty(),
        "flags the subcommand does not take (`tollgate SUBCOMMAND --help`):\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

// ---------------------------------------------------------------------------
// Configuration keys
// ---------------------------------------------------------------------------
