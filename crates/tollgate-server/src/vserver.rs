//! Virtual servers: one MCP endpoint, `/mcp/{name}`, composed of the
//! governed tools, prompts and resources of several member servers.
//!
//! Where it sits: a virtual server is a routing decision on the one
//! request path. The front hands it a request; it runs the same phases a
//! route runs up to `identify` — authenticated once for its own URL, the
//! body scanned and classified once against the versions its members
//! serve — then `resolve`s the call: to the member that owns the name
//! (`exposed`), renamed to the member's own name by a splice (`delegate`),
//! where the member route's phases take it from the catalog gate on — the
//! same gate, policies, limits, credential, audit and metrics as a call on
//! the member's own route; or to an answer given here — `server/discover`,
//! `initialize`, `ping`, the lists (the members' approved catalog
//! entries, filtered per caller by the members' policies), `find_tools`
//! in search mode — recorded by the same summary builder under the
//! virtual server's name (`observe`). Legacy sessions hold one session per
//! member inside the sealed session id (`session`).

mod answer;
mod delegate;
mod describe;
mod exposed;
mod live;
mod observe;
mod per_user;
mod relay;
mod resolve;
mod session;
mod tasks;

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::Request;
use http::request::Parts;
use tollgate_auth::ProtectedResource;
use tollgate_catalog::Kind;
use tollgate_config::Expose;
use tollgate_core::{CallObserver, Era, ErrorKind, McpMethod, Principal, Via};
use tollgate_mcp::{Call, McpError, Message, RequestId, Versions};

use self::exposed::{Exposed, Target};
use self::resolve::Resolved;
use crate::facts::{Arrival, Arrived};
use crate::phase::authenticate::authenticate;
use crate::phase::classify::classify;
use crate::phase::identify::identify;
use crate::rescue::Rejection;
use crate::route::{Endpoint, Route, Shared};
use crate::stage::{Admitted, Identified, Stage, Stop};

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
    /// How its calls are recorded: through it, under no exposed name.
    pub(crate) via: Arc<Via>,
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
        observers: Vec<Arc<dyn CallObserver>>,
    ) -> VirtualRoute {
        let name: Arc<str> = Arc::from(config.name.as_str());
        VirtualRoute {
            via: Arc::new(Via {
                virtual_server: name.clone(),
                exposed_name: None,
            }),
            name,
            members,
            expose: config.expose,
            catalog,
            pinned: config.pinned.clone(),
            resource,
            shared,
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

/// Authenticate and identify read the virtual server as the endpoint: its
/// own resource, and what its members serve. Its body is always scanned:
/// the call is routed by the name in it.
impl Endpoint for VirtualRoute {
    fn name(&self) -> &Arc<str> {
        &self.name
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn resource(&self) -> Option<&ProtectedResource> {
        self.resource.as_ref()
    }

    fn trusts_headers(&self) -> bool {
        false
    }

    fn serves_legacy(&self) -> bool {
        self.members.iter().any(|m| m.route.legacy())
    }

    fn versions(&self) -> Versions {
        VirtualRoute::versions(self)
    }

    fn version_refusal(&self, e: McpError) -> McpError {
        e
    }

    /// A routed call is captured by its member route (`delegate`).
    fn captures(&self, _: &Call) -> bool {
        false
    }
}

/// What a virtual server exposes and how its members are doing.
#[derive(Debug)]
pub(crate) struct Health {
    /// Exposed definitions by kind.
    pub(crate) exposed: Vec<(Kind, usize)>,
    /// Names left out because two members claimed them, each with the
    /// members that claim it.
    pub(crate) collisions: Vec<Collision>,
    /// Renamed or re-described definitions awaiting approval as exposed.
    pub(crate) awaiting: Vec<(Kind, String)>,
    /// Each member's name, and whether its latest catalog sync succeeded.
    pub(crate) members: Vec<(Arc<str>, bool)>,
}

/// An exposed name two or more members claim: left out of the virtual
/// server until the configuration or a catalog changes.
#[derive(Debug)]
pub(crate) struct Collision {
    /// Tool, prompt, resource or template.
    pub(crate) kind: Kind,
    /// The exposed name (a resource's URI).
    pub(crate) name: String,
    /// The members whose definitions are exposed under it.
    pub(crate) members: Vec<Arc<str>>,
}

impl Collision {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"kind": self.kind.as_str(), "name": self.name, "members": self.members})
    }
}

