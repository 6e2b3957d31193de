//! The authorization server as a value: its settings, keys, store, the
//! client metadata fetcher, the identity provider, and the routes it
//! issues tokens for (swapped on every configuration reload).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::IssuerError;
use crate::cimd::{CimdFetcher, CimdSettings};
use crate::identity::{Identity, IdentitySettings};
use crate::jag::{AssertionSettings, Assertions};
use crate::keys::Keys;
use crate::policy::RegistrationPolicy;
use crate::store::{Records, Store};

/// Everything the authorization server is configured with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The issuer identifier: the gateway's public base URL.
    pub issuer: String,
    /// Lifetime of access tokens.
    pub access_ttl: Duration,
    /// Lifetime of a grant's refresh token after its last use.
    pub refresh_ttl: Duration,
    /// How long a sign-in may take.
    pub sign_in_ttl: Duration,
    /// Development: cookies without `Secure` (and without `__Host-`).
    pub development: bool,
    /// Where users sign in.
    pub identity: IdentitySettings,
    /// Which clients may register.
    pub registration: RegistrationPolicy,
    /// How client metadata documents are fetched.
    pub cimd: CimdSettings,
    /// Identity providers whose assertions (ID-JAG) are redeemed.
    pub assertions: Vec<AssertionSettings>,
}

/// A route the authorization server issues tokens for: its resource URL
/// and the scopes it offers.
pub type Resources = BTreeMap<String, Vec<String>>;

/// The authorization server. Shared in an `Arc`.
#[derive(Debug)]
pub struct Issuer {
    pub(crate) settings: Settings,
    pub(crate) keys: Keys,
    pub(crate) store: Records<dyn Store>,
    pub(crate) cimd: CimdFetcher,
    pub(crate) identity: Identity,
    pub(crate) assertions: Assertions,
    pub(crate) resources: ArcSwap<Resources>,
    /// Registrations in the current minute: (minute, count).
    pub(crate) registrations: std::sync::Mutex<(u64, u32)>,
}

impl Issuer {
    /// An authorization server with `settings`, signing with `keys`,
    /// keeping its state in `store`. No network access happens here.
    ///
    /// # Errors
    ///
    /// TLS or HTTP client setup failure.
    pub fn new(settings: Settings, keys: Keys, store: Arc<dyn Store>) -> Result<Issuer, IssuerError> {
        let cimd = CimdFetcher::new(settings.cimd.clone()).map_err(|e| IssuerError::Setup(e.to_string()))?;
        let http = tollgate_auth::identity_client().map_err(|e| IssuerError::Setup(e.to_string()))?;
        let identity = Identity::new(settings.identity.clone(), http.clone());
        let assertions = Assertions::new(settings.assertions.clone(), http);
        Ok(Issuer {
            settings,
            keys,
            store: Records(store),
            cimd,
            identity,
            assertions,
            resources: ArcSwap::from_pointee(Resources::new()),
            registrations: std::sync::Mutex::new((0, 0)),
        })
    }

    /// Its issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// Its published key set.
    pub fn jwks(&self) -> serde_json::Value {
        self.keys.jwks()
    }

    /// Issue tokens for these routes from now on (a reload's routes).
    pub fn serve(&self, resources: Resources) {
        self.resources.store(Arc::new(resources));
    }

    /// The name of the browser cookie binding a sign-in to its browser.
    pub(crate) fn cookie_name(&self) -> &'static str {
        if self.settings.development {
            "tollgate_signin"
        } else {
            "__Host-tollgate_signin"
        }
    }
}
