//! Prices: what the estimated tokens of a call cost, from `[[limits.prices]]`.
//!
//! Not on the request path: reports (`tollgate usage`) price the calls of
//! the audit trail with the configuration they are given, so a price
//! change can be applied to past spend. A call is priced by the first
//! price whose routes and name patterns match it, as rate-limit rules
//! match; a call no price matches costs nothing.

use tollgate_config::Price;

use crate::key::covers;

/// The prices calls are charged at, and their currency.
#[derive(Debug, Clone, Default)]
pub struct Prices {
    prices: Vec<Price>,
    currency: String,
}

/// What a priced call is known by.
#[derive(Debug, Clone, Copy, Default)]
pub struct Priced<'a> {
    /// The route that served it.
    pub route: &'a str,
    /// The virtual server it was made through, if any.
    pub via: Option<&'a str>,
    /// The tool or prompt name the upstream knows.
    pub name: Option<&'a str>,
    /// The name the virtual server exposed, if any.
    pub exposed: Option<&'a str>,
}

impl Prices {
    /// `prices` (`[[limits.prices]]`, the first match applies) in
    /// `currency`.
    pub fn new(prices: Vec<Price>, currency: impl Into<String>) -> Prices {
        Prices {
            prices,
            currency: currency.into(),
        }
    }

    /// The currency, when there are prices; `None` without any.
    pub fn currency(&self) -> Option<&str> {
        (!self.prices.is_empty()).then_some(self.currency.as_str())
    }

    /// The prices, in the order they are tried.
    pub fn rules(&self) -> &[Price] {
        &self.prices
    }

    /// The price of a million tokens of `call`, if a price matches it.
    pub fn per_million(&self, call: &Priced<'_>) -> Option<f64> {
        self.prices
            .iter()
            .find(|p| matches(p, call))
            .map(|p| p.per_million_tokens)
    }

    /// What `tokens` estimated tokens of `call` cost.
    pub fn cost(&self, call: &Priced<'_>, tokens: u64) -> f64 {
        self.per_million(call).map_or(0.0, |p| p * tokens as f64 / 1_000_000.0)
    }
}

fn matches(price: &Price, call: &Priced<'_>) -> bool {
    covers(
        (&price.routes, &price.tools),
        (call.route, call.via),
        [call.name, call.exposed],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_price_applies() {
        let prices = Prices::new(
            vec![
                Price::new(&["github"], &["search_*"], 10.0),
                Price::new(&["github"], &[], 2.0),
                Price::new(&["workspace"], &[], 1.0),
            ],
            "EUR",
        );
        assert_eq!(prices.currency(), Some("EUR"));
        let call = |route, name| Priced {
            route,
            name: Some(name),
            ..Priced::default()
        };
        assert_eq!(prices.per_million(&call("github", "search_code")), Some(10.0));
        assert_eq!(prices.per_million(&call("github", "create_issue")), Some(2.0));
        assert_eq!(prices.per_million(&call("jira", "create_issue")), None);
        assert!((prices.cost(&call("github", "search_code"), 250_000) - 2.5).abs() < 1e-9);
        assert_eq!(prices.cost(&call("jira", "x"), 1_000_000), 0.0);
        // Through a virtual server, by its name or the exposed name.
        let via = Priced {
            route: "jira",
            via: Some("workspace"),
            name: Some("x"),
            exposed: Some("jira_x"),
        };
        assert_eq!(prices.per_million(&via), Some(1.0));
        assert_eq!(prices.rules().len(), 3);
        assert_eq!(Prices::default().currency(), None);
    }
}
