//! The Notes authorization server's workings, apart from HTTP: the one
//! pre-registered client, authorization requests waiting for the user's
//! choice, single-use codes bound to PKCE S256 and the exact redirect URI,
//! opaque access tokens and rotating refresh tokens. Everything lives in
//! memory and is lost on restart, as befits a demo.
//!
//! The endpoints in [`super::endpoints`] turn HTTP into calls here; the
//! bearer check in [`super`] asks [`AuthServer::caller`] who a token
//! belongs to.

mod grant;

use std::time::{Duration, SystemTime};

use aws_lc_rs::digest;
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dashmap::DashMap;
use serde::Deserialize;
use url::Url;

pub(crate) use grant::{ClientAuth, TokenError, TokenForm};

/// The scopes Notes knows; a request without `scope` gets them all.
pub(crate) const SCOPES: [&str; 2] = ["notes:read", "notes:write"];

/// How long a user may take on the sign-in page.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// How long a code may wait for its exchange.
const CODE_TTL: Duration = Duration::from_secs(60);

/// What the authorization server is told at start.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Its issuer identifier: the server's origin, e.g. `http://127.0.0.1:3003`.
    pub(crate) issuer: String,
    /// The protected resource: the MCP endpoint's URL.
    pub(crate) resource: String,
    /// The one registered client's id.
    pub(crate) client_id: String,
    /// Its secret.
    pub(crate) client_secret: Vec<u8>,
    /// Its one redirect URI, matched exactly.
    pub(crate) redirect_uri: String,
    /// Who may sign in.
    pub(crate) users: Vec<String>,
    /// Lifetime of access tokens.
    pub(crate) token_ttl: Duration,
}

/// Whom an access token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The Notes user.
    pub(crate) user: String,
    /// The scopes granted.
    pub(crate) scopes: Vec<String>,
}

/// An authorization request's parameters (RFC 6749 §4.1.1, PKCE, RFC
/// 8707 `resource`, OpenID's `login_hint`).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AuthorizeQuery {
    pub(crate) response_type: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) code_challenge: Option<String>,
    pub(crate) code_challenge_method: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) login_hint: Option<String>,
}

/// Why an authorization request stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthorizeError {
    /// The client or its redirect URI cannot be trusted: the user is told,
    /// nothing is sent anywhere.
    Page(String),
    /// The client is told at its redirect URI (this URL, carrying `error`,
    /// `state` and `iss`).
    Redirect(String),
}

/// A checked authorization request waiting for the user to pick who they are.
#[derive(Debug, Clone)]
struct Pending {
    state: Option<String>,
    scopes: Vec<String>,
    challenge: String,
    expires: SystemTime,
}

/// A code waiting for its exchange.
#[derive(Debug, Clone)]
struct Code {
    caller: Caller,
    challenge: String,
    expires: SystemTime,
}

/// An access token's record.
#[derive(Debug, Clone)]
struct Access {
    caller: Caller,
    expires: SystemTime,
}

/// The authorization server's state.
#[derive(Debug)]
pub(crate) struct AuthServer {
    settings: Settings,
    pending: DashMap<String, Pending>,
    codes: DashMap<String, Code>,
    access: DashMap<String, Access>,
    refresh: DashMap<String, Caller>,
}

// === impl AuthServer ===

