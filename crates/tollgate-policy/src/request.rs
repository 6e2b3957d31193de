//! Building one authorization request: the resource entity, the arguments
//! entity, the context, and the entity store Cedar evaluates against.
//!
//! Request path step 8. Values are built directly (no expression
//! evaluation), the principal comes prebuilt from the principal cache, the
//! store is assembled from shared entities without recomputing the
//! hierarchy (it is shallow and closed by construction: principals under
//! groups and teams, objects under their server and, through a virtual
//! server, under it too, servers under the virtual server a call came
//! through, actions under their groups), and context attributes no policy
//! reads are left out.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use cedar_policy::EntityUid;
use cedar_policy_core::ast::{
    Context, Entity, EntityUID, EntityUIDEntry, Name, PartialValue, Request, RestrictedExpr, Value,
};
use cedar_policy_core::entities::{Entities, NoEntitiesSchema, TCComputation};
use cedar_policy_core::evaluator::RestrictedEvaluator;
use cedar_policy_core::extensions::Extensions;
use smol_str::SmolStr;
use tollgate_core::Era;

use crate::clock::{self, Local};
use crate::ids::Types;
use crate::model::{TargetKind, ToolAnnotations, UpstreamGrantFacts};
use crate::needs::{Attr, Needs};
use crate::principal::PrincipalFacts;

/// Values every request may share, built once per engine.
#[derive(Debug)]
pub(crate) struct Statics {
    /// `context.annotations` for each combination of the four hints.
    annotations: Vec<Value>,
    modern: Value,
    legacy: Value,
    /// `Tollgate::Arguments::""` and its empty entity.
    args_uid: EntityUID,
    empty_args: Arc<Entity>,
}

impl Statics {
    pub(crate) fn new(types: &Types) -> Statics {
        let annotations = (0..16)
            .map(|bits: usize| {
                let hint = |b: usize| Value::from(bits & (1 << b) != 0);
                Value::record(
                    [
                        ("read_only", hint(0)),
                        ("destructive", hint(1)),
                        ("idempotent", hint(2)),
                        ("open_world", hint(3)),
                    ],
                    None,
                )
            })
            .collect();
        let args_uid: EntityUID = Types::uid(&types.arguments, "").into();
        Statics {
            annotations,
            modern: Value::from(Era::Modern.as_str()),
            legacy: Value::from(Era::Legacy.as_str()),
            empty_args: Arc::new(Entity::with_uid(args_uid.clone())),
            args_uid,
        }
    }
}

/// The facts of one request, as the server gave them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts<'a> {
    pub(crate) route: &'a str,
    pub(crate) method: &'a str,
    pub(crate) era: Era,
    pub(crate) client_ip: Option<IpAddr>,
    pub(crate) annotations: Option<ToolAnnotations>,
    /// Unix seconds.
    pub(crate) now: i64,
    /// Seconds east of UTC.
    pub(crate) utc_offset: i32,
    /// The virtual server the call came through.
    pub(crate) virtual_server: Option<&'a str>,
    /// The caller's grant at a `user_oauth` route's upstream.
    pub(crate) upstream_grant: Option<UpstreamGrantFacts<'a>>,
}

/// The ancestors of a request's resource, transitively closed and held
/// inline: a named object's `Server`, and the `VirtualServer` the call came
/// through. The scope index matches `in` against them, and they are the
/// parents of the resource's entity.
#[derive(Debug, Clone)]
pub(crate) enum Within {
    Nothing,
    One([EntityUid; 1]),
    Two([EntityUid; 2]),
}

impl Within {
    /// What a named object on `route` is in, reached through
    /// `virtual_server`.
    pub(crate) fn target(types: &Types, route: &str, virtual_server: Option<&str>) -> Within {
        let server = types.server_uid(route);
        match virtual_server {
            Some(v) => Within::Two([server, types.virtual_server_uid(v)]),
            None => Within::One([server]),
        }
    }

    /// What a route's `Server` is in, reached through `virtual_server`.
    pub(crate) fn server(types: &Types, virtual_server: Option<&str>) -> Within {
        match virtual_server {
            Some(v) => Within::One([types.virtual_server_uid(v)]),
            None => Within::Nothing,
        }
    }

    /// The ancestors.
    pub(crate) fn uids(&self) -> &[EntityUid] {
        match self {
            Within::Nothing => &[],
            Within::One(u) => u,
            Within::Two(u) => u,
        }
    }

    fn parents(&self) -> HashSet<EntityUID> {
        self.uids().iter().cloned().map(Into::into).collect()
    }
}

/// A named object on a route as an entity: `Tool`, `Resource` or `Prompt`,
/// child of the server and virtual server of `within`.
pub(crate) fn target_entity(
    types: &Types,
    kind: TargetKind,
    route: &str,
    name: &str,
    within: &Within,
) -> (EntityUid, Arc<Entity>) {
    let uid = types.target_uid(kind, route, name);
    let string = |s: &str| PartialValue::from(Value::from(s));
    let attrs: Vec<(SmolStr, PartialValue)> = match kind {
        TargetKind::Resource => vec![
            ("uri".into(), string(name)),
            ("scheme".into(), string(name.split_once(':').map_or("", |(s, _)| s))),
            ("server".into(), string(route)),
        ],
        TargetKind::Tool | TargetKind::Prompt => vec![("name".into(), string(name)), ("server".into(), string(route))],
    };
    let entity = Entity::new_with_attr_partial_value(uid.clone().into(), attrs, HashSet::new(), within.parents(), []);
    (uid, Arc::new(entity))
}

