//! Tollgate authorization with Cedar policies (request path step 8, and the
//! list filtering of step 12).
//!
//! The crate owns the Cedar model of an MCP call (`policies/schema.cedarschema`:
//! principal = the caller, action = the method family, resource = the tool,
//! resource or prompt under its server, itself under the virtual server a
//! call came through, context = token, route, time, arguments and
//! annotations), the [`PolicyEngine`] that decides calls and
//! filters lists, hot reload and the file watcher, and the tooling behind
//! `tollgate policy validate` ([`validate`]) and `tollgate policy test`
//! ([`run_tests`]).
//!
//! Decisions are default deny, `forbid` wins, and an evaluation error
//! denies. A denial determined only by `@scope("...")` forbids the caller
//! fails is a [`Reason::DenyMissingScope`] (the server answers 403
//! `insufficient_scope`); any other denial is [`Reason::Deny`] or
//! [`Reason::Error`] (the server answers like an unknown name). Routes in
//! observe mode get decisions with `enforced: false`.
//!
//! The request path builds almost nothing per decision: the principal's
//! entity is cached per verified token, a scope index picks the few policies
//! whose principal, action and resource scopes can match, and only the
//! context attributes that policies read are built. See `docs/policies.md`.

mod authorize;
mod cache;
mod clock;
mod compile;
mod conformance;
mod decision;
mod engine;
mod error;
mod ids;
mod index;
mod list;
mod locate;
mod model;
mod needs;
mod principal;
mod reload;
mod request;
mod testing;
mod validate;
mod watch;

pub use decision::{Decision, ListDecision, Reason};
pub use engine::{PolicyEngine, PolicySummary, Settings};
pub use error::{Error, LoadErrors, Result, SourceError};
pub use ids::{NAMESPACE, target_id};
pub use model::{Action, CallRequest, ListItem, ListRequest, TargetKind, ToolAnnotations, UpstreamGrantFacts};
pub use reload::{PolicyStatus, ReloadOutcome};
pub use testing::{CaseResult, TestReport, run_tests};
pub use validate::{Summary, validate, validate_files};
pub use watch::{DEBOUNCE, PolicyWatcher};
