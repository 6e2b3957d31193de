//! Shared types for every Tollgate crate.
//!
//! This crate sits under all others: it owns the vocabulary the request path
//! speaks (the [`ErrorKind`] classification every crate's errors map into, the
//! [`Era`] of a call, the identity of a call as [`CallIdentity`], the
//! authenticated caller as [`Principal`], and the [`CallSummary`] every
//! observer of a finished call reads) without any I/O or HTTP knowledge.
//! `tollgate-server` turns an [`ErrorKind`] into an HTTP status and a
//! JSON-RPC error code in one exhaustive place.

mod call;
mod error;
mod principal;
mod summary;

pub use call::{CallIdentity, Era, McpMethod};
pub use error::{Classify, ErrorKind};
pub use principal::{Principal, PrincipalKind};
pub use summary::{
    Answer, BudgetNote, CallElement, CallObserver, CallSummary, CatalogVerdict, Hidden, Payload, PolicyVerdict, Stage,
    UpstreamGrantNote, Via,
};