/// A route as an entity: `Tollgate::Server::"<route>"`, child of the
/// virtual server of `within`.
pub(crate) fn server_entity(types: &Types, route: &str, within: &Within) -> (EntityUid, Arc<Entity>) {
    let uid = types.server_uid(route);
    let attrs = [(SmolStr::new_static("name"), PartialValue::from(Value::from(route)))];
    let entity = Entity::new_with_attr_partial_value(uid.clone().into(), attrs, HashSet::new(), within.parents(), []);
    (uid, Arc::new(entity))
}

/// The `Arguments` entity of a call: one string tag per `Mcp-Param-*`
/// argument, named in lowercase.
pub(crate) fn args_entity(statics: &Statics, args: &[(&str, &str)]) -> Arc<Entity> {
    if args.is_empty() {
        return Arc::clone(&statics.empty_args);
    }
    let tags = args.iter().map(|(k, v)| {
        (
            SmolStr::from(k.to_ascii_lowercase()),
            PartialValue::from(Value::from(*v)),
        )
    });
    Arc::new(Entity::new_with_attr_partial_value(
        statics.args_uid.clone(),
        [],
        HashSet::new(),
        HashSet::new(),
        tags,
    ))
}

/// The context of a request, with the attributes in `needs` that can be
/// known (`client_ip` without an address is left out: a policy reading it
/// then fails, and the request is denied).
pub(crate) fn context(
    needs: Needs,
    statics: &Statics,
    p: &PrincipalFacts,
    f: &Facts<'_>,
    local: Local,
) -> Result<Context, String> {
    let mut map: BTreeMap<SmolStr, Value> = BTreeMap::new();
    for attr in Attr::ALL.into_iter().filter(|a| needs.has(*a)) {
        let value = match attr {
            Attr::Route => Value::from(f.route),
            Attr::Method => Value::from(f.method),
            Attr::Era => match f.era {
                Era::Modern => statics.modern.clone(),
                Era::Legacy => statics.legacy.clone(),
            },
            Attr::Issuer => p.issuer.clone(),
            Attr::Audience => p.audience.clone(),
            Attr::Scopes => p.scopes.clone(),
            Attr::Hour => Value::from(local.hour),
            Attr::Minute => Value::from(local.minute),
            Attr::Weekday => Value::from(local.weekday),
            Attr::Annotations => {
                let bits = f.annotations.unwrap_or_default().bits();
                statics.annotations.get(bits).cloned().ok_or("annotation bits")?
            }
            Attr::Args => Value::from(statics.args_uid.clone()),
            Attr::Now => extension("datetime", &clock::rfc3339_utc(f.now))?,
            Attr::ClientIp => match f.client_ip {
                Some(ip) => extension("ip", &ip.to_string())?,
                None => continue,
            },
            Attr::UpstreamGrant => match f.upstream_grant {
                Some(g) => grant_value(g),
                None => continue,
            },
        };
        map.insert(SmolStr::new_static(attr.name()), value);
    }
    Ok(Context::Value(Arc::new(map)))
}

/// `context.upstream_grant`: `{present, scopes}`.
fn grant_value(g: UpstreamGrantFacts<'_>) -> Value {
    let scopes = Value::set(g.scopes.iter().map(|s| Value::from(s.as_str())), None);
    Value::record([("present", Value::from(g.present)), ("scopes", scopes)], None)
}

/// An extension value (`ip("...")`, `datetime("...")`), evaluated once.
fn extension(function: &str, arg: &str) -> Result<Value, String> {
    let name = Name::parse_unqualified_name(function).map_err(|e| e.to_string())?;
    let call = RestrictedExpr::call_extension_fn(name, [RestrictedExpr::val(arg)]);
    RestrictedEvaluator::new(Extensions::all_available())
        .interpret(call.as_borrowed())
        .map_err(|e| e.to_string())
}

/// The request of `principal` doing `action` on `resource`, with an entity
/// store holding every entity it needs.
pub(crate) fn assemble(
    principal: &PrincipalFacts,
    action: (&EntityUid, &Arc<Entity>),
    resource: (&EntityUid, &Arc<Entity>),
    extra: impl IntoIterator<Item = Arc<Entity>>,
    context: Context,
) -> Result<(Request, Entities), String> {
    let request = request(principal, action.0, resource.0, context);
    let entities = store(
        [&principal.entity, action.1, resource.1]
            .into_iter()
            .cloned()
            .chain(extra),
    )?;
    Ok((request, entities))
}

/// The request alone, for a store shared by several requests.
pub(crate) fn request(
    principal: &PrincipalFacts,
    action: &EntityUid,
    resource: &EntityUid,
    context: Context,
) -> Request {
    Request::new_unchecked(
        EntityUIDEntry::known(principal.uid.clone().into(), None),
        EntityUIDEntry::known(action.clone().into(), None),
        EntityUIDEntry::known(resource.clone().into(), None),
        Some(context),
    )
}

/// An entity store of entities whose hierarchy is already closed.
pub(crate) fn store(entities: impl IntoIterator<Item = Arc<Entity>>) -> Result<Entities, String> {
    Entities::new()
        .add_entities(
            entities,
            None::<&NoEntitiesSchema>,
            TCComputation::AssumeAlreadyComputed,
            Extensions::all_available(),
        )
        .map_err(|e| e.to_string())
}
