//! Signed checkpoints: a replica's chain head — the hash of its newest
//! durable line and where that line is — signed with the replica's Ed25519
//! key, so that a consistent rewrite of its files (every hash recomputed,
//! which the chain alone cannot catch) is caught.
//!
//! The sink publishes its head after each group commit
//! ([`crate::AuditHandle::head`]); the server signs it every
//! `[audit] checkpoint_interval` and at shutdown with a
//! [`CheckpointSigner`], stores the [`Checkpoint`] in the fleet store and
//! logs it. `tollgate audit verify --checkpoints` checks each stored
//! checkpoint's signature against the configured [`CheckpointKeys`] and
//! the files against each checkpoint ([`check`]). Because the chain runs
//! across files, a checkpoint vouches for every line before it too.

mod check;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::digest;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ED25519, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rustls_pki_types::PrivatePkcs8KeyDer;
use rustls_pki_types::pem::PemObject as _;

use crate::chain::Hash;

pub use check::{CheckpointFailure, CheckpointReport, check};

/// What the signature covers, first: names the format so a signature made
/// for anything else never verifies as a checkpoint.
const DOMAIN: &str = "tollgate-audit-checkpoint/1";

/// The newest durable line of a trail: which file, which line of it
/// (1-based), its sequence number and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The file's name (not its path).
    pub file: String,
    /// The line's 1-based number in the file.
    pub line: u64,
    /// The line's sequence number in the trail.
    pub seq: u64,
    /// The SHA-256 of the line's bytes.
    pub hash: Hash,
}

/// A replica's chain head, signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The replica whose trail it is (`[store] replica`).
    pub replica: String,
    /// The head signed.
    pub head: ChainHead,
    /// When it was signed, in whole seconds.
    pub time: SystemTime,
    /// The signing key's id ([`key_id`] of its public key).
    pub key_id: String,
    /// The Ed25519 signature of [`Checkpoint::message`].
    pub signature: Vec<u8>,
}

impl Checkpoint {
    /// The bytes signed: a JSON array of the format's name and every
    /// field, so no two checkpoints share a message.
    pub fn message(&self) -> Vec<u8> {
        let h = &self.head;
        let secs = unix_secs(self.time);
        let fields = serde_json::json!([DOMAIN, self.replica, h.file, h.line, h.seq, h.hash.to_string(), secs]);
        fields.to_string().into_bytes()
    }

    /// Whether one of `keys` signed it.
    ///
    /// # Errors
    ///
    /// Why not: the key is not listed, or the signature does not verify.
    pub fn verify_signature(&self, keys: &CheckpointKeys) -> Result<(), String> {
        let Some(public) = keys.0.get(&self.key_id) else {
            return Err(format!(
                "signed with key {}, which is not among the configured checkpoint public keys",
                self.key_id
            ));
        };
        UnparsedPublicKey::new(&ED25519, public)
            .verify(&self.message(), &self.signature)
            .map_err(|_| format!("its signature does not verify under key {}", self.key_id))
    }
}

/// A replica's signing key (`[audit] checkpoint_key`).
pub struct CheckpointSigner {
    pair: Ed25519KeyPair,
    key_id: String,
}

impl std::fmt::Debug for CheckpointSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointSigner")
            .field("key_id", &self.key_id)
            .finish()
    }
}

