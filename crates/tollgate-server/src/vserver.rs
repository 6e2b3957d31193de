//! Virtual servers: one MCP endpoint, `/mcp/{name}`, composed of the
//! governed tools, prompts and resources of several member servers.
//!
//! Where it sits: the front routes a request for a virtual server here
//! instead of to a route's phases. The virtual server authenticates the
//! caller for its own URL, reads the one JSON-RPC message (bounded), and
//! either answers it itself — `server/discover`, `initialize`, `ping`, the
//! lists (from the members' approved catalog entries, filtered per caller
//! by the members' policies) and, in search mode, `find_tools` — or routes
//! it to the member that owns the name (`exposed`), renamed to the
//! member's own name (`delegate`), where it runs the member route's phases
//! from `identify` on: the same gate, policies, credential, audit and
//! metrics as a call on the member's own route. Legacy sessions hold one
//! session per member inside the sealed session id (`session`).

mod answer;
mod delegate;
mod describe;
mod exposed;
mod observe;
mod relay;
mod session;
mod tasks;

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Method, Request, StatusCode};
use tollgate_auth::ProtectedResource;
use tollgate_catalog::Kind;
use tollgate_config::Expose;
use tollgate_core::{CallObserver, Era, ErrorKind, Principal};
use tollgate_mcp::{
    CompletionRef, Message, MessageKind, RequestId, Scanned, StandardHeaders, Versions, classify_post, names_a_task,
    scan,
};

use self::exposed::Exposed;
use self::observe::Asked;
use crate::facts::Arrival;
pub(crate) use crate::facts::Delegated;
use crate::phase::authenticate::authenticate_for;
use crate::rescue::Rejection;
use crate::route::{Route, Shared};

pub use self::describe::rewritten;
pub(crate) use tollgate_config::FIND_TOOLS;

/// One member of a virtual server: the member's own route and how the
/// virtual server exposes it.
#[derive(Debug)]
pub(crate) struct Member {
    /// The member server's route (its catalog, upstream, policies, audit).
    pub(crate) route: Arc<Route>,
    /// Prefix, filters and renames.
    pub(crate) config: tollgate_config::Member,
}

/// One `[[virtual_servers]]` entry.
#[derive(Debug)]
pub(crate) struct VirtualRoute {
    /// Its name: served at `/mcp/{name}`.
    pub(crate) name: Arc<str>,
    /// The members, in configuration order.
    pub(crate) members: Vec<Member>,
    /// `all` or `search`.
    pub(crate) expose: Expose,
    /// The catalog gate of its renamed and re-described definitions.
    pub(crate) catalog: tollgate_catalog::Mode,
    /// Tools listed beside `find_tools` in search mode.
    pub(crate) pinned: Vec<String>,
    /// Who may call it, when callers must authenticate.
    pub(crate) resource: Option<ProtectedResource>,
    /// What every route shares.
    pub(crate) shared: Arc<Shared>,
    /// The largest request body read.
    pub(crate) max_body: usize,
    /// The exposed catalog last built.
    exposed: ArcSwapOption<Exposed>,
    /// Who is told of the virtual server's own answers (`observe`).
    pub(crate) observers: observe::Observers,
}

impl VirtualRoute {
    /// A virtual server from its parts.
    pub(crate) fn new(
        config: &tollgate_config::VirtualServer,
        members: Vec<Member>,
        catalog: tollgate_catalog::Mode,
        resource: Option<ProtectedResource>,
        shared: Arc<Shared>,
        max_body: usize,
        observers: Vec<Arc<dyn CallObserver>>,
    ) -> VirtualRoute {
        VirtualRoute {
            name: Arc::from(config.name.as_str()),
            members,
            expose: config.expose,
            catalog,
            pinned: config.pinned.clone(),
            resource,
            shared,
            max_body,
            exposed: ArcSwapOption::empty(),
            observers: observe::Observers(observers),
        }
    }
}

impl VirtualRoute {
    /// The protocol versions the virtual server serves: those of its
    /// members.
    pub(crate) fn versions(&self) -> Versions {
        self.members
            .iter()
            .flat_map(|m| m.route.served_versions().iter())
            .fold(Versions::empty(), Versions::with)
    }
}

/// What a virtual server exposes and how its members are doing.
#[derive(Debug)]
pub(crate) struct Health {
    /// Exposed definitions by kind.
    pub(crate) exposed: Vec<(Kind, usize)>,
    /// Names left out because two members claimed them.
    pub(crate) collisions: usize,
    /// Renamed or re-described definitions awaiting approval as exposed.
    pub(crate) awaiting: Vec<(Kind, String)>,
    /// Each member's name, and whether its latest catalog sync succeeded.
    pub(crate) members: Vec<(Arc<str>, bool)>,
}