/// The health of `v`, for `/readyz` detail and the metrics.
pub(crate) fn health(v: &VirtualRoute) -> Health {
    let exposed = exposed::current(v);
    let kinds = [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::ResourceTemplate];
    Health {
        exposed: kinds.iter().map(|k| (*k, exposed.of_kind(*k).count())).collect(),
        collisions: exposed
            .collisions
            .iter()
            .map(|(kind, name)| Collision {
                kind: *kind,
                members: exposed::claimants(v, *kind, name),
                name: name.clone(),
            })
            .collect(),
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
            "collisions": self.collisions.len(),
            "collided": self.collisions.iter().map(Collision::to_json).collect::<Vec<_>>(),
            "awaiting_approval": awaiting,
            "members": members,
        })
    }
}

/// The call as the virtual server identified it: one JSON-RPC message.
pub(crate) struct Incoming {
    pub(crate) arrived: Arrived,
    pub(crate) parts: Parts,
    pub(crate) body: Bytes,
    pub(crate) message: Message,
    pub(crate) era: Era,
    pub(crate) principal: Option<Arc<Principal>>,
}

impl Incoming {
    /// The one message of an identified call (a batch is refused: each
    /// message may belong to another member).
    fn of(identified: &Identified, parts: Parts) -> Result<Incoming, Rejection> {
        let [message] = identified.messages() else {
            return Err(Rejection::new(
                ErrorKind::InvalidRequest,
                "Invalid Request: a virtual server takes one message per request",
            ));
        };
        Ok(Incoming {
            arrived: identified.facts.arrival.arrived(),
            parts,
            body: identified.facts.body.bytes.clone().unwrap_or_default(),
            message: message.clone(),
            era: identified.call.era,
            principal: identified.principal().cloned(),
        })
    }
}

/// Serve one request on a virtual server.
pub(crate) async fn call(v: &Arc<VirtualRoute>, req: Request<Body>) -> Response {
    let (parts, body) = req.into_parts();
    let admitted = Admitted::new(Arrival::of(&parts).through(v.via.clone()));
    pipeline(v, admitted, parts, body)
        .await
        .unwrap_or_else(|stop| observe::refuse(v, stop))
}

/// The phases of a call on a virtual server: those of a route up to
/// `identify`, then `resolve`.
async fn pipeline(v: &Arc<VirtualRoute>, admitted: Admitted, parts: Parts, body: Body) -> Result<Response, Stop> {
    let authenticated = authenticate(&**v, admitted, &parts).await?;
    let request = classify(&parts);
    let (identified, _) = identify(&**v, &request, authenticated, &parts, body).await?;
    match identified.family {
        // Boxed, here and below: the rare paths' futures (streams, session
        // ends, the answers given here) would otherwise make every routed
        // call's future as large as theirs, copied as such.
        McpMethod::StreamGet => {
            let streams = Box::pin(relay::stream(v, &parts, identified.principal())).await;
            let (identified, res) = identified.check(streams)?;
            Ok(observe::answered(v, identified, Answered::Members(res)))
        }
        McpMethod::SessionDelete => {
            let ended = Box::pin(session::end(v, &parts, identified.principal())).await;
            let (identified, res) = identified.check(ended)?;
            Ok(observe::answered(v, identified, Answered::Members(res)))
        }
        _ => post(v, identified, parts).await,
    }
}

/// A POSTed message: resolved, then sent to its member or answered here.
async fn post(v: &Arc<VirtualRoute>, identified: Identified, parts: Parts) -> Result<Response, Stop> {
    let read = Incoming::of(&identified, parts);
    let (identified, mut incoming) = identified.check(read)?;
    let exposed = exposed::current(v);
    let resolved = resolve::resolve(v, &exposed, &incoming);
    let (identified, resolved) = identified.check(resolved)?;
    match resolved {
        Resolved::Member(target, path) => delegate::forward(v, identified, &mut incoming, target, path).await,
        Resolved::Named { member, own, path } => {
            let name = incoming.message.name.clone().unwrap_or_default();
            let target = Target {
                member,
                exposed: &name,
                own: &own,
            };
            delegate::forward(v, identified, &mut incoming, target, path).await
        }
        Resolved::Here(here) => {
            let answered = Box::pin(answer::here(v, &exposed, &incoming, here)).await;
            let (identified, answered) = identified.check(answered)?;
            Ok(observe::answered(v, identified, answered))
        }
    }
}

/// An answer given on a virtual server.
pub(crate) enum Answered {
    /// The virtual server's own answer, recorded under its name.
    Own(Response),
    /// The members' answers to the requests it made for the call (each
    /// recorded by the member route it ran through).
    Members(Response),
}

/// The refusal of a name no member exposes: like an unknown name.
pub(crate) fn unknown(kind: &str, name: &str, id: Option<RequestId>) -> Rejection {
    Rejection::new(ErrorKind::UnknownName, format!("Unknown {kind}: {name}")).with_id(id)
}
