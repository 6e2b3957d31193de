//! The gate: may a call reach this definition, and may a list show it?
//!
//! A definition the lock approves at the revision the upstream lists today
//! passes. One the lock does not know is **quarantined** (new, awaiting
//! review); one whose live revision differs from the approved one is
//! **blocked** (changed — a rug pull until someone re-approves it). An
//! approved definition the upstream does not list (yet, or any more) is
//! **unlisted**: the call goes ahead under the approved revision and the
//! upstream answers for it. In enforce mode quarantined and blocked
//! definitions are neither callable nor listed; in observe mode everything
//! passes and the verdict is only recorded. The request path uses the
//! verdict's approval, not the live answer, for what policies see.

use std::fmt;

use crate::definition::{Definition, Kind, Revision};
use crate::lock::{Approval, Lock};
use crate::snapshot::Snapshot;

/// How a route applies the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// No gate: nothing is checked or recorded.
    #[default]
    Off,
    /// Everything passes; verdicts are recorded.
    Observe,
    /// Only approved, unchanged definitions pass.
    Enforce,
}

/// What the gate found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Approved at the revision listed today.
    Approved,
    /// Not in the lock: new, awaiting approval.
    Quarantined,
    /// Listed at a revision other than the approved one.
    Blocked,
    /// Approved, but not in the upstream's latest list.
    Unlisted,
}

impl Outcome {
    /// A stable snake_case name for logs, metrics and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Approved => "approved",
            Outcome::Quarantined => "quarantined",
            Outcome::Blocked => "blocked",
            Outcome::Unlisted => "unlisted",
        }
    }

    /// Whether a definition with this outcome may be used in enforce mode.
    pub fn passes(self) -> bool {
        matches!(self, Outcome::Approved | Outcome::Unlisted)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The gate's verdict on one definition.
#[derive(Debug, Clone, Copy)]
pub struct Verdict<'a> {
    /// What was found.
    pub outcome: Outcome,
    /// The approval in the lock, if any.
    pub approval: Option<&'a Approval>,
    /// The revision listed today, if known.
    pub live: Option<&'a Revision>,
    /// Whether the route enforces the verdict.
    pub enforced: bool,
}

impl Verdict<'_> {
    /// Whether the call (or the list entry) goes ahead.
    pub fn proceeds(&self) -> bool {
        !self.enforced || self.outcome.passes()
    }

    /// The revision the call runs against: the approved one, else the live
    /// one.
    pub fn revision(&self) -> Option<&Revision> {
        self.approval.map(|a| &a.revision).or(self.live)
    }
}

/// Judge the definition of `kind` named `key` on `server`, against its
/// latest snapshot; `None` when the route's gate is off.
pub fn judge<'a>(
    lock: &'a Lock,
    snapshot: &'a Snapshot,
    server: &str,
    kind: Kind,
    key: &str,
    mode: Mode,
) -> Option<Verdict<'a>> {
    let live = snapshot.get(kind, key).map(|d| &d.revision);
    judge_revision(lock, server, kind, key, live, mode)
}

/// Judge a definition whose live revision is `live` (e.g. an entry of a
/// list answer passing through, or `None` when not listed).
pub fn judge_revision<'a>(
    lock: &'a Lock,
    server: &str,
    kind: Kind,
    key: &str,
    live: Option<&'a Revision>,
    mode: Mode,
) -> Option<Verdict<'a>> {
    if mode == Mode::Off {
        return None;
    }
    let approval = lock.get(server, kind, key);
    let outcome = match (approval, live) {
        (None, _) => Outcome::Quarantined,
        (Some(_), None) => Outcome::Unlisted,
        (Some(a), Some(l)) if a.revision == *l => Outcome::Approved,
        (Some(_), Some(_)) => Outcome::Blocked,
    };
    Some(Verdict {
        outcome,
        approval,
        live,
        enforced: mode == Mode::Enforce,
    })
}

/// Judge a list entry as it passes through.
pub fn judge_entry<'a>(lock: &'a Lock, server: &str, definition: &'a Definition, mode: Mode) -> Option<Verdict<'a>> {
    judge_revision(
        lock,
        server,
        definition.kind,
        &definition.key,
        Some(&definition.revision),
        mode,
    )
}

#[cfg(test)]
mod tests;
