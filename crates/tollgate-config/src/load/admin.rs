//! Checks of `[admin]`: the admin token, read from its secret source, and
//! the warning for an admin listener that other hosts reach without one.

use std::path::Path;

use super::{Environment, Problems, key, read_secret};
use crate::{Config, Secret};

/// The fewest characters an admin token may have.
const MIN_TOKEN_LEN: usize = 16;

/// The `[admin] token`, when configured and usable.
pub(super) fn token(c: &Config, base: &Path, env: &dyn Environment, out: &mut Problems) -> Option<Secret> {
    let source = c.admin.token.as_ref()?;
    read_secret(source, base, env)
        .and_then(check_token)
        .map_err(|msg| out.push((key(&["admin", "token"]), msg)))
        .ok()
}

/// A token goes in an `Authorization` header and should not be guessable;
/// the message never quotes it.
fn check_token(token: Secret) -> Result<Secret, String> {
    let bytes = token.expose();
    if !bytes.iter().all(u8::is_ascii_graphic) {
        return Err(
            "the token must be printable ASCII without spaces (it is sent as `Authorization: Bearer <token>`)".into(),
        );
    }
    if bytes.len() < MIN_TOKEN_LEN {
        return Err(format!(
            "the token must be at least {MIN_TOKEN_LEN} characters (e.g. `openssl rand -base64 32`)"
        ));
    }
    Ok(token)
}

/// What loads but deserves a warning: an admin listener reachable from
/// other hosts with no token in front of its detail.
pub(super) fn warnings(c: &Config, out: &mut Problems) {
    if c.admin.token.is_none() && !c.listen.admin.ip().is_loopback() {
        out.push((
            key(&["listen", "admin"]),
            "not a loopback address, and no [admin] token is set: whoever reaches the admin listener reads \
             /readyz?detail and /catalog (set [admin] token)"
                .into(),
        ));
    }
}

#[cfg(test)]
mod tests;
