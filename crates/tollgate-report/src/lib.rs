//! Spend reports over an audit trail: usage grouped by team, cost centre,
//! user, server or tool (from the files or the audit index), priced with
//! `[[limits.prices]]`, and each budget's spend this period with its
//! projection. `tollgate usage` prints them; the console serves them.
//!
//! Off the request path: reports read what the audit sink wrote.

pub mod budgets;
pub mod csv;
mod settings;
pub mod spend;

pub use budgets::BudgetRow;
pub use settings::Settings;
