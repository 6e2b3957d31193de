//! Validation of the identity keys (`[auth]`, each server's `auth` and
//! `credential`, each virtual server's `auth`, `[dev_issuer]`) and
//! resolution of the secrets they name.

use std::path::{Path, PathBuf};

use url::{Host, Url};

use super::{Problems, read_secret};
use crate::locate::Seg;
use crate::redact::has_userinfo;
use crate::{Config, Credential, Environment, Issuer, OAuthClient, Secret, Server, ServerAuth};

/// Secrets named by `[auth]` and the servers' credentials, read at load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthSecrets {
    /// `auth.issuers[i].introspection.client_secret`, by issuer index.
    pub introspection: Vec<Option<Secret>>,
    /// `servers[i].credential`: the static header value or the client
    /// secret, by server index.
    pub credentials: Vec<Option<Secret>>,
}

/// The development issuer, when enabled, with its paths resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevIssuerSettings {
    /// Its issuer URL (the `iss` of the tokens it mints).
    pub issuer: String,
    /// Its private key file, relative paths resolved against the
    /// configuration file's directory.
    pub key_file: PathBuf,
}

fn path(parts: &[&str]) -> Vec<Seg> {
    parts.iter().map(|p| Seg::Key((*p).to_owned())).collect()
}

fn at(mut base: Vec<Seg>, parts: &[&str]) -> Vec<Seg> {
    base.extend(parts.iter().map(|p| Seg::Key((*p).to_owned())));
    base
}

fn issuer_path(i: usize) -> Vec<Seg> {
    vec![Seg::Key("auth".into()), Seg::Key("issuers".into()), Seg::Index(i)]
}

fn server_path(i: usize) -> Vec<Seg> {
    vec![Seg::Key("servers".into()), Seg::Index(i)]
}

/// Whether the URL's host is `localhost` or a loopback address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Why a URL with `user:password@` is refused (without repeating it).
pub(super) const NO_USERINFO: &str =
    "must not carry a user name or password (`user:password@`): secrets go in secret sources";

/// `https://`, or `http://` to a loopback host when `allow_http`.
fn check_fetch_url(url: &Url, allow_http: bool) -> Result<(), String> {
    if url.host().is_none() || url.fragment().is_some() {
        return Err("must be an absolute URL with a host and no #fragment".into());
    }
    if has_userinfo(url) {
        return Err(NO_USERINFO.into());
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if allow_http && is_loopback(url) => Ok(()),
        "http" => Err("must be https:// (http:// is accepted only for a loopback host in development)".into()),
        other => Err(format!("unsupported scheme {other}://")),
    }
}

/// A scope token: RFC 6749 NQCHAR without space (and so safe to quote).
fn check_scope(scope: &str) -> Result<(), String> {
    let ok = |b: u8| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b);
    if scope.is_empty() || !scope.bytes().all(ok) {
        return Err(format!(
            "invalid scope {scope:?}: printable ASCII without space, `\"` or `\\`"
        ));
    }
    Ok(())
}

pub(super) fn validate(c: &Config, out: &mut Problems) {
    if let Some(url) = &c.auth.public_base_url {
        let ok = matches!(url.scheme(), "http" | "https")
            && url.host().is_some()
            && !has_userinfo(url)
            && url.query().is_none()
            && url.fragment().is_none();
        if !ok {
            out.push((
                path(&["auth", "public_base_url"]),
                "must be an http:// or https:// URL with a host, no user name or password, no query and no \
                 #fragment"
                    .into(),
            ));
        }
    }
    if c.auth.token_cache_entries == 0 {
        out.push((path(&["auth", "token_cache_entries"]), "must be greater than 0".into()));
    }
    for (i, issuer) in c.auth.issuers.iter().enumerate() {
        validate_issuer(issuer, issuer_path(i), out);
        if c.auth.issuers[..i].iter().any(|o| o.issuer == issuer.issuer) {
            out.push((at(issuer_path(i), &["issuer"]), "duplicate issuer".into()));
        }
    }
    for (i, server) in c.servers.iter().enumerate() {
        validate_server(c, server, server_path(i), out);
    }
    for (i, v) in c.virtual_servers.iter().enumerate() {
        let base = vec![Seg::Key("virtual_servers".into()), Seg::Index(i)];
        validate_route_auth(c, &v.auth, c.virtual_auth_required(v), &base, out);
    }
    validate_dev_issuer(c, out);
}

