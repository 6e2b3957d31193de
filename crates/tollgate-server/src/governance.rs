//! Catalog governance around the routes: the sync service that keeps each
//! route's catalog fresh (`service`, over `transport`), the reload of
//! `catalog.lock` (`reload`), approvals shared by every replica through
//! the fleet store (`shared`), and what is reported of catalogs and their
//! findings (`report`, `findings`). It sits above the routes it serves;
//! what the request path reads of a route's catalog is in `catalog`.

pub(crate) mod findings;
pub(crate) mod reload;
pub(crate) mod report;
pub(crate) mod service;
pub(crate) mod shared;
pub(crate) mod transport;
