//! Phase 1, admit: before anything is decoded, the request's headers must
//! fit the limit (431) and a browser request must come from an allowed
//! origin (403, DNS-rebinding protection).
//!
//! The gateway's own origins are allowed without configuration: the
//! public base URL's origin and, on a loopback listener,
//! `http://localhost:PORT` and `http://127.0.0.1:PORT`. Every other origin
//! needs `security.allowed_origins`. Requests without `Origin` (non-browser
//! clients) pass.

use std::net::SocketAddr;
use std::sync::OnceLock;

use http::HeaderMap;
use http::header::ORIGIN;
use tollgate_core::ErrorKind;

use crate::rescue::Rejection;

/// What admission checks.
#[derive(Debug)]
pub(crate) struct Admission {
    /// Largest total size of header names and values.
    max_header_bytes: usize,
    /// Origins allowed by configuration.
    allowed: Vec<String>,
    /// The gateway's own origins, known once the listener is bound.
    own: OnceLock<Vec<String>>,
    /// The public base URL's origin, from configuration.
    base: Option<String>,
}

impl Admission {
    /// Admission with a header limit, the configured origins and the
    /// public base URL.
    pub(crate) fn new(max_header_bytes: usize, allowed: Vec<String>, base_url: Option<&str>) -> Admission {
        Admission {
            max_header_bytes,
            allowed,
            own: OnceLock::new(),
            base: base_url.and_then(origin_of),
        }
    }

    /// Learn the address the public listener is bound to.
    pub(crate) fn bound(&self, addr: SocketAddr) {
        let mut own: Vec<String> = self.base.iter().cloned().collect();
        if addr.ip().is_loopback() {
            let port = addr.port();
            own.extend([
                format!("http://localhost:{port}"),
                format!("http://127.0.0.1:{port}"),
                format!("http://[::1]:{port}"),
            ]);
        }
        let _ = self.own.set(own);
    }

    fn allows(&self, origin: &str) -> bool {
        let own = self.own.get().map_or(self.base.as_slice(), Vec::as_slice);
        own.iter().chain(&self.allowed).any(|a| a.eq_ignore_ascii_case(origin))
    }
}

/// Admit a request by its headers.
///
/// # Errors
///
/// `headers_too_large` (431) or `forbidden_origin` (403).
pub(crate) fn admit(adm: &Admission, headers: &HeaderMap) -> Result<(), Rejection> {
    let size: usize = headers.iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    if size > adm.max_header_bytes {
        return Err(Rejection::new(
            ErrorKind::HeadersTooLarge,
            "Request header fields too large",
        ));
    }
    if let Some(origin) = headers.get(ORIGIN)
        && !origin.to_str().is_ok_and(|o| adm.allows(o))
    {
        return Err(Rejection::new(
            ErrorKind::ForbiddenOrigin,
            "Forbidden: origin not allowed",
        ));
    }
    Ok(())
}

/// `scheme://host[:port]` of a URL.
fn origin_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_origin(o: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ORIGIN, o.parse().unwrap());
        h
    }

    #[test]
    fn own_origins_pass_without_configuration_others_need_it() {
        let adm = Admission::new(
            16 * 1024,
            vec!["https://app.example".into()],
            Some("https://gw.example:8443/x"),
        );
        adm.bound("127.0.0.1:8080".parse().unwrap());
        for ok in [
            "https://gw.example:8443",
            "http://localhost:8080",
            "http://127.0.0.1:8080",
            "https://app.example",
        ] {
            assert!(admit(&adm, &with_origin(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "http://localhost:8081",
            "https://evil.example",
            "http://gw.example:8443",
            "null",
        ] {
            let e = admit(&adm, &with_origin(bad)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::ForbiddenOrigin, "{bad}");
        }
        assert!(admit(&adm, &HeaderMap::new()).is_ok(), "no Origin: not a browser");
    }

    #[test]
    fn a_public_listener_is_not_its_own_loopback_origin() {
        let adm = Admission::new(16 * 1024, Vec::new(), None);
        adm.bound("0.0.0.0:8080".parse().unwrap());
        assert!(admit(&adm, &with_origin("http://localhost:8080")).is_err());
    }

    #[test]
    fn oversized_headers_are_refused_before_anything_else() {
        let adm = Admission::new(64, Vec::new(), None);
        let mut h = HeaderMap::new();
        h.insert("x-big", "a".repeat(100).parse().unwrap());
        assert_eq!(admit(&adm, &h).unwrap_err().kind, ErrorKind::HeadersTooLarge);
    }
}
