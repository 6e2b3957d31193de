//! The phases of the request path, one module each, in order. The order
//! itself is written once, in [`crate::phases`].

pub(crate) mod admit;
pub(crate) mod authenticate;
pub(crate) mod authorize;
pub(crate) mod budget;
pub(crate) mod classify;
pub(crate) mod connection;
pub(crate) mod credential;
pub(crate) mod elicit;
pub(crate) mod forward;
pub(crate) mod gate;
pub(crate) mod identify;
pub(crate) mod limit;
pub(crate) mod respond;
pub(crate) mod tasks;