/// The health of `v`, for `/readyz` detail and the metrics.
pub(crate) fn health(v: &VirtualRoute) -> Health {
    let exposed = exposed::current(v);
    let kinds = [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::ResourceTemplate];
    Health {
        exposed: kinds.iter().map(|k| (*k, exposed.of_kind(*k).count())).collect(),
        collisions: exposed.collisions.len(),
        awaiting: exposed.awaiting.clone(),
        members: v
            .members
            .iter()
            .map(|m| {
                let s = m.route.catalog.status();
                (m.route.name.clone(), s.last_success.is_some() && s.last_error.is_none())
            })
            .collect(),
    }
}

impl Health {
    /// As JSON for `/readyz` detail.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let exposed: serde_json::Map<String, serde_json::Value> = self
            .exposed
            .iter()
            .map(|(k, n)| (k.as_str().to_owned(), serde_json::Value::from(*n)))
            .collect();
        let members: serde_json::Map<String, serde_json::Value> = self
            .members
            .iter()
            .map(|(m, up)| (m.to_string(), serde_json::json!({"up": up})))
            .collect();
        let awaiting: Vec<serde_json::Value> = self
            .awaiting
            .iter()
            .map(|(k, n)| serde_json::json!({"kind": k.as_str(), "name": n}))
            .collect();
        serde_json::json!({
            "exposed": exposed,
            "collisions": self.collisions,
            "awaiting_approval": awaiting,
            "members": members,
        })
    }
}

/// The request as the virtual server read it.
pub(crate) struct Incoming {
    pub(crate) arrived: crate::facts::Arrived,
    pub(crate) parts: Parts,
    pub(crate) body: Bytes,
    pub(crate) message: Message,
    pub(crate) era: Era,
    pub(crate) principal: Option<Arc<Principal>>,
}

/// Serve one request on a virtual server.
pub(crate) async fn call(v: &Arc<VirtualRoute>, req: Request<Body>) -> Response {
    let (parts, body) = req.into_parts();
    let arrival = Arrival::of(&parts);
    let principal = match authenticate_for(v.resource.as_ref(), &v.shared, &parts).await {
        Ok(p) => p,
        Err(r) => return observe::own(v, &Asked::new(&arrival, None), observe::refuse(&r)),
    };
    let mut asked = Asked::new(&arrival, principal.as_ref());
    let mut incoming;
    let res = match parts.method {
        Method::POST => match read(v, arrival.arrived(), parts, body, principal.clone()).await {
            Ok(read) => {
                incoming = read;
                let res = post(v, &mut incoming).await.unwrap_or_else(|r| observe::refuse(&r));
                asked.message = Some((&incoming.message, incoming.era));
                asked.bytes_in = incoming.body.len() as u64;
                res
            }
            Err(r) => observe::refuse(&r),
        },
        Method::DELETE => session::end(v, &parts, principal.as_ref())
            .await
            .map_or_else(|r| observe::refuse(&r), observe::routed),
        Method::GET => relay::stream(v, &parts, principal.as_ref())
            .await
            .map_or_else(|r| not_allowed(&r), observe::routed),
        _ => not_allowed(&relay::no_stream()),
    };
    observe::own(v, &asked, res)
}

