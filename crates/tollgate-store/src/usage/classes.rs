//! Prices applied in SQL: the configured rules (`[[limits.prices]]`, the
//! first match applies) as one `CASE` giving each call the index of the
//! rule that prices it (-1: none), so that usage groups calls by that
//! index — a few groups — and not by every column a price may look at.
//! The match is `tollgate_limit::Prices::per_million`'s: a rule's routes
//! name the call's route or its virtual server; its tool patterns (`*`
//! any run of characters, as `LIKE` with every other character literal)
//! its name or its exposed name. A test compares the two on a real
//! PostgreSQL.

use tokio_postgres::types::ToSql;
use tollgate_limit::Prices;

/// The `CASE` of a set of prices and its parameters.
pub(super) struct Classes {
    /// An `integer` expression over `audit_usage`'s columns.
    pub(super) sql: String,
    params: Vec<Vec<String>>,
}

impl Classes {
    /// The classes of `prices`, their parameters numbered from `$first`.
    pub(super) fn of(prices: &Prices, first: usize) -> Classes {
        let mut classes = Classes {
            sql: String::from("-1"),
            params: Vec::new(),
        };
        if prices.currency().is_none() {
            return classes;
        }
        let mut arms = String::new();
        for (i, rule) in prices.rules().iter().enumerate() {
            let mut conds = Vec::new();
            if !rule.routes.is_empty() {
                let n = classes.param(first, rule.routes.clone());
                conds.push(format!(
                    "(COALESCE(route, '') = ANY(${n}) OR virtual_server = ANY(${n}))"
                ));
            }
            if !rule.tools.is_empty() {
                let n = classes.param(first, rule.tools.iter().map(|p| like(p)).collect());
                conds.push(format!("(name LIKE ANY(${n}) OR exposed_name LIKE ANY(${n}))"));
            }
            let cond = if conds.is_empty() {
                "TRUE".to_owned()
            } else {
                conds.join(" AND ")
            };
            arms.push_str(&format!(" WHEN {cond} THEN {i}"));
        }
        classes.sql = format!("CASE{arms} ELSE -1 END");
        classes
    }

    /// Add a parameter; its number.
    fn param(&mut self, first: usize, values: Vec<String>) -> usize {
        self.params.push(values);
        first + self.params.len() - 1
    }

    /// The parameters, in order.
    pub(super) fn params(&self) -> impl Iterator<Item = &(dyn ToSql + Sync)> {
        self.params.iter().map(|p| p as &(dyn ToSql + Sync))
    }

    /// The price per million tokens of class `class` (0 for none).
    pub(super) fn price(prices: &Prices, class: i32) -> f64 {
        usize::try_from(class)
            .ok()
            .and_then(|i| prices.rules().get(i))
            .map_or(0.0, |p| p.per_million_tokens)
    }
}

/// A tool pattern as a `LIKE` pattern: `*` any run of characters, every
/// other character literal (`%`, `_` and the escape `\` escaped).
fn like(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 4);
    for c in pattern.chars() {
        match c {
            '*' => out.push('%'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_config::Price;

    #[test]
    fn rules_become_one_case_in_their_order_with_their_lists_as_parameters() {
        let prices = Prices::new(
            vec![
                Price::new(&["github"], &["search_*"], 10.0),
                Price::new(&[], &["50%_off"], 5.0),
                Price::new(&[], &[], 1.0),
            ],
            "EUR",
        );
        let c = Classes::of(&prices, 3);
        assert_eq!(
            c.sql,
            "CASE WHEN (COALESCE(route, '') = ANY($3) OR virtual_server = ANY($3)) AND \
             (name LIKE ANY($4) OR exposed_name LIKE ANY($4)) THEN 0 \
             WHEN (name LIKE ANY($5) OR exposed_name LIKE ANY($5)) THEN 1 WHEN TRUE THEN 2 ELSE -1 END"
        );
        assert_eq!(c.params, [vec!["github"], vec!["search\\_%"], vec!["50\\%\\_off"]]);
        assert_eq!((Classes::price(&prices, 1), Classes::price(&prices, -1)), (5.0, 0.0));
        assert_eq!(Classes::of(&Prices::default(), 1).sql, "-1");
    }
}
