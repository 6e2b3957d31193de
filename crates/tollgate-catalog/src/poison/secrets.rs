//! `sensitive_path`: the names of secrets on the host — SSH keys, cloud and
//! package-manager credentials, `.env`, `/etc/passwd`, MCP client
//! configurations. How much a name matters depends on what surrounds it: a
//! sentence that also says to read, send or include something is high; a
//! bare mention in a description is medium; a path as a parameter's
//! default or example, or named in a parameter's own description (an SSH
//! tool's `identity_file` defaulting to `~/.ssh/id_ed25519`), a bare
//! `.env` and a bare `authorized_keys` (public keys, which honest SSH tools
//! name), are info.

use super::finding::{Check, Hit, Severity, push};
use super::phrase::Reading;
use super::place::Place;

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
    ".gitconfig",
    "mcp.json",
    "claude_desktop_config",
    "wallet.dat",
    "cookies.sqlite",
    "login data",
    ".bash_history",
    ".zsh_history",
];

/// Words that, in the same sentence, make a secret's name an errand.
const ERRANDS: &[&str] = &[
    "read", "cat", "open", "include", "pass", "send", "paste", "copy", "upload", "attach", "provide", "put", "append",
    "forward", "dump", "gather", "collect", "extract", "content", "contents", "needs", "need", "give", "share",
];

pub(super) fn scan(r: &Reading<'_>, place: Place, hits: &mut Vec<Hit>) {
    let lower = r.folded.text.as_str();
    let mut found = Vec::new();
    for secret in SECRETS {
        let public = *secret == "authorized_keys";
        found.extend(lower.match_indices(secret).map(|(at, m)| (at, at + m.len(), public)));
    }
    for (at, _) in lower.match_indices(".env") {
        let word_char = |c: char| c.is_alphanumeric() || c == '_';
        let before = lower[..at].chars().next_back();
        let after = lower[at + 4..].chars().next();
        if !before.is_some_and(word_char) && !after.is_some_and(word_char) {
            found.push((at, at + 4, true));
        }
    }
    for (start, end, public) in found {
        let errand = r.word_at(start).is_some_and(|i| r.sentence_has(i, ERRANDS));
        let (severity, reason) = match (errand, place) {
            (true, _) => (
                Severity::High,
                "names a secret on the host next to an instruction to read or send it",
            ),
            (false, Place::Key | Place::Name | Place::Title) => {
                (Severity::Medium, "a name or title that names a secret on the host")
            }
            (false, Place::Description) if !public => (Severity::Medium, "names a secret on the host"),
            (false, _) => (
                Severity::Info,
                "names a secret on the host as a value or in a parameter's own description",
            ),
        };
        let (start, end) = r.folded_span(start, end);
        push(hits, Hit::new(Check::SensitivePath, severity, reason, start, end));
    }
}
