//! Tollgate's back door: each user's own grant at an upstream's
//! authorization server (`credential = { kind = "user_oauth" }`).
//!
//! Where it sits in the request path: step 10, credential. For a
//! `user_oauth` route the server asks [`Vault::access`] for the caller's
//! access token at that upstream; the vault opens the sealed grant
//! ([`Keyring`], AES-256-GCM), refreshes it before it expires, and when
//! the caller has none answers a connect URL instead, which the server
//! turns into a URL elicitation. The connect page ([`router`]) signs the
//! user in through the front door, checks that they are the caller who
//! asked, and sends them to the upstream's authorization server; the
//! grant is kept when the code comes back. The client never sees the
//! upstream token.

mod assert;
mod connect;
mod records;
mod seal;
mod upstream;
mod vault;

use tollgate_issuer::StoreError;

pub use connect::router;
pub use records::{Access, GrantInfo};
pub use seal::Keyring;
pub use upstream::UpstreamSpec;
pub use vault::{Vault, VaultSettings};

/// What went wrong in the vault.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// It cannot be set up.
    #[error("vault: {0}")]
    Setup(String),
    /// Its store is unreachable.
    #[error("vault store: {0}")]
    Store(#[from] StoreError),
    /// A grant does not open.
    #[error("vault: a sealed grant {0}")]
    Sealed(String),
    /// The upstream's authorization server failed.
    #[error("upstream authorization: {0}")]
    Upstream(String),
}

/// `bytes` random bytes, URL-safe base64.
pub(crate) fn random(bytes: usize) -> Result<String, VaultError> {
    tollgate_issuer::random_token(bytes).ok_or_else(|| VaultError::Setup("no randomness".into()))
}
