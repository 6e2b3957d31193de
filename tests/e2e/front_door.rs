//! Tollgate as the authorization server of its routes, over real HTTP
//! against the real gateway binary.
//!
//! - `flow`: a client registers (RFC 7591), the user signs in (the
//!   development picker here; the company IdP in `idp`), consents, and the
//!   client's code becomes a route token that calls tools through the
//!   route; the audit record names the client; refresh rotates; a revoked
//!   grant stops its tokens; metadata at every path clients try.
//! - `hostile`: code replay, PKCE downgrade and mismatch, redirect URI
//!   mismatch, `iss` in every answer (mix-up), refresh token reuse, a
//!   token for a route not served, a metadata document at a private
//!   address.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "front_door/console.rs"]
mod console;
#[path = "front_door/flow.rs"]
mod flow;
#[path = "front_door/hostile.rs"]
mod hostile;
#[path = "front_door/idp.rs"]
mod idp;
#[path = "front_door/oauth.rs"]
mod oauth;
#[path = "front_door/replicas.rs"]
mod replicas;
