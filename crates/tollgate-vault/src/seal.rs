//! Grants at rest: AES-256-GCM under the vault's keyring. A sealed grant
//! is `{key id}.{base64(nonce ‖ ciphertext ‖ tag)}`, with the grant's
//! store key as associated data (a sealed grant copied under another
//! user's key does not open). The first key seals; every key opens, and
//! says when the grant should be sealed again under the current key.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::VaultError;

/// The vault's keys, the current first.
pub struct Keyring {
    keys: Vec<(String, LessSafeKey)>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("Keyring").field("ids", &ids).finish()
    }
}

impl Keyring {
    /// A keyring of `(id, 32-byte key)`, the current first.
    ///
    /// # Errors
    ///
    /// No key, or a key that is not 32 bytes.
    pub fn new(keys: &[(String, Vec<u8>)]) -> Result<Keyring, VaultError> {
        if keys.is_empty() {
            return Err(VaultError::Setup("the vault needs a key".into()));
        }
        let keys = keys
            .iter()
            .map(|(id, bytes)| {
                let key = UnboundKey::new(&AES_256_GCM, bytes)
                    .map_err(|_| VaultError::Setup(format!("vault key {id}: not a 32-byte key")))?;
                Ok((id.clone(), LessSafeKey::new(key)))
            })
            .collect::<Result<Vec<_>, VaultError>>()?;
        Ok(Keyring { keys })
    }

    /// The key ids, the current first.
    pub fn ids(&self) -> Vec<String> {
        self.keys.iter().map(|(id, _)| id.clone()).collect()
    }

    /// `plain` sealed under the current key, bound to `aad`.
    pub(crate) fn seal(&self, plain: &[u8], aad: &str) -> Result<String, VaultError> {
        let (id, key) = self.keys.first().ok_or_else(|| VaultError::Setup("no key".into()))?;
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| VaultError::Setup("no randomness".into()))?;
        let mut buf = plain.to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad.as_bytes()), &mut buf)
            .map_err(|_| VaultError::Sealed("sealing failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(format!("{id}.{}", URL_SAFE_NO_PAD.encode(out)))
    }

    /// The plain text of `sealed` (bound to `aad`), and whether it was
    /// sealed under an older key.
    pub(crate) fn open(&self, sealed: &str, aad: &str) -> Result<(Vec<u8>, bool), VaultError> {
        let (id, body) = sealed
            .split_once('.')
            .ok_or_else(|| VaultError::Sealed("not a sealed grant".into()))?;
        let (index, key) = self
            .keys
            .iter()
            .enumerate()
            .find(|(_, (k, _))| k == id)
            .map(|(i, (_, key))| (i, key))
            .ok_or_else(|| VaultError::Sealed(format!("sealed under key {id}, which is no longer configured")))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| VaultError::Sealed("not base64".into()))?;
        let (nonce, sealed) = bytes
            .split_at_checked(NONCE_LEN)
            .ok_or_else(|| VaultError::Sealed("too short".into()))?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| VaultError::Sealed("bad nonce".into()))?;
        let mut buf = sealed.to_vec();
        let plain = key
            .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut buf)
            .map_err(|_| VaultError::Sealed(format!("does not open under key {id} (tampered, or another user's)")))?;
        Ok((plain.to_vec(), index > 0))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn sealed_grants_open_under_their_key_and_binding_only() {
        let old = Keyring::new(&[("k1".into(), vec![1; 32])]).unwrap();
        let sealed = old.seal(b"secret", "alice/github").unwrap();
        assert!(sealed.starts_with("k1."));
        assert_eq!(old.open(&sealed, "alice/github").unwrap(), (b"secret".to_vec(), false));
        assert!(old.open(&sealed, "bob/github").is_err(), "bound to its owner");
        let rotated = Keyring::new(&[("k2".into(), vec![2; 32]), ("k1".into(), vec![1; 32])]).unwrap();
        assert_eq!(
            rotated.open(&sealed, "alice/github").unwrap(),
            (b"secret".to_vec(), true),
            "open, and reseal"
        );
        assert!(rotated.seal(b"x", "a").unwrap().starts_with("k2."));
        let dropped = Keyring::new(&[("k2".into(), vec![2; 32])]).unwrap();
        assert!(
            dropped
                .open(&sealed, "alice/github")
                .unwrap_err()
                .to_string()
                .contains("k1")
        );
        assert!(Keyring::new(&[("short".into(), vec![0; 16])]).is_err());
        assert!(!format!("{rotated:?}").contains('\u{1}'));
    }
}
