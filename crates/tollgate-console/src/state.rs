//! The console's shared state: settings, the cookie jar, the gateway
//! backend, an HTTP client for the token endpoint, and the identity
//! provider's endpoints once discovered.

use std::sync::Arc;

use tokio::sync::OnceCell;
use url::Url;

use crate::backend::Backend;
use crate::cookie::Jar;
use crate::settings::Settings;

/// The identity provider's OAuth endpoints.
#[derive(Debug, Clone)]
pub(crate) struct Endpoints {
    pub(crate) authorization: Url,
    pub(crate) token: Url,
}

/// Shared by every console handler.
pub(crate) struct Shared {
    pub(crate) settings: Settings,
    pub(crate) jar: Jar,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) http: reqwest::Client,
    pub(crate) endpoints: OnceCell<Endpoints>,
    /// Held while the console brings the audit index up to date.
    pub(crate) update_lock: std::sync::Mutex<()>,
}
