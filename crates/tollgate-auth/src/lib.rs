//! Tollgate identity: the gateway as an OAuth 2.1 resource server, and the
//! broker of the credentials it presents upstream.
//!
//! Where it sits in the request path (see `DESIGN.md`):
//!
//! - **step 5, authenticate**: [`ProtectedResource::authenticate`] finds the
//!   bearer token ([`bearer_token`], header only), validates it with the
//!   [`Authenticator`] for the route's resource URL (JWT against the
//!   issuer's cached JWKS, or RFC 7662 introspection; results cached by
//!   token hash) and checks the route's scopes. Failures are [`AuthError`]s;
//!   [`ProtectedResource::challenge`] gives the exact `WWW-Authenticate`
//!   value and [`ProtectedResource::metadata_json`] the RFC 9728 document.
//! - **step 10, upstream credential**: [`CredentialBroker::credential`]
//!   gives the header to attach for an upstream (static, client
//!   credentials, or token exchange on behalf of the caller). The caller's
//!   token is never among them.
//!
//! The [`DevIssuer`] signs local development tokens the authenticator
//! trusts. This crate knows no HTTP statuses: its errors implement
//! [`tollgate_core::Classify`], and `tollgate-server` maps them. It reads no
//! files and no environment: secrets arrive resolved from `tollgate-config`.

mod authenticator;
mod bearer;
mod broker;
mod cache;
mod claims;
mod classify;
mod dev;
mod dev_login;
mod error;
mod fetch;
mod flight;
mod introspect;
mod jwks;
mod oauth;
mod resource;
mod token;
mod verify;

pub use authenticator::{Authenticator, AuthenticatorSettings, LocalIssuer, RefreshTasks, Revocations};
pub use bearer::bearer_token;
pub use broker::{BrokerRoute, BrokerSettings, Caller, CredentialBroker, UpstreamCredential};
pub use dev::{DEV_CLIENT_ID, DevIssuer};
pub use dev_login::{AuthorizeParams, DevClient, DevLoginError, TokenParams};
pub use error::{AuthError, CredentialError, SetupError, TokenRejection};
pub use fetch::{check_url, client as identity_client, get_json, is_loopback};
pub use jwks::IssuerStatus;
pub use resource::ProtectedResource;
pub use token::{TokenShape, read_token};
