//! Tollgate's catalog governance: what each upstream lists, which revision
//! of each definition was approved and by whom, and whether a call may
//! reach a definition.
//!
//! - [`definition`]: a tool, prompt, resource or template as listed, and
//!   its [`Revision`] (SHA-256 of its RFC 8785 canonical JSON).
//! - [`snapshot`]: what one upstream listed at one sync.
//! - [`lock`]: the approvals of `catalog.lock`.
//! - [`poison`]: checks for text aimed at the model (tool poisoning).
//! - [`diff`]: new, changed, removed and renamed definitions against the
//!   lock, for review.
//! - [`sync`]: the MCP conversation that lists an upstream's catalog.
//! - [`gate`]: whether a call or a list entry may reach a definition.
//! - [`search`]: the ranked tool index behind a search-mode virtual
//!   server's `find_tools`.
//! - [`compose`]: what a virtual server exposes — its members' governed
//!   definitions under the names it gives them, in the members' order —
//!   and which member a name routes to.
//!
//! The server's catalog gate (request path, between `identify` and
//! `authorize`), list filtering and virtual servers read this crate's
//! decisions; the binary's `tollgate catalog` commands write the lock
//! file. No HTTP status codes here, and no configuration file: callers
//! pass the settings a function needs.

pub mod compose;
pub mod definition;
pub mod diff;
mod error;
pub mod gate;
pub mod lock;
pub mod poison;
pub mod search;
pub mod snapshot;
pub mod sync;
pub mod template;

pub use definition::{Definition, Hints, Kind, Revision};
pub use diff::{CatalogDiff, diff, diff_with};
pub use error::{CatalogError, Result};
pub use gate::{Mode, Outcome, Verdict, judge, judge_entry, judge_revision};
pub use lock::{Approval, Lock, LockError, LockErrors};
pub use poison::{Check, CheckContext, Finding, Severity, check};
pub use search::ToolIndex;
pub use snapshot::Snapshot;
pub use sync::{Outgoing, Reply, Transport, sync};
