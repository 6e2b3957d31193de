//! The virtual server's own answers, as call summaries for its observers.
//!
//! A routed call is recorded by the member route it ran through (its
//! audit record names the virtual server). What the virtual server answers
//! itself — `initialize`, `server/discover`, the lists from the catalog,
//! `find_tools`, and its refusals — is recorded here, under the virtual
//! server's name, by the same observers as a route's: the audit trail, the
//! call metrics and spend. So `tollgate usage` counts the catalogue a
//! caller was sent through a virtual server (`tools/list` tokens), and the
//! saving of search mode shows there.

use std::sync::Arc;

use axum::response::Response;
use http_body::Body as _;
use tollgate_core::{Answer, CallElement, CallObserver, CallSummary, Era, ErrorKind, McpMethod, Principal, Stage, Via};
use tollgate_mcp::Message;

use super::VirtualRoute;
use crate::facts::Arrival;
use crate::rescue::{Rejection, render};

/// The observers of a virtual server's own answers.
pub(crate) struct Observers(pub(crate) Vec<Arc<dyn CallObserver>>);

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Observers({})", self.0.len())
    }
}

/// Marks a response a member route produced (and recorded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routed;

/// Marks a response that is the virtual server's refusal.
#[derive(Debug, Clone, Copy)]
struct Rejected(ErrorKind);

/// A refusal by the virtual server, rendered and marked for its summary.
pub(crate) fn refuse(r: &Rejection) -> Response {
    let mut res = render(r);
    res.extensions_mut().insert(Rejected(r.kind));
    res
}

/// Mark `res` as produced by a member route.
pub(crate) fn routed(mut res: Response) -> Response {
    res.extensions_mut().insert(Routed);
    res
}

/// What the virtual server knows of the request it answered.
pub(crate) struct Asked<'a> {
    pub(crate) arrival: &'a Arrival,
    pub(crate) principal: Option<&'a Arc<Principal>>,
    /// The message and its era, once the body was read.
    pub(crate) message: Option<(&'a Message, Era)>,
    pub(crate) bytes_in: u64,
}

impl<'a> Asked<'a> {
    /// A request whose body was not read (yet).
    pub(crate) fn new(arrival: &'a Arrival, principal: Option<&'a Arc<Principal>>) -> Asked<'a> {
        Asked {
            arrival,
            principal,
            message: None,
            bytes_in: 0,
        }
    }
}

/// Hand the summary of `res` to the virtual server's observers, unless a
/// member route produced it; `res` is passed on unchanged. The virtual
/// server's own answers are whole bodies, so their size is known here.
pub(crate) fn own(v: &VirtualRoute, asked: &Asked<'_>, res: Response) -> Response {
    if res.extensions().get::<Routed>().is_some() || v.observers.0.is_empty() {
        return res;
    }
    let bytes = res.body().size_hint().exact().unwrap_or(0);
    let error = res.extensions().get::<Rejected>().map(|r| r.0);
    let mut summary = CallSummary::new(
        asked.arrival.request_id.clone(),
        v.name.clone(),
        asked.arrival.received,
        asked
            .message
            .map_or(McpMethod::Other, |(m, _)| McpMethod::from_name(&m.method)),
    );
    summary.stage = Stage::Complete;
    summary.client_ip = asked.arrival.client_ip;
    summary.principal = asked.principal.cloned();
    summary.era = asked.message.map(|(_, era)| era);
    summary.bytes_in = asked.bytes_in;
    summary.elements = asked
        .message
        .map(|(m, _)| element(m, error.map(crate::rescue::rpc_code)))
        .into_iter()
        .collect();
    summary.answer = Answer {
        status: res.status().as_u16(),
        error,
        rpc_error: error.map(crate::rescue::rpc_code),
        bytes_out: bytes,
        tokens: v.shared.estimator.estimate(bytes),
        ttfb: None,
        duration: asked.arrival.start.elapsed(),
        aborted: false,
    };
    summary.via = Some(Arc::new(Via {
        virtual_server: v.name.clone(),
        exposed_name: None,
    }));
    for observer in &v.observers.0 {
        observer.observe(&summary);
    }
    res
}

fn element(m: &Message, rpc_error: Option<i64>) -> CallElement {
    CallElement {
        jsonrpc_id: m.id.as_ref().map(|id| Box::from(id.as_json())),
        method: m.method.clone(),
        family: McpMethod::from_name(&m.method),
        name: m.name.clone(),
        policy: None,
        definition: None,
        catalog: None,
        rpc_error,
    }
}
