//! Checks of `[authorization_server]` and what it needs resolved at load:
//! its issuer URL, key files, the identity provider's client secret and
//! the CA trusted for client metadata documents.

use std::path::{Path, PathBuf};

use url::Url;

use super::auth::is_loopback;
use super::{Environment, Problems, key, read_secret};
use crate::{Config, Secret};

/// The authorization server's settings resolved at load.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizationServerSettings {
    /// Its issuer identifier: the public base URL.
    pub issuer: String,
    /// The current signing key's file (absolute).
    pub key_file: PathBuf,
    /// Previous keys (PEM), still published.
    pub previous_keys: Vec<Secret>,
    /// Tollgate's client secret at the identity provider.
    pub idp_secret: Option<Secret>,
    /// PEM bytes of extra CAs for metadata documents.
    pub metadata_ca: Option<Vec<u8>>,
}

const AS: &str = "authorization_server";

pub(super) fn validate(c: &Config, out: &mut Problems) {
    let a = &c.authorization_server;
    if !a.enabled {
        return;
    }
    if c.public_base_url().is_none() {
        out.push((
            key(&[AS, "enabled"]),
            "needs auth.public_base_url (the issuer and the routes' resource URLs)".into(),
        ));
    }
    for (name, d) in [
        ("access_token_ttl", a.access_token_ttl),
        ("refresh_token_ttl", a.refresh_token_ttl),
        ("sign_in_ttl", a.sign_in_ttl),
    ] {
        if d.is_zero() {
            out.push((key(&[AS, name]), "must be greater than 0".into()));
        }
    }
    if a.access_token_ttl.as_secs() > 24 * 3600 {
        out.push((
            key(&[AS, "access_token_ttl"]),
            "at most 24h: access tokens are short-lived (refresh tokens keep clients signed in)".into(),
        ));
    }
    let exposed = [c.listen.public, c.listen.admin].iter().any(|l| !l.ip().is_loopback());
    if a.development && exposed {
        out.push((
            key(&[AS, "development"]),
            "only with loopback listeners: it lets client metadata documents point at private addresses".into(),
        ));
    }
    match &a.identity_provider {
        Some(idp) => check_issuer_url(
            &idp.issuer,
            idp.allow_insecure_http,
            key(&[AS, "identity_provider", "issuer"]),
            out,
        ),
        None if !c.dev_issuer.enabled || c.dev_issuer.users.is_empty() => out.push((
            key(&[AS, "identity_provider"]),
            "required: users sign in at the company identity provider \
             (or, in development, as one of [[dev_issuer.users]])"
                .into(),
        )),
        None => {}
    }
    for (i, origin) in a.registration.web_origins.iter().enumerate() {
        let ok = Url::parse(origin).is_ok_and(|u| u.scheme() == "https" && u.origin().ascii_serialization() == *origin);
        if !ok {
            out.push((
                index(&[AS, "registration", "web_origins"], i),
                "must be an https origin such as https://claude.ai (no path, no trailing slash)".into(),
            ));
        }
    }
    for (i, scheme) in a.registration.redirect_schemes.iter().enumerate() {
        let private = scheme
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "+-.".contains(ch));
        if !private || matches!(scheme.as_str(), "http" | "https" | "javascript" | "data" | "file") {
            out.push((
                index(&[AS, "registration", "redirect_schemes"], i),
                "must be a private-use URI scheme (e.g. cursor), not http, https, javascript, data or file".into(),
            ));
        }
    }
    for (i, t) in a.trusted_assertion_issuers.iter().enumerate() {
        let mut at = index(&[AS, "trusted_assertion_issuers"], i);
        at.push(crate::locate::Seg::Key("issuer".into()));
        check_issuer_url(&t.issuer, t.allow_insecure_http, at, out);
    }
}

fn index(parts: &[&str], i: usize) -> Vec<crate::locate::Seg> {
    let mut at = key(parts);
    at.push(crate::locate::Seg::Index(i));
    at
}

/// An issuer must be `https`, or `http` on a loopback host when allowed.
fn check_issuer_url(issuer: &str, allow_http: bool, at: Vec<crate::locate::Seg>, out: &mut Problems) {
    match Url::parse(issuer) {
        Err(e) => out.push((at, format!("not a URL: {e}"))),
        Ok(u) if u.scheme() == "https" => {}
        Ok(u) if u.scheme() == "http" && allow_http && is_loopback(&u) => {}
        Ok(_) => out.push((
            at,
            "must be https (http only on a loopback host with allow_insecure_http)".into(),
        )),
    }
}

