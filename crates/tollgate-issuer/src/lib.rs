//! Tollgate's front door: the gateway as the OAuth 2.1 authorization
//! server of its own routes.
//!
//! Not on the request path. An MCP client that meets a route's 401 reads
//! the route's RFC 9728 metadata, which names this authorization server
//! ([`metadata`](Issuer::metadata), RFC 8414); it registers itself (a
//! Client ID Metadata Document, [`cimd`], or RFC 7591 dynamic
//! registration), sends the user's browser to `authorize`, where Tollgate
//! signs the user in at the company identity provider (OIDC), asks for
//! consent, and returns a code; `token` turns the code into a short-lived
//! access token bound to the route URLs requested (RFC 8707), which the
//! route's authenticator (request path step 5) verifies like any other
//! issuer's. Refresh tokens rotate; a reused one revokes its grant.
//! Enterprise-managed clients redeem an identity assertion (ID-JAG) for a
//! route token without a browser.
//!
//! The endpoints are an axum [`router`] the server mounts on the public
//! listener; state lives in a [`Store`] (this process, or one shared by
//! replicas).

mod authorize;
pub mod cimd;
mod clients;
mod error;
mod exchange;
mod file_store;
mod identity;
mod jag;
mod keys;
mod metadata;
mod mint;
mod pages;
mod policy;
mod records;
mod redis_store;
mod remote;
mod router;
mod signin;
mod state;
mod store;
mod time;
mod token;

pub use error::{IssuerError, OAuthError};
pub use file_store::FileStore;
pub use identity::{IdentitySettings, OidcSettings, form_encode};
pub use jag::{AssertionSettings, ID_JAG_TYP};
pub use keys::Keys;
pub use pages::notice;
pub use policy::RegistrationPolicy;
pub use records::{ClientKind, ClientRecord, Grant, User};
pub use redis_store::{RedisSettings, RedisStore};
pub use router::{is_own_path, router};
pub use state::{Issuer, Resources, Settings};
pub use store::{MemoryStore, Records, Store, StoreError};
pub use time::{random as random_token, sha256 as s256};
