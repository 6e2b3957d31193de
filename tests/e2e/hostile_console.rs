//! The console under attack, against a real `tollgate serve` in front of
//! the demo server, with real signed tokens from real key sets (the
//! development issuer's and a second trusted provider's JWKS endpoint).
//!
//! - `identity`: a token of another trusted issuer, and an MCP access
//!   token accepted for every route through an issuer's `audiences`, are
//!   not console tokens (bearer calls and sign-in alike); the development
//!   issuer issues codes for the console's resource only.
//! - `actions`: an approval names the revision the approver saw; a lock
//!   file edited on disk, or one that does not parse, is never
//!   overwritten; a read-only lock gets the `tollgate catalog approve`
//!   command instead.
//! - `exports`: formula cells are text in every CSV.
//! - `probes`: CSRF, cookie attributes, security headers and path
//!   traversal, which the console withstands, kept that way.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "hostile_console/actions.rs"]
mod actions;
#[path = "hostile_console/exports.rs"]
mod exports;
#[path = "hostile_console/identity.rs"]
mod identity;
#[path = "hostile_console/idp.rs"]
mod idp;
#[path = "hostile_console/probes.rs"]
mod probes;
#[path = "hostile_console/rig.rs"]
mod rig;