impl CheckpointSigner {
    /// A signer from an Ed25519 private key in PKCS#8, PEM (as `openssl
    /// genpkey -algorithm ed25519` writes it, or `tollgate audit
    /// checkpoint-key`) or DER.
    ///
    /// # Errors
    ///
    /// The bytes are not an Ed25519 PKCS#8 key.
    pub fn from_pkcs8(key: &[u8]) -> Result<CheckpointSigner, String> {
        let der = match PrivatePkcs8KeyDer::from_pem_slice(key) {
            Ok(der) => der.secret_pkcs8_der().to_vec(),
            Err(_) => key.to_vec(),
        };
        let pair = Ed25519KeyPair::from_pkcs8(&der)
            .or_else(|_| Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der))
            .map_err(|_| "not an Ed25519 private key in PKCS#8 (PEM `BEGIN PRIVATE KEY`, or DER)".to_owned())?;
        let key_id = key_id(pair.public_key().as_ref());
        Ok(CheckpointSigner { pair, key_id })
    }

    /// A new key: the signer and its private key as PKCS#8 PEM.
    ///
    /// # Errors
    ///
    /// The system's random source failed.
    pub fn generate() -> Result<(CheckpointSigner, String), String> {
        let der = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).map_err(|_| "no randomness".to_owned())?;
        let body = STANDARD.encode(der.as_ref());
        let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
        for chunk in body.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(chunk));
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        Ok((CheckpointSigner::from_pkcs8(pem.as_bytes())?, pem))
    }

    /// The public key, base64 (what `[audit] checkpoint_public_keys`
    /// lists).
    pub fn public_key(&self) -> String {
        STANDARD.encode(self.pair.public_key().as_ref())
    }

    /// The key's id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// `head` of `replica`'s trail, signed now.
    pub fn sign(&self, replica: &str, head: ChainHead, now: SystemTime) -> Checkpoint {
        let mut checkpoint = Checkpoint {
            replica: replica.to_owned(),
            head,
            time: UNIX_EPOCH + Duration::from_secs(unix_secs(now)),
            key_id: self.key_id.clone(),
            signature: Vec::new(),
        };
        checkpoint.signature = self.pair.sign(&checkpoint.message()).as_ref().to_vec();
        checkpoint
    }
}

/// The public keys checkpoints may be signed with, by key id.
#[derive(Debug, Clone, Default)]
pub struct CheckpointKeys(HashMap<String, Vec<u8>>);

impl CheckpointKeys {
    /// Keys from their base64 form (32 bytes each).
    ///
    /// # Errors
    ///
    /// Which entry is not a base64 Ed25519 public key.
    pub fn parse<S: AsRef<str>>(keys: &[S]) -> Result<CheckpointKeys, String> {
        let mut out = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            let raw = parse_public_key(key.as_ref()).map_err(|e| format!("checkpoint public key {}: {e}", i + 1))?;
            out.insert(key_id(&raw), raw);
        }
        Ok(CheckpointKeys(out))
    }

    /// Whether no key is listed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A base64 Ed25519 public key's 32 bytes.
///
/// # Errors
///
/// Not base64, or not 32 bytes.
pub fn parse_public_key(key: &str) -> Result<Vec<u8>, String> {
    let raw = STANDARD.decode(key.trim()).map_err(|e| format!("not base64 ({e})"))?;
    if raw.len() != 32 {
        return Err(format!("an Ed25519 public key has 32 bytes, not {}", raw.len()));
    }
    Ok(raw)
}

/// A public key's id: the first 8 bytes of its SHA-256, in hex.
pub fn key_id(public: &[u8]) -> String {
    let d = digest::digest(&digest::SHA256, public);
    d.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> ChainHead {
        ChainHead {
            file: "audit-0000000000000000-20261206T000000Z.jsonl".into(),
            line: 7,
            seq: 6,
            hash: Hash::of_line(b"x"),
        }
    }

    #[test]
    fn a_signed_checkpoint_verifies_only_under_its_key_and_unchanged() {
        let (signer, pem) = CheckpointSigner::generate().unwrap();
        let again = CheckpointSigner::from_pkcs8(pem.as_bytes()).unwrap();
        assert_eq!(again.public_key(), signer.public_key());
        let keys = CheckpointKeys::parse(&[signer.public_key()]).unwrap();
        let cp = signer.sign("replica-1", head(), SystemTime::now());
        cp.verify_signature(&keys).unwrap();

        let mut moved = cp.clone();
        moved.head.line = 8;
        assert!(moved.verify_signature(&keys).unwrap_err().contains("does not verify"));
        let mut other = cp.clone();
        other.replica = "replica-2".into();
        assert!(other.verify_signature(&keys).is_err());

        let (stranger, _) = CheckpointSigner::generate().unwrap();
        let theirs = CheckpointKeys::parse(&[stranger.public_key()]).unwrap();
        assert!(cp.verify_signature(&theirs).unwrap_err().contains("not among"));
    }

    #[test]
    fn bad_keys_are_named() {
        assert!(CheckpointSigner::from_pkcs8(b"not a key").is_err());
        let e = CheckpointKeys::parse(&["AAAA"]).unwrap_err();
        assert!(e.contains("checkpoint public key 1") && e.contains("32 bytes"), "{e}");
    }
}
