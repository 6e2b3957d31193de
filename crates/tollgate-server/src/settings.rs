//! The configuration as the library crates' settings: the one place that
//! maps `tollgate_config` sections to the plain settings each lower crate
//! takes, as linkerd2-proxy's app crate does. The lower crates see the
//! configuration's schema only where they share a type verbatim
//! (rate-limit rules, budgets, prices, issuers, upstream credentials,
//! console roles, policy modes).

use tollgate_config::{Audit, Config, Limits, Tracing};
use tollgate_limit::Prices;
use tollgate_meter::TokenEstimator;
use tollgate_telemetry::TracingSettings;

/// The token estimate of `[audit] bytes_per_token`.
pub(crate) fn estimator(audit: &Audit) -> TokenEstimator {
    TokenEstimator::new(audit.bytes_per_token)
}

/// The span export of `[tracing]`.
pub(crate) fn tracing(t: &Tracing) -> TracingSettings {
    TracingSettings {
        enabled: t.enabled,
        traces_url: t.traces_url(),
        service_name: t.service_name.clone(),
        sample_ratio: t.sample_ratio,
        timeout: t.timeout,
        queue_capacity: t.queue_capacity,
    }
}

/// The prices of `[[limits.prices]]`, in `[limits] currency`.
pub fn prices(limits: &Limits) -> Prices {
    Prices::new(limits.prices.clone(), limits.currency.clone())
}

/// What spend reports count and price calls against: `[limits]` budgets,
/// time zone and prices.
pub fn report(config: &Config) -> tollgate_report::Settings {
    let limits = &config.limits;
    tollgate_report::Settings {
        budgets: limits.budgets.clone(),
        time_zone: limits.time_zone.clone(),
        prices: prices(limits),
    }
}
