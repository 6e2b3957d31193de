//! Checks of `[console]`: an identity provider to sign in with, a client
//! secret for it, and a role for someone.

use std::path::Path;

use url::Url;

use super::{Environment, Problems, key, read_secret};
use crate::locate::Seg;
use crate::redact::has_userinfo;
use crate::{Config, Secret};

pub(super) fn validate(c: &Config, out: &mut Problems) {
    let console = &c.console;
    if !console.enabled {
        return;
    }
    let dev = c.dev_issuer_url();
    match console.issuer.as_deref() {
        None if dev.is_none() => out.push((
            key(&["console", "issuer"]),
            "the console needs an identity provider: name one of [[auth.issuers]] (or enable [dev_issuer])".into(),
        )),
        Some(issuer) if dev.as_deref() != Some(issuer) && !c.auth.issuers.iter().any(|i| i.issuer == issuer) => {
            out.push((
                key(&["console", "issuer"]),
                "is not the issuer of any [[auth.issuers]] entry (nor the development issuer)".into(),
            ));
        }
        _ => {}
    }
    let is_dev = c.console_issuer() == dev;
    if console.client_secret.is_none() && !is_dev {
        out.push((
            key(&["console", "client_secret"]),
            "required: the console signs in as a confidential client".into(),
        ));
    }
    if console.client_id.is_empty() {
        out.push((key(&["console", "client_id"]), "must not be empty".into()));
    }
    for (name, url) in [
        ("url", &console.url),
        ("authorization_endpoint", &console.authorization_endpoint),
        ("token_endpoint", &console.token_endpoint),
    ] {
        if url.as_ref().is_some_and(has_userinfo) {
            out.push((key(&["console", name]), super::auth::NO_USERINFO.into()));
        }
    }
    if let Some(url) = &console.url
        && !url.path().trim_end_matches('/').ends_with("/console")
    {
        out.push((
            key(&["console", "url"]),
            "must end in /console (where the console is served)".into(),
        ));
    }
    for (name, endpoint) in [
        ("authorization_endpoint", &console.authorization_endpoint),
        ("token_endpoint", &console.token_endpoint),
    ] {
        if let Some(url) = endpoint
            && !secure_or_loopback(url)
        {
            out.push((
                key(&["console", name]),
                "must be https (http only on a loopback host)".into(),
            ));
        }
    }
    let r = &console.roles;
    if [&r.viewer, &r.auditor, &r.approver, &r.admin]
        .iter()
        .all(|g| g.is_empty())
    {
        out.push((
            key(&["console", "roles"]),
            "no group holds any role: nobody could use the console (e.g. viewer = [\"*\"])".into(),
        ));
    }
    validate_audiences(c, out);
}

/// `[console] audiences` must be the console's own: an audience the
/// console issuer's tokens carry for every route, or a route's URL, would
/// make MCP access tokens console tokens.
fn validate_audiences(c: &Config, out: &mut Problems) {
    let issuer = c.console_issuer();
    let issuer_wide: Vec<&String> = c
        .auth
        .issuers
        .iter()
        .filter(|i| Some(&i.issuer) == issuer.as_ref())
        .flat_map(|i| &i.audiences)
        .collect();
    let routes: Vec<String> = c.servers.iter().filter_map(|s| c.resource_url(s)).collect();
    for (i, audience) in c.console.audiences.iter().enumerate() {
        let problem = if audience.trim().is_empty() {
            "must not be empty"
        } else if issuer_wide.contains(&audience) {
            "is one of the console issuer's [[auth.issuers]] audiences, which every route accepts"
        } else if routes.contains(audience) {
            "is an MCP route's URL: tokens for a route are not console tokens"
        } else {
            continue;
        };
        let mut at = key(&["console", "audiences"]);
        at.push(Seg::Index(i));
        out.push((at, problem.into()));
    }
}

fn secure_or_loopback(url: &Url) -> bool {
    url.scheme() == "https"
        || (url.scheme() == "http" && matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")))
}

/// The console's client secret, when configured.
pub(super) fn secret(c: &Config, base: &Path, env: &dyn Environment, out: &mut Problems) -> Option<Secret> {
    let source = c.console.client_secret.as_ref()?;
    read_secret(source, base, env)
        .map_err(|msg| out.push((key(&["console", "client_secret"]), msg)))
        .ok()
}
