//! What reports count and price calls against, as the server maps it from
//! `[limits]`.

use tollgate_config::Budget;
use tollgate_limit::Prices;

/// The budgets, the time zone of their periods, and the prices.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The budgets (`[[limits.budgets]]`), in configuration order.
    pub budgets: Vec<Budget>,
    /// The IANA time zone budget periods start in (`[limits] time_zone`).
    pub time_zone: String,
    /// What calls cost (`[[limits.prices]]`).
    pub prices: Prices,
}
