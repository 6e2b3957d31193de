//! The SSRF guard of the CIMD fetcher: the rules a client_id URL (and
//! every redirect hop) must meet, the classifier of the addresses Tollgate
//! refuses to connect to, and the DNS resolver that hands the HTTP client
//! only addresses that passed the classifier.
//!
//! The resolver is the enforcement point for names: reqwest connects to
//! exactly the addresses it returns, so there is no second lookup an
//! attacker's DNS could answer differently (rebinding). reqwest skips the
//! resolver for IP-literal hosts, so [`check_target`] classifies those
//! itself before any request is sent.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use super::{CimdError, CimdSettings};

/// Why `ip` must not be fetched from, or `None` for a public address.
///
/// Covers the special-use ranges of RFC 6890 and its successors (IANA's
/// special-purpose registries), and the IPv6 forms that embed an IPv4
/// address (mapped, compatible, NAT64, 6to4), which are judged by the
/// address they embed.
pub(crate) fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_broadcast() {
        return Some("broadcast");
    }
    let kind = match ip.octets() {
        [0, ..] => "\"this network\" (0.0.0.0/8)",
        [10, ..] | [172, 16..=31, ..] | [192, 168, ..] => "private",
        [100, 64..=127, ..] => "shared address space (CGNAT)",
        [127, ..] => "loopback",
        [169, 254, ..] => "link-local",
        [192, 0, 0, _] => "IETF protocol assignment",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation",
        [192, 88, 99, _] => "6to4 relay anycast",
        [198, 18..=19, ..] => "benchmarking",
        [224..=239, ..] => "multicast",
        [240..=255, ..] => "reserved",
        _ => return None,
    };
    Some(kind)
}

/// The IPv4 address held in two 16-bit segments.
fn v4_in(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let s = ip.segments();
    match s {
        // ::ffff:a.b.c.d (mapped) and 64:ff9b::a.b.c.d (NAT64, RFC 6052).
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => classify_v4(v4_in(hi, lo)),
        // ::a.b.c.d, deprecated (RFC 4291): nothing public lives there.
        [0, 0, 0, 0, 0, 0, hi, lo] => classify_v4(v4_in(hi, lo)).or(Some("IPv4-compatible (deprecated)")),
        // 6to4 (RFC 3056): 2002:AABB:CCDD::/48 embeds AA.BB.CC.DD.
        [0x2002, hi, lo, ..] => classify_v4(v4_in(hi, lo)),
        [0x64, 0xff9b, 1, ..] => Some("local-use NAT64"),
        [0x100, 0, 0, 0, ..] => Some("discard-only"),
        [0x2001, 0x0db8, ..] => Some("documentation"),
        [0x3fff, b, ..] if b < 0x1000 => Some("documentation"),
        // 2001::/23: IETF protocol assignments, including Teredo
        // (2001::/32, an obfuscated IPv4 address) and benchmarking.
        [0x2001, b, ..] if b < 0x0200 => Some("IETF protocol assignment"),
        [0x5f00, ..] => Some("SRv6 SID"),
        [a, ..] if a & 0xfe00 == 0xfc00 => Some("unique local"),
        [a, ..] if a & 0xffc0 == 0xfe80 => Some("link-local"),
        [a, ..] if a & 0xffc0 == 0xfec0 => Some("site-local (deprecated)"),
        [a, ..] if a & 0xff00 == 0xff00 => Some("multicast"),
        // Global unicast is 2000::/3; everything else is unassigned.
        [a, ..] if a & 0xe000 != 0x2000 => Some("reserved"),
        _ => None,
    }
}

/// Whether `host` (a URL host, lowercase) matches an allowlist pattern:
/// the host itself, or `*.suffix` for any name strictly below `suffix`.
fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim().trim_end_matches('.').to_ascii_lowercase();
    let pattern = pattern.trim_start_matches('[').trim_end_matches(']');
    match pattern.strip_prefix("*.") {
        Some(suffix) => {
            host.len() > suffix.len() + 1 && host.ends_with(suffix) && {
                let dot = host.len() - suffix.len() - 1;
                host.as_bytes().get(dot) == Some(&b'.')
            }
        }
        None => host == pattern,
    }
}

/// The rules every URL Tollgate fetches must meet, the client_id and each
/// redirect hop alike: scheme, no userinfo, a host on the allowlist, and
/// (outside development) a host that is not a refused IP literal.
pub(crate) fn check_target(url: &Url, settings: &CimdSettings) -> Result<(), CimdError> {
    let text = || url.as_str().to_owned();
    match url.scheme() {
        "https" => {}
        "http" if settings.development => {}
        _ => return Err(CimdError::NotHttps { url: text() }),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(url.as_str(), "it has userinfo (user:password@)"));
    }
    let host = match url.host() {
        Some(Host::Domain(d)) => d.trim_end_matches('.').to_ascii_lowercase(),
        Some(Host::Ipv4(ip)) => ip.to_string(),
        Some(Host::Ipv6(ip)) => ip.to_string(),
        None => return Err(bad(url.as_str(), "it has no host")),
    };
    let allowed = &settings.allowed_hosts;
    if !allowed.is_empty() && !allowed.iter().any(|p| host_matches(p, &host)) {
        return Err(CimdError::HostNotAllowed { url: text(), host });
    }
    let literal = match url.host() {
        Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(addr) = literal.filter(|_| !settings.development)
        && let Some(kind) = classify(addr)
    {
        return Err(CimdError::PrivateAddress {
            url: text(),
            host,
            addr,
            kind,
        });
    }
    Ok(())
}

