//! The errors of the CIMD fetcher.

use std::net::IpAddr;
use std::time::Duration;

/// Why no metadata could be had for a client_id.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CimdError {
    /// The client_id is not an `https://` URL at all.
    #[error("client_id {url:?} is not a URL")]
    NotAUrl {
        /// The client_id.
        url: String,
    },
    /// An `http://` URL outside development (or another scheme on a hop).
    #[error("{url}: refused, https:// is required")]
    NotHttps {
        /// The URL refused.
        url: String,
    },
    /// The URL breaks a Client Identifier URL rule.
    #[error("{url}: refused URL: {reason}")]
    BadUrl {
        /// The URL refused.
        url: String,
        /// The rule broken.
        reason: String,
    },
    /// The host is not on [`super::CimdSettings::allowed_hosts`].
    #[error("{url}: host {host} is not on the allowed list")]
    HostNotAllowed {
        /// The URL refused.
        url: String,
        /// Its host.
        host: String,
    },
    /// The host is, or resolves only to, a refused address.
    #[error("{url}: refusing to connect to {host} at {addr} ({kind} address)")]
    PrivateAddress {
        /// The URL refused.
        url: String,
        /// Its host.
        host: String,
        /// A refused address of the host.
        addr: IpAddr,
        /// What kind of address it is.
        kind: &'static str,
    },
    /// Resolution, connection, TLS or reading failed.
    #[error("{url}: unreachable: {reason}")]
    Unreachable {
        /// The URL requested.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The fetch did not finish in [`super::CimdSettings::timeout`].
    #[error("{url}: no complete answer within {after:?}")]
    Timeout {
        /// The client_id.
        url: String,
        /// The bound.
        after: Duration,
    },
    /// The document exceeds [`super::CimdSettings::max_bytes`].
    #[error("{url}: the document exceeds {limit} bytes")]
    TooLarge {
        /// The URL requested.
        url: String,
        /// The bound.
        limit: usize,
    },
    /// More redirects than [`super::CimdSettings::max_redirects`].
    #[error("{url}: more than {limit} redirects")]
    TooManyRedirects {
        /// The client_id.
        url: String,
        /// The bound.
        limit: usize,
    },
    /// A status other than 200 (or a redirect followed).
    #[error("{url}: HTTP {status}, a Client ID Metadata Document must be served with 200 OK")]
    Status {
        /// The URL requested.
        url: String,
        /// The status received.
        status: u16,
    },
    /// The response is not JSON (content type or syntax).
    #[error("{url}: not a JSON document: {reason}")]
    NotJson {
        /// The URL requested.
        url: String,
        /// Why not.
        reason: String,
    },
    /// The document breaks a rule of the CIMD draft or RFC 7591.
    #[error("{url}: invalid Client ID Metadata Document: {reason}")]
    Invalid {
        /// The client_id.
        url: String,
        /// The rule broken.
        reason: String,
    },
    /// [`super::CimdFetcher::new`] could not build the fetcher.
    #[error("CIMD fetcher setup: {0}")]
    Setup(String),
}
