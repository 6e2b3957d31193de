//! Checks of `user_oauth` credentials and `[vault]`, and the vault's keys
//! and file resolved at load.

use std::path::{Path, PathBuf};

use super::auth::is_loopback;
use super::{Environment, Problems, key, read_secret};
use crate::locate::Seg;
use crate::{Config, Credential, Secret, UserOAuth};

/// The vault's settings resolved at load.
#[derive(Debug, Clone, PartialEq)]
pub struct VaultSettings {
    /// Keys by id, the current first; each 32 bytes.
    pub keys: Vec<(String, Secret)>,
    /// The file grants are kept in without a shared store (absolute).
    pub file: PathBuf,
}

fn at(mut base: Vec<Seg>, parts: &[&str]) -> Vec<Seg> {
    base.extend(parts.iter().map(|p| Seg::Key((*p).to_owned())));
    base
}

/// One server's `user_oauth` credential.
pub(super) fn validate_user_oauth(u: &UserOAuth, auth_required: bool, base: Vec<Seg>, out: &mut Problems) {
    if !auth_required {
        out.push((
            at(base.clone(), &["kind"]),
            "user_oauth keeps a grant per caller: this route must require a token".into(),
        ));
    }
    if u.client_secret.is_some() && u.client_id.is_none() {
        out.push((at(base.clone(), &["client_secret"]), "needs client_id".into()));
    }
    if let Some(url) = &u.authorization_server {
        let ok = url.scheme() == "https" || (url.scheme() == "http" && u.allow_insecure_http && is_loopback(url));
        if !ok {
            out.push((
                at(base, &["authorization_server"]),
                "must be https (http only on a loopback host with allow_insecure_http)".into(),
            ));
        }
    }
}

/// What a `user_oauth` server needs besides its own table: the front
/// door's sign-in (the connect page signs the user in) and vault keys.
pub(super) fn validate(c: &Config, out: &mut Problems) {
    let uses = c.servers.iter().any(|s| s.credential.per_user().is_some());
    if !uses {
        return;
    }
    let asserts = c.servers.iter().any(|s| matches!(s.credential, Credential::IdJag(_)));
    if asserts && c.authorization_server.identity_provider.is_none() {
        out.push((
            key(&["authorization_server", "identity_provider"]),
            "id_jag servers need it: the identity provider issues the assertions".into(),
        ));
    }
    if !c.authorization_server.enabled {
        out.push((
            key(&["authorization_server", "enabled"]),
            "user_oauth servers need it: the connect page signs the user in through it".into(),
        ));
    }
    if c.vault.keys.is_empty() {
        out.push((
            key(&["vault", "keys"]),
            "user_oauth servers need at least one key: grants are kept encrypted".into(),
        ));
    }
    for (i, k) in c.vault.keys.iter().enumerate() {
        if k.id.is_empty() || c.vault.keys.iter().filter(|o| o.id == k.id).count() > 1 {
            let mut p = key(&["vault", "keys"]);
            p.extend([Seg::Index(i), Seg::Key("id".into())]);
            out.push((p, "must be non-empty and unique".into()));
        }
    }
}

/// The vault's keys (32 bytes each, base64) and file.
pub(super) fn resolve(c: &Config, base: &Path, env: &dyn Environment, out: &mut Problems) -> Option<VaultSettings> {
    if c.vault.keys.is_empty() {
        return None;
    }
    let mut keys = Vec::new();
    for (i, k) in c.vault.keys.iter().enumerate() {
        let mut p = key(&["vault", "keys"]);
        p.extend([Seg::Index(i), Seg::Key("key".into())]);
        match read_secret(&k.key, base, env).and_then(|s| decode_key(s.expose())) {
            Ok(bytes) => keys.push((k.id.clone(), Secret::new(bytes))),
            Err(msg) => out.push((p, msg)),
        }
    }
    let file = base.join(
        c.vault
            .file
            .clone()
            .unwrap_or_else(|| PathBuf::from("tollgate-vault.json")),
    );
    Some(VaultSettings { keys, file })
}

fn decode_key(text: &[u8]) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let text = String::from_utf8_lossy(text);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| "not base64".to_owned())?;
    if bytes.len() == 32 {
        Ok(bytes)
    } else {
        Err(format!("must decode to 32 bytes, not {}", bytes.len()))
    }
}
