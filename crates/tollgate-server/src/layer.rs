//! The cross-cutting layers around the request path, one module each; the
//! order they wrap in is written once, in [`crate::stack`].

pub(crate) mod body_limit;
pub(crate) mod request;
pub(crate) mod shed;
pub(crate) mod track;
