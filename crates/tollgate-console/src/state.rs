//! The console's shared state: settings, the cookie jar, the gateway
//! backend, and an HTTP client for the identity provider.

use std::sync::Arc;

use crate::backend::Backend;
use crate::cookie::Jar;
use crate::settings::Settings;

/// Shared by every console handler.
pub(crate) struct Shared {
    pub(crate) settings: Settings,
    pub(crate) jar: Jar,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) http: reqwest::Client,
    /// Held while the console brings the audit index up to date.
    pub(crate) update_lock: std::sync::Mutex<()>,
}