/// The resolved settings when the authorization server is enabled.
pub(super) fn resolve(
    c: &Config,
    base: &Path,
    env: &dyn Environment,
    out: &mut Problems,
) -> Option<AuthorizationServerSettings> {
    let a = &c.authorization_server;
    if !a.enabled {
        return None;
    }
    let idp_secret = a.identity_provider.as_ref().and_then(|idp| {
        read_secret(&idp.client_secret, base, env)
            .map_err(|msg| out.push((key(&[AS, "identity_provider", "client_secret"]), msg)))
            .ok()
    });
    let metadata_ca = a.registration.metadata_ca_file.as_ref().and_then(|file| {
        std::fs::read(base.join(file))
            .map_err(|e| {
                out.push((
                    key(&[AS, "registration", "metadata_ca_file"]),
                    format!("cannot read {}: {e}", base.join(file).display()),
                ));
            })
            .ok()
    });
    let mut previous_keys = Vec::new();
    for (i, file) in a.previous_key_files.iter().enumerate() {
        match std::fs::read(base.join(file)) {
            Ok(pem) => previous_keys.push(Secret::new(pem)),
            Err(e) => out.push((
                index(&[AS, "previous_key_files"], i),
                format!("cannot read {}: {e}", base.join(file).display()),
            )),
        }
    }
    Some(AuthorizationServerSettings {
        issuer: c.public_base_url()?,
        key_file: base.join(&a.key_file),
        previous_keys,
        idp_secret,
        metadata_ca,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::path::Path;

    use super::super::tests::FakeEnv;
    use crate::load_str;

    const BASE: &str = "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\
                        [[servers]]\nname = \"a\"\nurl = \"http://127.0.0.1:3001/mcp\"\n";

    fn keys(text: &str) -> Vec<String> {
        match load_str(Path::new("gw.toml"), text, &FakeEnv::default()) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.into_iter().map(|e| e.key).collect(),
        }
    }

    #[test]
    fn every_mistake_names_its_key() {
        let found = keys(&format!(
            "{BASE}[authorization_server]\nenabled = true\naccess_token_ttl = \"2d\"\n\
             [authorization_server.registration]\nweb_origins = [\"https://claude.ai/cb\"]\nredirect_schemes = [\"https\"]\n\
             [[authorization_server.trusted_assertion_issuers]]\nissuer = \"http://idp.example\"\n"
        ));
        for key in [
            "authorization_server.identity_provider",
            "authorization_server.access_token_ttl",
            "authorization_server.registration.web_origins[0]",
            "authorization_server.registration.redirect_schemes[0]",
            "authorization_server.trusted_assertion_issuers[0].issuer",
        ] {
            assert!(found.iter().any(|k| k == key), "{key} not in {found:?}");
        }
        let exposed = BASE.replace("127.0.0.1:8080", "0.0.0.0:8080");
        let found = keys(&format!(
            "{exposed}[auth]\npublic_base_url = \"https://gw.example\"\n[authorization_server]\nenabled = true\ndevelopment = true\n\
             [authorization_server.identity_provider]\nissuer = \"https://idp.example\"\nclient_id = \"t\"\n\
             client_secret = {{ env = \"IDP_SECRET\" }}\n"
        ));
        assert!(
            found.iter().any(|k| k == "authorization_server.development"),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|k| k == "authorization_server.identity_provider.client_secret"),
            "{found:?}"
        );
    }

    #[test]
    fn a_complete_setup_resolves_its_issuer_secret_and_keys() {
        let text = format!(
            "{BASE}[authorization_server]\nenabled = true\n\
             [authorization_server.identity_provider]\nissuer = \"https://idp.example\"\nclient_id = \"t\"\n\
             client_secret = {{ env = \"IDP_SECRET\" }}\n"
        );
        let mut env = FakeEnv::default();
        env.0.insert("IDP_SECRET".into(), "s3cret".into());
        let loaded = load_str(Path::new("/etc/tollgate/gw.toml"), &text, &env).unwrap();
        let s = loaded.authorization_server.unwrap();
        assert_eq!(s.issuer, "http://127.0.0.1:8080");
        assert_eq!(s.key_file, Path::new("/etc/tollgate/tollgate-as-key.pem"));
        assert_eq!(s.idp_secret.unwrap().expose(), b"s3cret");
        assert!(
            loaded.config.auth_required(&loaded.config.servers[0]),
            "routes need tokens"
        );
        assert_eq!(
            loaded.config.trusted_issuers(),
            vec!["http://127.0.0.1:8080".to_owned()]
        );
    }
}