impl AuthServer {
    /// An authorization server with nothing issued yet.
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            settings,
            pending: DashMap::new(),
            codes: DashMap::new(),
            access: DashMap::new(),
            refresh: DashMap::new(),
        }
    }

    /// Its settings.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Checks an authorization request and keeps it for the sign-in page,
    /// under the id returned.
    ///
    /// The client and its redirect URI are checked first: until both are
    /// known good, errors are shown to the user, never redirected.
    pub(crate) fn begin(&self, q: &AuthorizeQuery) -> Result<String, AuthorizeError> {
        let s = &self.settings;
        if q.client_id.as_deref() != Some(s.client_id.as_str()) {
            return Err(AuthorizeError::Page(
                "This application is not registered with Notes.".into(),
            ));
        }
        if q.redirect_uri.as_deref() != Some(s.redirect_uri.as_str()) {
            return Err(AuthorizeError::Page(
                "The application asked to be answered at an address it did not register.".into(),
            ));
        }
        let refuse = |error: &str, description: &str| {
            AuthorizeError::Redirect(self.redirect(&[("error", error), ("error_description", description)], &q.state))
        };
        if q.response_type.as_deref() != Some("code") {
            return Err(refuse("unsupported_response_type", "response_type must be code"));
        }
        let Some(challenge) = q.code_challenge.as_deref().filter(|c| valid_pkce(c)) else {
            return Err(refuse("invalid_request", "a code_challenge (PKCE) is required"));
        };
        if q.code_challenge_method.as_deref() != Some("S256") {
            return Err(refuse("invalid_request", "code_challenge_method must be S256"));
        }
        if q.resource.as_deref().is_some_and(|r| r != s.resource) {
            return Err(refuse("invalid_target", "Notes protects only its MCP endpoint"));
        }
        let Some(scopes) = parse_scopes(q.scope.as_deref()) else {
            return Err(refuse("invalid_scope", "Notes knows notes:read and notes:write"));
        };
        let pending = Pending {
            state: q.state.clone(),
            scopes,
            challenge: challenge.to_owned(),
            expires: SystemTime::now() + PENDING_TTL,
        };
        let id = random().ok_or_else(|| refuse("server_error", "no randomness"))?;
        sweep(&self.pending, |p| p.expires);
        self.pending.insert(id.clone(), pending);
        Ok(id)
    }

    /// Whether `login` may sign in.
    pub(crate) fn knows(&self, login: &str) -> bool {
        self.settings.users.iter().any(|u| u == login)
    }

    /// The user picked `login` on the page of request `id`: its code, at
    /// the client's redirect URI. The request is used up.
    ///
    /// # Errors
    ///
    /// A page when the request is unknown, used or expired, or the user unknown.
    pub(crate) fn complete(&self, id: &str, login: &str) -> Result<String, AuthorizeError> {
        if !self.knows(login) {
            return Err(AuthorizeError::Page(format!("Notes has no user {login:?}.")));
        }
        let gone = || AuthorizeError::Page("This sign-in is unknown, used or expired: start again.".into());
        let (_, pending) = self.pending.remove(id).ok_or_else(gone)?;
        if pending.expires <= SystemTime::now() {
            return Err(gone());
        }
        let code = random().ok_or_else(|| AuthorizeError::Page("No randomness.".into()))?;
        let caller = Caller {
            user: login.to_owned(),
            scopes: pending.scopes,
        };
        sweep(&self.codes, |c| c.expires);
        self.codes.insert(
            code.clone(),
            Code {
                caller,
                challenge: pending.challenge,
                expires: SystemTime::now() + CODE_TTL,
            },
        );
        Ok(self.redirect(&[("code", &code)], &pending.state))
    }

    /// Who the access token `token` speaks for, while it lasts.
    pub(crate) fn caller(&self, token: &str) -> Option<Caller> {
        let access = self.access.get(token)?;
        (access.expires > SystemTime::now()).then(|| access.caller.clone())
    }

    /// The client's redirect URI with `pairs`, `state` and `iss` (RFC 9207).
    fn redirect(&self, pairs: &[(&str, &str)], state: &Option<String>) -> String {
        let Ok(mut url) = Url::parse(&self.settings.redirect_uri) else {
            return self.settings.redirect_uri.clone();
        };
        {
            let mut query = url.query_pairs_mut();
            query.extend_pairs(pairs);
            if let Some(state) = state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", &self.settings.issuer);
        }
        url.into()
    }
}

/// The scopes asked for: all of Notes' when none are named; `None` when
/// one is unknown.
fn parse_scopes(scope: Option<&str>) -> Option<Vec<String>> {
    let mut asked: Vec<String> = Vec::new();
    for s in scope.unwrap_or_default().split_whitespace() {
        if !SCOPES.contains(&s) {
            return None;
        }
        if !asked.iter().any(|a| a == s) {
            asked.push(s.to_owned());
        }
    }
    if asked.is_empty() {
        asked = SCOPES.iter().map(|s| (*s).to_owned()).collect();
    }
    Some(asked)
}

/// A PKCE challenge or verifier: 43 to 128 unreserved characters (RFC 7636 §4.1).
fn valid_pkce(text: &str) -> bool {
    (43..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The S256 challenge of `verifier`: URL-safe base64 of its SHA-256.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, verifier.as_bytes()))
}

/// Constant-time equality.
fn same(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

/// 32 random bytes as URL-safe base64: ids, codes and tokens.
fn random() -> Option<String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new().fill(&mut bytes).ok()?;
    Some(URL_SAFE_NO_PAD.encode(bytes))
}

/// Drops the expired entries of `map` (a demo keeps no timers).
fn sweep<V>(map: &DashMap<String, V>, expires: impl Fn(&V) -> SystemTime) {
    let now = SystemTime::now();
    map.retain(|_, v| expires(v) > now);
}

#[cfg(test)]
mod tests;
