//! The stages of the request path: what is known of a call after each
//! phase, as a type. Value layer: imports nothing above [`facts`].
//!
//! ```text
//! Admitted → Authenticated → Identified → Gated → Authorized → Limited
//!          → Credentialed → Forwarded
//! ```
//!
//! Each phase takes the stage it needs by value and returns the next one
//! or a [`Stop`]: a phase cannot run on facts it was not given, and no
//! phase can let a call through undecided, because the next stage can only
//! be built from the decision. Each stage holds the one before it and
//! dereferences to it, so a later phase reads an earlier fact by name
//! (`authorized.call`, `limited.facts.principal`). A stop, or the end of
//! the answer, turns the stage into the record [`Facts`].

use std::ops::Deref;
use std::sync::Arc;

use http::HeaderValue;
use tollgate_auth::UpstreamCredential;
use tollgate_core::McpMethod;
use tollgate_limit::Standing;
use tollgate_mcp::{Call, Message};
use tollgate_policy::Decision;
use tollgate_telemetry::ServerSpan;

use crate::facts::{Arrival, CallIdentity, Facts, ForwardFacts, GateFact};
use crate::rescue::Rejection;

/// Why a call went no further: the refusal, and the facts known when it
/// was refused (for its summary).
#[derive(Debug)]
pub(crate) struct Stop {
    /// The facts so far.
    pub(crate) facts: Box<Facts>,
    /// The refusal, rendered by the one error map.
    pub(crate) rejection: Rejection,
}

/// A stage of the request path.
pub(crate) trait Stage: Sized {
    /// The record of what this stage knows.
    fn into_facts(self) -> Box<Facts>;

    /// Stop the call here with `rejection`.
    fn stop(self, rejection: Rejection) -> Stop {
        Stop {
            facts: self.into_facts(),
            rejection,
        }
    }

    /// `Ok((self, value))`, or stop here with the rejection.
    ///
    /// # Errors
    ///
    /// The stop, when `result` is a rejection.
    fn check<T>(self, result: Result<T, Rejection>) -> Result<(Self, T), Stop> {
        match result {
            Ok(value) => Ok((self, value)),
            Err(rejection) => Err(self.stop(rejection)),
        }
    }
}

/// Admitted and routed: when and how the request arrived.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub(crate) facts: Box<Facts>,
}

impl Admitted {
    /// A request that has just arrived.
    pub(crate) fn new(arrival: Arrival) -> Admitted {
        Admitted {
            facts: Facts::arrived(arrival),
        }
    }
}

/// The caller is known: `facts.principal` is the verified principal, or
/// `None` on a route that requires no token.
#[derive(Debug)]
pub(crate) struct Authenticated {
    pub(crate) facts: Box<Facts>,
}

impl Authenticated {
    /// A caller another endpoint authenticated: a virtual server, for the
    /// requests it makes to its members on the caller's behalf.
    pub(crate) fn on_behalf(arrival: Arrival, principal: Option<Arc<tollgate_core::Principal>>) -> Authenticated {
        let mut facts = Facts::arrived(arrival);
        facts.principal = principal;
        Authenticated { facts }
    }
}

/// The call is identified: its era, version and messages, and its server
/// span started.
#[derive(Debug)]
pub(crate) struct Identified {
    pub(crate) facts: Box<Facts>,
    /// Era, version and messages.
    pub(crate) call: Call,
    /// The method family of the request as a whole.
    pub(crate) family: McpMethod,
    /// The request's server span.
    pub(crate) span: ServerSpan,
}

/// The catalog gate judged every message; the call may go on.
#[derive(Debug)]
pub(crate) struct Gated {
    pub(crate) identified: Identified,
    /// Per message: the gate's fact, `None` for a message that names no
    /// definition (a list, a notification, a client's response).
    pub(crate) gate: Vec<Option<GateFact>>,
    /// The caller's own grant at a `user_oauth` upstream, looked up for
    /// policies that read `context.upstream_grant`.
    pub(crate) connection: Option<Connection>,
}

/// What policies may know of the caller's own upstream grant: its scopes,
/// `None` when they have not connected.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) scopes: Option<Vec<String>>,
}

/// What the policies said of a call that may go on.
#[derive(Debug)]
pub(crate) enum Decisions {
    /// The gateway runs without policies: every call is allowed.
    Unchecked,
    /// Per message (one for a GET stream or DELETE); `None` for a message
    /// that is not decided (a client's response in a legacy batch).
    Decided(Vec<Option<Decision>>),
}

