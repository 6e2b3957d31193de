//! The configuration as the library crates' settings: the one place that
//! maps `tollgate_config` sections to the plain settings each lower crate
//! takes, as linkerd2-proxy's app crate does. The lower crates see the
//! configuration's schema only where they share a type verbatim
//! (rate-limit rules, budgets, prices, issuers, upstream credentials,
//! console roles, policy modes).

use tollgate_config::Audit;
use tollgate_meter::TokenEstimator;

/// The token estimate of `[audit] bytes_per_token`.
pub(crate) fn estimator(audit: &Audit) -> TokenEstimator {
    TokenEstimator::new(audit.bytes_per_token)
}