fn validate_issuer(issuer: &Issuer, base: Vec<Seg>, out: &mut Problems) {
    let insecure = issuer.allow_insecure_http;
    match Url::parse(&issuer.issuer) {
        Ok(url) => {
            if let Err(msg) = check_fetch_url(&url, insecure) {
                out.push((at(base.clone(), &["issuer"]), msg));
            }
            if insecure && !is_loopback(&url) {
                out.push((
                    at(base.clone(), &["allow_insecure_http"]),
                    "only for an issuer on a loopback host (development)".into(),
                ));
            }
        }
        Err(e) => out.push((at(base.clone(), &["issuer"]), format!("not a URL: {e}"))),
    }
    if let Some(Err(msg)) = issuer.jwks_uri.as_ref().map(|u| check_fetch_url(u, insecure)) {
        out.push((at(base.clone(), &["jwks_uri"]), msg));
    }
    if issuer.algorithms.is_empty() {
        out.push((at(base.clone(), &["algorithms"]), "name at least one algorithm".into()));
    }
    if issuer.leeway.as_secs() > 300 {
        out.push((at(base.clone(), &["leeway"]), "must be at most 5m".into()));
    }
    if issuer.require_typ.as_deref().is_some_and(str::is_empty) {
        out.push((at(base.clone(), &["require_typ"]), "must not be empty".into()));
    }
    if issuer.audiences.iter().any(String::is_empty) {
        out.push((at(base.clone(), &["audiences"]), "audiences must not be empty".into()));
    }
    if issuer.refresh_interval < issuer.min_refresh_interval || issuer.refresh_interval.as_secs() < 1 {
        out.push((
            at(base.clone(), &["refresh_interval"]),
            "must be at least 1s and at least min_refresh_interval".into(),
        ));
    }
    validate_claims_and_introspection(issuer, base, out);
}

fn validate_claims_and_introspection(issuer: &Issuer, base: Vec<Seg>, out: &mut Problems) {
    let claims = &issuer.claims;
    for (name, value) in [
        ("subject", &claims.subject),
        ("client_id", &claims.client_id),
        ("groups", &claims.groups),
        ("team", &claims.team),
        ("cost_center", &claims.cost_center),
        ("scopes", &claims.scopes),
    ] {
        if value.is_empty() {
            out.push((at(base.clone(), &["claims", name]), "must name a claim".into()));
        }
    }
    if let Some(intro) = &issuer.introspection {
        if let Err(msg) = check_fetch_url(&intro.endpoint, issuer.allow_insecure_http) {
            out.push((at(base.clone(), &["introspection", "endpoint"]), msg));
        }
        if intro.client_id.is_empty() {
            out.push((at(base, &["introspection", "client_id"]), "must not be empty".into()));
        }
    }
}

fn validate_server(c: &Config, s: &Server, base: Vec<Seg>, out: &mut Problems) {
    let required = c.auth_required(s);
    validate_route_auth(c, &s.auth, required, &base, out);
    validate_credential(s, required, at(base, &["credential"]), out);
}

/// A route's `auth` table, of a server or a virtual server.
fn validate_route_auth(c: &Config, auth: &ServerAuth, required: bool, base: &[Seg], out: &mut Problems) {
    let base = base.to_vec();
    if required && !c.tokens_by_default() {
        out.push((
            at(base.clone(), &["auth", "required"]),
            "a token is required but no [[auth.issuers]] (nor [authorization_server], nor [dev_issuer]) is configured"
                .into(),
        ));
    }
    if required && c.public_base_url().is_none() {
        out.push((
            path(&["auth", "public_base_url"]),
            format!(
                "set it: routes need a canonical URL and listen.public ({}) is not one",
                c.listen.public
            ),
        ));
    }
    for (field, scopes) in [("scopes", &auth.scopes), ("scopes_supported", &auth.scopes_supported)] {
        for (j, scope) in scopes.iter().enumerate() {
            if let Err(msg) = check_scope(scope) {
                let mut p = at(base.clone(), &["auth", field]);
                p.push(Seg::Index(j));
                out.push((p, msg));
            }
        }
    }
    let supported = &auth.scopes_supported;
    if let Some(missing) = auth
        .scopes
        .iter()
        .find(|r| !supported.is_empty() && !supported.contains(r))
    {
        out.push((
            at(base, &["auth", "scopes_supported"]),
            format!("must include the required scope {missing:?}"),
        ));
    }
}