/// A refusal, with `Allow` when it is about the method.
fn not_allowed(rejection: &Rejection) -> Response {
    let mut res = observe::refuse(rejection);
    if res.status() == StatusCode::METHOD_NOT_ALLOWED {
        res.headers_mut()
            .insert(http::header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    }
    res
}

/// Read and scan the body: one JSON-RPC message, classified by the rules
/// every route applies (`tollgate_mcp::classify_post`).
async fn read(
    v: &VirtualRoute,
    arrived: crate::facts::Arrived,
    parts: Parts,
    body: Body,
    principal: Option<Arc<Principal>>,
) -> Result<Incoming, Rejection> {
    let body = axum::body::to_bytes(body, v.max_body).await.map_err(|e| {
        if crate::phase::identify::is_too_large(&e) {
            Rejection::new(ErrorKind::BodyTooLarge, "Request body too large")
        } else {
            Rejection::new(ErrorKind::InvalidRequest, "Invalid Request: the body could not be read")
        }
    })?;
    let scanned = scan(&body).map_err(Rejection::from)?;
    // The same rules as on a route: the standard headers must agree with
    // the body, and name a protocol version some member serves.
    let standard = StandardHeaders::read(&parts.headers);
    let call = classify_post(&standard, &scanned, v.versions()).map_err(Rejection::from)?;
    let message = match scanned {
        Scanned::Single(m) => m,
        Scanned::Batch(_) => {
            return Err(Rejection::new(
                ErrorKind::InvalidRequest,
                "Invalid Request: a virtual server takes one message per request",
            ));
        }
    };
    let era = call.era;
    Ok(Incoming {
        arrived,
        parts,
        body,
        message,
        era,
        principal,
    })
}

/// Answer or route one message (a routed one takes the request's head).
async fn post(v: &Arc<VirtualRoute>, incoming: &mut Incoming) -> Result<Response, Rejection> {
    let id = incoming.message.id.clone();
    let exposed = exposed::current(v);
    if incoming.era == Era::Legacy && incoming.message.method != "initialize" {
        session::check(v, incoming)?;
    }
    let m = &incoming.message;
    let name = m.name.clone().unwrap_or_default();
    match (m.kind, m.method.as_str()) {
        (MessageKind::Request, "initialize") => session::open(v, incoming, &exposed).await,
        (MessageKind::Request, "ping") => Ok(answer::result(id.as_ref(), "{}")),
        (MessageKind::Request, "server/discover") => Ok(answer::discover(v, &exposed, id.as_ref())),
        (MessageKind::Request, "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list") => {
            answer::list(v, &exposed, incoming)
        }
        (MessageKind::Request, "tools/call") if v.expose == Expose::Search && name == FIND_TOOLS => {
            Ok(answer::find_tools(v, &exposed, incoming))
        }
        (MessageKind::Request, "tools/call") => routed(v, &exposed, incoming, Kind::Tool, &["params", "name"]).await,
        (MessageKind::Request, "prompts/get") => routed(v, &exposed, incoming, Kind::Prompt, &["params", "name"]).await,
        (MessageKind::Request, "resources/read" | "resources/subscribe" | "resources/unsubscribe") => {
            let entry = exposed
                .resource(&name)
                .ok_or_else(|| unknown("resource", &name, id.clone()))?;
            Ok(delegate::forward(v, incoming, entry.target(), None).await)
        }
        (MessageKind::Request, method) if names_a_task(method) && exposed.tasks => tasks::route(v, incoming).await,
        (MessageKind::Request, "completion/complete") => complete(v, &exposed, incoming).await,
        (MessageKind::Request, "logging/setLevel") if incoming.era == Era::Legacy => {
            session::set_level(v, incoming).await.map(observe::routed)
        }
        (MessageKind::Request, _) => Err(Rejection::new(ErrorKind::MethodNotFound, "Method not found").with_id(id)),
        (MessageKind::Response, _) => relay::client_answer(v, incoming).await.map(observe::routed),
        // A notification in a legacy session goes to every member session;
        // a stateless one has no member session to reach.
        (MessageKind::Notification, _) if incoming.era == Era::Legacy => {
            session::notify(v, incoming).await.map(observe::routed)
        }
        (MessageKind::Notification, _) => Ok(StatusCode::ACCEPTED.into_response()),
    }
}

/// Route a tool call or prompt get by its exposed name.
async fn routed(
    v: &Arc<VirtualRoute>,
    exposed: &Exposed,
    incoming: &mut Incoming,
    kind: Kind,
    path: &[&str],
) -> Result<Response, Rejection> {
    let id = incoming.message.id.clone();
    let name = incoming.message.name.clone().unwrap_or_default();
    let entry = exposed
        .get(kind, &name)
        .ok_or_else(|| unknown(kind.as_str(), &name, id))?;
    Ok(delegate::forward(v, incoming, entry.target(), Some(path)).await)
}

/// `completion/complete`: routed by its `ref` (a prompt by exposed name,
/// a resource template by URI).
async fn complete(v: &Arc<VirtualRoute>, exposed: &Exposed, incoming: &mut Incoming) -> Result<Response, Rejection> {
    let id = incoming.message.id.clone();
    let reference = tollgate_mcp::completion_ref(&incoming.body, 0).ok_or_else(|| {
        Rejection::new(
            ErrorKind::InvalidRequest,
            "Invalid Request: completion/complete needs params.ref",
        )
        .with_id(id.clone())
    })?;
    let (entry, path): (_, Option<&[&str]>) = match reference {
        CompletionRef::Prompt(name) => (
            exposed
                .get(Kind::Prompt, &name)
                .ok_or_else(|| unknown("prompt", &name, id.clone()))?,
            Some(&["params", "ref", "name"]),
        ),
        CompletionRef::Resource(uri) => (
            exposed
                .get(Kind::ResourceTemplate, &uri)
                .or_else(|| exposed.resource(&uri))
                .ok_or_else(|| unknown("resource", &uri, id.clone()))?,
            None,
        ),
    };
    Ok(delegate::forward(v, incoming, entry.target(), path).await)
}

/// The refusal of a name no member exposes: like an unknown name.
pub(crate) fn unknown(kind: &str, name: &str, id: Option<RequestId>) -> Rejection {
    Rejection::new(ErrorKind::UnknownName, format!("Unknown {kind}: {name}")).with_id(id)
}