fn bad(url: &str, reason: &str) -> CimdError {
    CimdError::BadUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The path of a URL as written (between the authority and `?`/`#`), with
/// no normalization: the URL parser silently resolves dot segments, so the
/// rule against them is checked on the raw text.
fn raw_path(raw: &str) -> &str {
    let after_scheme = raw.split_once("://").map_or(raw, |(_, rest)| rest);
    let start = after_scheme.find(['/', '\\', '?', '#']).unwrap_or(after_scheme.len());
    let path = &after_scheme[start..];
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}

fn has_dot_segment(path: &str) -> bool {
    path.split(['/', '\\']).any(|segment| {
        let s = segment.to_ascii_lowercase().replace("%2e", ".");
        s == "." || s == ".."
    })
}

/// Check a client_id against the Client Identifier URL rules (CIMD draft
/// §3) and [`check_target`]; the parsed URL on success.
pub(crate) fn check_client_id(client_id: &str, settings: &CimdSettings) -> Result<Url, CimdError> {
    let lower = client_id.get(..8).unwrap_or(client_id).to_ascii_lowercase();
    if !lower.starts_with("https://") && !lower.starts_with("http://") {
        return Err(CimdError::NotAUrl {
            url: client_id.to_owned(),
        });
    }
    if client_id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(client_id, "it contains whitespace or control characters"));
    }
    let url = Url::parse(client_id).map_err(|e| bad(client_id, &format!("it does not parse ({e})")))?;
    let authority = client_id.split_once("://").map_or("", |(_, rest)| rest);
    let authority = &authority[..authority.find(['/', '\\', '?', '#']).unwrap_or(authority.len())];
    if authority.contains('@') {
        return Err(bad(client_id, "it has userinfo (user:password@)"));
    }
    if url.fragment().is_some() {
        return Err(bad(client_id, "it has a fragment"));
    }
    if url.path() == "/" {
        return Err(bad(client_id, "it needs a path other than /"));
    }
    if has_dot_segment(raw_path(client_id)) {
        return Err(bad(client_id, "it has . or .. path segments"));
    }
    check_target(&url, settings)?;
    Ok(url)
}

/// An address the resolver refused: the error the HTTP client carries back
/// from a refused resolution, turned into [`CimdError::PrivateAddress`].
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves only to refused addresses ({addr} is {kind})")]
pub(crate) struct Refused {
    pub(crate) host: String,
    pub(crate) addr: IpAddr,
    pub(crate) kind: &'static str,
}

/// The resolver of the fetcher's HTTP client: the system resolver (tokio's
/// `lookup_host`), with every address outside development passed through
/// [`classify`]. Refused addresses are dropped; a name left with none
/// fails to resolve with a [`Refused`] error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GuardedResolver {
    pub(crate) development: bool,
}

impl GuardedResolver {
    /// The addresses of `host` that may be connected to.
    async fn lookup(self, host: String) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
        if self.development {
            return Ok(found);
        }
        let mut refused = None;
        let passed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match classify(a.ip()) {
                Some(kind) => {
                    refused.get_or_insert((a.ip(), kind));
                    false
                }
                None => true,
            })
            .collect();
        match (passed.is_empty(), refused) {
            (true, Some((addr, kind))) => Err(Box::new(Refused { host, addr, kind })),
            (true, None) => Err(format!("{host}: no addresses").into()),
            (false, _) => Ok(passed),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = *self;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = this.lookup(host).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn classifier_refuses_special_use_addresses() {
        let refused = [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "febf::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "2001:2::1",
            "100::1",
            "64:ff9b:1::1",
            "3fff::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "4000::1",
        ];
        for addr in refused {
            let ip: IpAddr = addr.parse().unwrap();
            assert!(classify(ip).is_some(), "{addr} must be refused");
        }
    }

    #[test]
    fn classifier_passes_public_addresses() {
        let public = [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ];
        for addr in public {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(classify(ip), None, "{addr} is public");
        }
    }

    #[test]
    fn allowlist_patterns() {
        assert!(host_matches("example.com", "example.com"));
        assert!(host_matches("Example.COM.", "example.com"));
        assert!(!host_matches("example.com", "a.example.com"));
        assert!(host_matches("*.example.com", "a.example.com"));
        assert!(host_matches("*.EXAMPLE.com", "a.b.example.com"));
        assert!(!host_matches("*.example.com", "example.com"));
        assert!(!host_matches("*.example.com", "badexample.com"));
        assert!(host_matches("[::1]", "::1"));
    }

    #[test]
    fn raw_paths_and_dot_segments() {
        assert_eq!(raw_path("https://h.example/a/b?q#f"), "/a/b");
        assert_eq!(raw_path("https://h.example?q"), "");
        for path in ["/a/./b", "/a/../b", "/a/%2e%2E/b", "/a/.%2e", "/a\\..\\b", "/."] {
            assert!(has_dot_segment(path), "{path}");
        }
        for path in ["/a/b", "/a/.well-known/x", "/a/..b", "/"] {
            assert!(!has_dot_segment(path), "{path}");
        }
    }
}
