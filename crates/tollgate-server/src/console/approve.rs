//! A console approval, of only the revision the approver reviewed. With
//! approvals in the fleet store it is a row there (`governance::shared`),
//! in force here at once and on every replica within a second; while the
//! store cannot be reached it is refused (503) and nothing changes.
//! Without a store it is written to the lock file, safely: only over the
//! lock the gateway loaded (re-read under the write lock, so an operator's
//! edit on disk — finished or half-made — is never overwritten), and,
//! where the lock cannot be written (a read-only ConfigMap mount), the
//! `tollgate catalog approve` command to run where it is kept instead.

use std::borrow::Cow;
use std::sync::PoisonError;
use std::time::SystemTime;

use serde_json::{Value, json};
use tollgate_catalog::{Definition, Kind, Lock};
use tollgate_console::{ApprovalError, ApprovalRequest};

use super::{ConsoleBackend, kind_of, route_named};
use crate::governance::reload::{self, LockFile};
use crate::governance::shared::SharedApprovals;

/// The note of a console approval.
const NOTE: &str = "approved in the console";

/// Approve `request` as `by` (see the module).
pub(super) fn approve(b: &ConsoleBackend, request: &ApprovalRequest, by: &str) -> Result<Value, ApprovalError> {
    let kind = kind_of(&request.kind).map_err(ApprovalError::Unknown)?;
    let g = b.live.current();
    let route = route_named(&g, &request.server).map_err(ApprovalError::Unknown)?;
    let definition = route.catalog.live(kind, &request.key).ok_or_else(|| {
        ApprovalError::Unknown(format!("server {} lists no {kind} {:?}", request.server, request.key))
    })?;
    if definition.revision.as_str() != request.revision {
        return Err(ApprovalError::Stale {
            live: definition.revision.as_str().to_owned(),
            seen: request.revision.clone(),
        });
    }
    if let Some(shared) = &b.shared {
        return in_store(shared, request, &definition, by);
    }
    let path = &b.lock.path;
    if tollgate_config::lock_is_read_only(path) {
        return Err(ApprovalError::ReadOnly {
            path: path.display().to_string(),
            command: cli_command(&g.loaded.path.display().to_string(), request, kind, by),
        });
    }
    let _one = b.writing.lock().unwrap_or_else(PoisonError::into_inner);
    let mut lock = on_disk(&b.lock)?;
    let now = SystemTime::now();
    lock.approve(&request.server, &definition, by, now, Some(NOTE));
    tollgate_config::write_lock_text(path, &lock.to_toml()).map_err(|e| ApprovalError::Io(e.to_string()))?;
    reload::reload(&b.approvals, &b.lock);
    Ok(approved(request, &definition, by, now))
}

/// Approve as a row of the fleet store (this runs on a blocking thread of
/// the control runtime, which drives the store's connections).
fn in_store(
    shared: &SharedApprovals,
    request: &ApprovalRequest,
    definition: &Definition,
    by: &str,
) -> Result<Value, ApprovalError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|e| ApprovalError::Store(e.to_string()))?;
    let written = runtime
        .block_on(shared.approve(&request.server, definition, by, Some(NOTE)))
        .map_err(|e| ApprovalError::Store(e.to_string()))?;
    Ok(approved(request, definition, by, written.approved_at))
}

/// The lock as the file holds it now, if that is the lock in force.
fn on_disk(file: &LockFile) -> Result<Lock, ApprovalError> {
    let text = tollgate_config::read_lock_text(&file.path).map_err(|e| ApprovalError::Io(e.to_string()))?;
    let lock = match &text {
        None => Lock::default(),
        Some(text) => Lock::parse(&file.path, text).map_err(|e| ApprovalError::LockInvalid(e.to_string()))?,
    };
    if !file.is_in_force(text.as_deref()) {
        return Err(ApprovalError::LockChanged {
            path: file.path.display().to_string(),
        });
    }
    Ok(lock)
}

/// The answer to a written approval.
fn approved(request: &ApprovalRequest, definition: &Definition, by: &str, now: SystemTime) -> Value {
    json!({
        "server": request.server, "kind": definition.kind.as_str(), "key": definition.key,
        "revision": definition.revision.as_str(), "approved_by": by,
        "approved_at": humantime::format_rfc3339_seconds(now).to_string(),
    })
}

/// The `tollgate catalog approve` command that approves what `request`
/// names, as `by`, with the configuration at `config`.
fn cli_command(config: &str, request: &ApprovalRequest, kind: Kind, by: &str) -> String {
    let what = match kind {
        Kind::Tool => "--tool",
        Kind::Prompt => "--prompt",
        Kind::Resource | Kind::ResourceTemplate => "--resource",
    };
    let words = [
        ("--config", config),
        ("--server", &request.server),
        (what, &request.key),
        ("--by", by),
    ];
    let mut command = String::from("tollgate catalog approve");
    for (flag, value) in words {
        command.push_str(&format!(" {flag} {}", shell_word(value)));
    }
    command
}

/// `word` as one POSIX shell word: as it is when it holds nothing a shell
/// reads specially, else in single quotes.
fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&b));
    if plain {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_names_the_definition_in_shell_words() {
        let request = ApprovalRequest {
            server: "demo".into(),
            kind: "tool".into(),
            key: "it's; rm -rf /".into(),
            revision: "r1".into(),
        };
        assert_eq!(
            cli_command("/etc/tollgate/gateway.toml", &request, Kind::Tool, "alice@example.com"),
            "tollgate catalog approve --config /etc/tollgate/gateway.toml --server demo \
             --tool 'it'\\''s; rm -rf /' --by alice@example.com"
        );
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("file:///a b"), "'file:///a b'");
    }
}
