//! Checks of the `[audit]` checkpoint keys, and the signing key resolved
//! at load. The key's format is checked where it is used (the server,
//! which names `audit.checkpoint_key` when it is not an Ed25519 key).

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{Environment, Problems, key, read_secret};
use crate::locate::Seg;
use crate::{Config, Secret};

/// Each listed public key is 32 bytes of base64.
pub(super) fn validate(c: &Config, out: &mut Problems) {
    for (i, k) in c.audit.checkpoint_public_keys.iter().enumerate() {
        let problem = match STANDARD.decode(k.trim()) {
            Ok(raw) if raw.len() == 32 => continue,
            Ok(raw) => format!("an Ed25519 public key has 32 bytes, not {}", raw.len()),
            Err(_) => "not base64: list the key `tollgate audit checkpoint-key` printed".to_owned(),
        };
        let mut at = key(&["audit", "checkpoint_public_keys"]);
        at.push(Seg::Index(i));
        out.push((at, problem));
    }
}

/// What signs this replica's checkpoints, resolved at load.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointSettings {
    /// The Ed25519 private key (PKCS#8, PEM or DER).
    pub key: Secret,
    /// This replica's name, as in the store (`[store] replica`, else the
    /// host name).
    pub replica: String,
}

/// The checkpoint signer's settings, when `[audit] checkpoint_key` is set.
pub(super) fn resolve(
    c: &Config,
    base: &Path,
    env: &dyn Environment,
    out: &mut Problems,
) -> Option<CheckpointSettings> {
    let source = c.audit.checkpoint_key.as_ref()?;
    let key = read_secret(source, base, env)
        .map_err(|msg| out.push((key(&["audit", "checkpoint_key"]), msg)))
        .ok();
    let replica = super::store::replica_name(c, env, out);
    Some(CheckpointSettings {
        key: key?,
        replica: replica?,
    })
}
