//! The virtual server's own answers, as call summaries for its observers.
//!
//! A call resolved to a member is recorded by the member route it ran
//! through (its audit record names the virtual server), and so are the
//! requests the virtual server fans out to its members. What the virtual
//! server answers itself — `initialize`, `server/discover`, the lists from
//! the catalog, `find_tools`, and its refusals — is recorded here, under
//! the virtual server's name, by the same summary builder as a route's
//! calls and the same observers: the audit trail, the call metrics and
//! spend. So `tollgate usage` counts the catalog a caller was sent
//! through a virtual server (`tools/list` tokens), and the saving of
//! search mode shows there.

use std::sync::Arc;

use axum::response::Response;
use http::header::ALLOW;
use http::{HeaderValue, StatusCode};
use http_body::Body as _;
use tollgate_core::CallObserver;

use super::{Answered, VirtualRoute};
use crate::facts::Facts;
use crate::phase::respond::rendered;
use crate::rescue::Rejection;
use crate::route::Endpoint;
use crate::stage::{Stage, Stop};
use crate::summary::{self, Ledger, Sent};

/// The observers of a virtual server's own answers.
pub(crate) struct Observers(pub(crate) Vec<Arc<dyn CallObserver>>);

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Observers({})", self.0.len())
    }
}

impl VirtualRoute {
    /// Whom the virtual server's own summaries are for.
    fn ledger(&self) -> Ledger<'_> {
        Ledger {
            name: &self.name,
            observers: &self.observers.0,
            estimator: &self.shared.estimator,
        }
    }
}

/// Record `answered`, the answer to the call `stage` knows, when it is
/// the virtual server's own; pass it on.
pub(crate) fn answered(v: &VirtualRoute, stage: impl Stage, answered: Answered) -> Response {
    match answered {
        Answered::Own(res) => {
            record(v, stage.into_facts(), None, &res);
            res
        }
        Answered::Members(res) => res,
    }
}

/// Answer with a refusal of the virtual server's, and record it.
pub(crate) fn refuse(v: &VirtualRoute, stop: Stop) -> Response {
    let (facts, rejection, mut res) = rendered(stop);
    if res.status() == StatusCode::METHOD_NOT_ALLOWED && v.serves_legacy() {
        res.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    }
    record(v, facts, Some(&rejection), &res);
    res
}

/// Hand the summary of a whole answer `res` to the virtual server's
/// observers.
fn record(v: &VirtualRoute, facts: Box<Facts>, rejection: Option<&Rejection>, res: &Response) {
    let sent = Sent {
        status: res.status().as_u16(),
        bytes: res.body().size_hint().exact().unwrap_or(0),
        complete: true,
        ..Sent::default()
    };
    summary::finish(&v.ledger(), facts, rejection, &sent, None);
}
