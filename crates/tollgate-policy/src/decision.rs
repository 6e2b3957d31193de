//! The answer of the policy engine: allowed or not, why, which policies
//! determined it, and whether the route enforces it.
//!
//! The server turns a denial into its response (request path step 8): a
//! plain [`Reason::Deny`] or [`Reason::Error`] answers like an unknown
//! name (JSON-RPC `-32602`) so a caller cannot probe for hidden tools;
//! [`Reason::DenyMissingScope`] answers 403 `insufficient_scope` so the
//! client can step up. The determining policy ids go to the log and the
//! audit record, never to the caller.

use std::sync::Arc;

/// Why a call was allowed or denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A `permit` matched and no `forbid` did.
    Allow,
    /// No `permit` matched (default deny), or a `forbid` did.
    Deny,
    /// Only `forbid` policies annotated `@scope(..)` denied the call, the
    /// caller lacks those scopes, and with them the call would be allowed.
    DenyMissingScope {
        /// The scopes to ask for (those named by the determining policies
        /// that the token lacks), in policy order.
        scopes: Vec<String>,
    },
    /// A policy could not be evaluated (missing data, overflow, ...): the
    /// call is denied (fail closed).
    Error {
        /// What went wrong, per policy, for the log.
        messages: Vec<String>,
    },
}

impl Reason {
    /// A stable name for logs, metrics and audit records.
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Allow => "allow",
            Reason::Deny => "deny",
            Reason::DenyMissingScope { .. } => "deny_missing_scope",
            Reason::Error { .. } => "error",
        }
    }
}

/// One authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// What the policies say.
    pub allowed: bool,
    /// Whether the route enforces the decision (`false` in observe mode:
    /// the call goes ahead whatever [`Decision::allowed`] says).
    pub enforced: bool,
    /// Why.
    pub reason: Reason,
    /// The `@id`s of the policies that determined the decision: the
    /// matching permits for an allow, the matching forbids for a deny
    /// (empty for a default deny), the failing policies for an error.
    pub determining_policy_ids: Vec<Arc<str>>,
    /// The generation of the policy set that decided (1 for the set loaded
    /// at start, +1 per successful reload).
    pub generation: u64,
}

impl Decision {
    /// Whether the call may go ahead: allowed, or not enforced.
    pub fn proceeds(&self) -> bool {
        self.allowed || !self.enforced
    }

    /// The scopes to ask for when the denial is for missing scopes.
    pub fn missing_scopes(&self) -> Option<&[String]> {
        match &self.reason {
            Reason::DenyMissingScope { scopes } => Some(scopes),
            _ => None,
        }
    }
}

/// The decisions for the entries of one list response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListDecision {
    /// Per entry, in order: whether the caller may use it.
    pub allowed: Vec<bool>,
    /// Whether the route enforces the filter (`false` in observe mode:
    /// nothing is removed).
    pub enforced: bool,
    /// Entries whose decision was an evaluation error (and so hidden).
    pub errors: usize,
    /// The generation of the policy set that decided.
    pub generation: u64,
}

impl ListDecision {
    /// Whether entry `i` stays in the response.
    pub fn keeps(&self, i: usize) -> bool {
        !self.enforced || self.allowed.get(i).copied().unwrap_or(false)
    }

    /// How many entries the policies hide (whether enforced or not).
    pub fn hidden(&self) -> usize {
        self.allowed.iter().filter(|a| !**a).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observe_mode_proceeds_and_keeps_everything() {
        let mut d = Decision {
            allowed: false,
            enforced: true,
            reason: Reason::DenyMissingScope {
                scopes: vec!["mcp:admin".into()],
            },
            determining_policy_ids: vec![Arc::from("p")],
            generation: 1,
        };
        assert!(!d.proceeds());
        assert_eq!(d.missing_scopes(), Some(&["mcp:admin".to_owned()][..]));
        d.enforced = false;
        assert!(d.proceeds());
        let mut l = ListDecision {
            allowed: vec![true, false],
            enforced: true,
            errors: 0,
            generation: 1,
        };
        assert!(l.keeps(0) && !l.keeps(1) && !l.keeps(2));
        l.enforced = false;
        assert!(l.keeps(1));
        assert_eq!(l.hidden(), 1);
        assert_eq!(Reason::Error { messages: vec![] }.as_str(), "error");
    }
}
