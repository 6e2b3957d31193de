//! The HTTP side of the CIMD fetcher: the client (TLS roots, guarded
//! resolver, no proxy, no automatic redirects), redirect hops, and the
//! checks on a response.

use std::sync::Arc;

use http::header::{CONTENT_TYPE, LOCATION};
use http::{HeaderMap, StatusCode};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use url::Url;

use super::{CimdError, CimdSettings, guard};

pub(crate) fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// The URL a redirect response points to, checked by every rule a
/// client_id's host meets (scheme, allowlist, address).
pub(crate) fn next_hop(current: &Url, headers: &HeaderMap, settings: &CimdSettings) -> Result<Url, CimdError> {
    let bad = |reason: &str| CimdError::BadUrl {
        url: current.to_string(),
        reason: reason.to_owned(),
    };
    let location = headers
        .get(LOCATION)
        .ok_or_else(|| bad("redirect without a Location"))?;
    let location = location
        .to_str()
        .map_err(|_| bad("redirect to an unreadable Location"))?;
    let mut next = current
        .join(location)
        .map_err(|e| bad(&format!("redirect to an invalid URL ({e})")))?;
    next.set_fragment(None);
    guard::check_target(&next, settings)?;
    Ok(next)
}

/// Accept `application/json`, any `+json` type, or no content type.
pub(crate) fn check_content_type(url: &Url, headers: &HeaderMap) -> Result<(), CimdError> {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let essence = text.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let (kind, subtype) = essence.split_once('/').unwrap_or_default();
    if essence == "application/json" || (!kind.is_empty() && subtype.ends_with("+json")) {
        return Ok(());
    }
    Err(CimdError::NotJson {
        url: url.to_string(),
        reason: format!("served as {text:?}"),
    })
}

/// Read at most `limit` bytes of body, refusing more.
pub(crate) async fn read_body(url: &Url, mut res: reqwest::Response, limit: usize) -> Result<Vec<u8>, CimdError> {
    let too_large = || CimdError::TooLarge {
        url: url.to_string(),
        limit,
    };
    if res
        .content_length()
        .is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX))
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(|e| transport_error(url, &e))? {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The error of a failed request: the guard's refusal when the resolver
/// refused the host's addresses, else what failed, cause by cause.
pub(crate) fn transport_error(url: &Url, error: &reqwest::Error) -> CimdError {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(r) = cause.downcast_ref::<guard::Refused>() {
            let (host, addr, kind) = (r.host.clone(), r.addr, r.kind);
            return CimdError::PrivateAddress {
                url: url.to_string(),
                host,
                addr,
                kind,
            };
        }
        causes.push(cause.to_string());
        source = cause.source();
    }
    if causes.is_empty() {
        causes.push(error.to_string());
    }
    CimdError::Unreachable {
        url: url.to_string(),
        reason: causes.join(": "),
    }
}

/// The fetcher's HTTP client.
pub(crate) fn http_client(settings: &CimdSettings) -> Result<reqwest::Client, CimdError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| CimdError::Setup(format!("TLS: {e}")))?
        .with_root_certificates(trust_roots(&settings.extra_roots)?)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .dns_resolver(Arc::new(guard::GuardedResolver {
            development: settings.development,
        }))
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .https_only(!settings.development)
        .user_agent(concat!("tollgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CimdError::Setup(format!("HTTP client: {e}")))
}

/// The Web PKI roots plus every certificate in `extra`.
fn trust_roots(extra: &[Vec<u8>]) -> Result<rustls::RootCertStore, CimdError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for (n, pem) in extra.iter().enumerate() {
        let mut found = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| CimdError::Setup(format!("extra root {n}: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| CimdError::Setup(format!("extra root {n}: {e}")))?;
            found += 1;
        }
        if found == 0 {
            return Err(CimdError::Setup(format!("extra root {n}: no PEM certificate")));
        }
    }
    Ok(roots)
}