fn validate_credential(s: &Server, auth_required: bool, base: Vec<Seg>, out: &mut Problems) {
    match &s.credential {
        Credential::None => {}
        Credential::Static(st) => {
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if st.header.is_empty() || !st.header.bytes().all(token) {
                out.push((at(base.clone(), &["header"]), "not a valid header name".into()));
            }
            if st
                .scheme
                .as_deref()
                .is_some_and(|v| v.is_empty() || !v.bytes().all(token))
            {
                out.push((at(base, &["scheme"]), "not a valid authentication scheme".into()));
            }
        }
        Credential::ClientCredentials(client) => validate_client(client, base, out),
        Credential::UserOauth(u) => super::vault::validate_user_oauth(u, auth_required, base, out),
        Credential::IdJag(u) => {
            if u.client_id.is_none() {
                let mut p = base.clone();
                p.push(Seg::Key("client_id".into()));
                out.push((
                    p,
                    "id_jag needs Tollgate's client id at the upstream's authorization server".into(),
                ));
            }
            super::vault::validate_user_oauth(u, auth_required, base, out);
        }
        Credential::TokenExchange(client) => {
            if !auth_required {
                out.push((
                    at(base.clone(), &["kind"]),
                    "token_exchange needs the caller's token: this route does not require one".into(),
                ));
            }
            validate_client(client, base, out);
        }
    }
}

fn validate_client(client: &OAuthClient, base: Vec<Seg>, out: &mut Problems) {
    if let Err(msg) = check_fetch_url(&client.token_endpoint, true) {
        out.push((at(base.clone(), &["token_endpoint"]), msg));
    }
    if client.client_id.is_empty() {
        out.push((at(base, &["client_id"]), "must not be empty".into()));
    }
}

fn validate_dev_issuer(c: &Config, out: &mut Problems) {
    let dev = &c.dev_issuer;
    if !dev.enabled {
        return;
    }
    if let Some(Err(e)) = dev.issuer.as_deref().map(Url::parse) {
        out.push((path(&["dev_issuer", "issuer"]), format!("not a URL: {e}")));
    }
    let exposed = [("public", c.listen.public), ("admin", c.listen.admin)]
        .into_iter()
        .find(|(_, addr)| !addr.ip().is_loopback());
    if let (Some((name, addr)), false) = (exposed, dev.allow_non_loopback) {
        out.push((
            path(&["dev_issuer", "enabled"]),
            format!(
                "the development issuer mints tokens anyone can use: listen.{name} ({addr}) is not loopback \
                 (set dev_issuer.allow_non_loopback to accept that)"
            ),
        ));
    }
}

/// Read every secret `[auth]` and the credentials name.
pub(super) fn resolve(c: &Config, base_dir: &Path, env: &dyn Environment, out: &mut Problems) -> AuthSecrets {
    let mut out_later = Problems::new();
    let mut read = |source, p: Vec<Seg>| match read_secret(source, base_dir, env) {
        Ok(secret) => Some(secret),
        Err(msg) => {
            out.push((p, msg));
            None
        }
    };
    let introspection = c
        .auth
        .issuers
        .iter()
        .enumerate()
        .map(|(i, iss)| {
            let intro = iss.introspection.as_ref()?;
            read(
                &intro.client_secret,
                at(issuer_path(i), &["introspection", "client_secret"]),
            )
        })
        .collect();
    let credentials = c
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let p = at(server_path(i), &["credential"]);
            match &s.credential {
                Credential::None => None,
                Credential::Static(st) => {
                    let value = read(&st.value, at(p.clone(), &["value"]))?;
                    static_value(st, value)
                        .map_err(|msg| out_later.push((at(p, &["value"]), msg)))
                        .ok()
                }
                Credential::ClientCredentials(cl) | Credential::TokenExchange(cl) => {
                    read(&cl.client_secret, at(p, &["client_secret"]))
                }
                Credential::UserOauth(u) | Credential::IdJag(u) => u
                    .client_secret
                    .as_ref()
                    .and_then(|secret| read(secret, at(p, &["client_secret"]))),
            }
        })
        .collect();
    out.append(&mut out_later);
    AuthSecrets {
        introspection,
        credentials,
    }
}

/// The full header value of a static credential: `scheme value` or `value`.
fn static_value(st: &crate::StaticCredential, value: Secret) -> Result<Secret, String> {
    let v = value.expose();
    if v.is_empty() || !v.iter().all(|b| *b == b'\t' || (0x20..=0x7E).contains(b)) {
        return Err("the secret must be non-empty printable ASCII to be sent as a header".into());
    }
    let Some(scheme) = &st.scheme else { return Ok(value) };
    let mut full = Vec::with_capacity(scheme.len() + 1 + v.len());
    full.extend_from_slice(scheme.as_bytes());
    full.push(b' ');
    full.extend_from_slice(v);
    Ok(Secret::new(full))
}

/// The development issuer's settings, when enabled.
pub(super) fn dev_issuer(c: &Config, base_dir: &Path) -> Option<DevIssuerSettings> {
    Some(DevIssuerSettings {
        issuer: c.dev_issuer_url()?,
        key_file: base_dir.join(&c.dev_issuer.key_file),
    })
}

#[cfg(test)]
mod tests;