/// The policies allowed the call (or observed it).
#[derive(Debug)]
pub(crate) struct Authorized {
    pub(crate) gated: Gated,
    pub(crate) decisions: Decisions,
}

/// Where a call that may go stands under the budgets.
#[derive(Debug)]
pub(crate) enum Budget {
    /// No budget counts this call (none configured for its caller, or the
    /// request carries no JSON-RPC request).
    Unbudgeted,
    /// Its tightest budget, and whether one is past its warning share.
    Within(Standing),
}

/// The rate limits and budgets have room for the call.
#[derive(Debug)]
pub(crate) struct Limited {
    pub(crate) authorized: Authorized,
    pub(crate) budget: Budget,
}

/// What goes upstream in place of the caller's credentials.
#[derive(Debug, Default)]
pub(crate) struct Outbound {
    /// The upstream's own session id (legacy calls with a session).
    pub(crate) session: Option<HeaderValue>,
    /// The brokered credential.
    pub(crate) credential: Option<UpstreamCredential>,
    /// The caller's own upstream grant it is, for a `user_oauth` route.
    pub(crate) grant: Option<Arc<tollgate_core::UpstreamGrantNote>>,
}

/// The upstream session and credential are settled.
#[derive(Debug)]
pub(crate) struct Credentialed {
    pub(crate) limited: Limited,
    pub(crate) outbound: Outbound,
}

/// The upstream answered (its head; the body streams).
#[derive(Debug)]
pub(crate) struct Forwarded {
    pub(crate) limited: Limited,
    pub(crate) upstream: ForwardFacts,
}

/// Each stage reads as the one before it.
macro_rules! builds_on {
    ($stage:ty, $field:ident, $previous:ty) => {
        impl Deref for $stage {
            type Target = $previous;

            fn deref(&self) -> &$previous {
                &self.$field
            }
        }
    };
}

builds_on!(Gated, identified, Identified);
builds_on!(Authorized, gated, Gated);
builds_on!(Limited, authorized, Authorized);
builds_on!(Credentialed, limited, Limited);
builds_on!(Forwarded, limited, Limited);

impl Stage for Admitted {
    fn into_facts(self) -> Box<Facts> {
        self.facts
    }
}

impl Stage for Authenticated {
    fn into_facts(self) -> Box<Facts> {
        self.facts
    }
}

impl Stage for Identified {
    fn into_facts(self) -> Box<Facts> {
        let mut facts = self.facts;
        facts.identified = Some(CallIdentity {
            call: self.call,
            family: self.family,
        });
        facts.span = Some(self.span);
        facts
    }
}

impl Stage for Gated {
    fn into_facts(self) -> Box<Facts> {
        let mut facts = self.identified.into_facts();
        facts.gated = self.gate;
        facts
    }
}

impl Stage for Authorized {
    fn into_facts(self) -> Box<Facts> {
        let mut facts = self.gated.into_facts();
        if let Decisions::Decided(decisions) = self.decisions {
            facts.decisions = decisions;
        }
        facts
    }
}

impl Stage for Limited {
    fn into_facts(self) -> Box<Facts> {
        let mut facts = self.authorized.into_facts();
        facts.budget = self.budget.note();
        facts
    }
}

impl Stage for Credentialed {
    fn into_facts(self) -> Box<Facts> {
        self.limited.into_facts()
    }
}

impl Stage for Forwarded {
    fn into_facts(self) -> Box<Facts> {
        let mut facts = self.limited.into_facts();
        facts.forwarded = Some(self.upstream);
        facts
    }
}

impl Budget {
    /// What the summary says of the call's budget: the budget past its
    /// warning share, if any.
    pub(crate) fn note(&self) -> Option<tollgate_core::BudgetNote> {
        match self {
            Budget::Unbudgeted => None,
            Budget::Within(standing) => standing.warn.then(|| tollgate_core::BudgetNote {
                id: standing.budget.clone(),
                warn: true,
                exhausted: false,
            }),
        }
    }
}

impl Identified {
    /// The messages of the call.
    pub(crate) fn messages(&self) -> &[Message] {
        &self.call.messages
    }

    /// The id of the call's first message (echoed by a refusal).
    pub(crate) fn first_id(&self) -> Option<tollgate_mcp::RequestId> {
        self.call.messages.first().and_then(|m| m.id.clone())
    }

    /// The verified caller (`None` on an open route).
    pub(crate) fn principal(&self) -> Option<&Arc<tollgate_core::Principal>> {
        self.facts.principal.as_ref()
    }
}
