//! What the server tells the policy engine about a call: the action (MCP
//! method family), the target (tool, resource or prompt) and the facts of
//! the request that policies may use, including the virtual server a call
//! came through.
//!
//! Built by `tollgate-server` at request path step 8 from headers (modern
//! era) or the bounded body scan (legacy era) — never from a parsed body —
//! and borrowed for the duration of one decision.

use std::net::IpAddr;
use std::time::SystemTime;

use tollgate_core::{CallIdentity, Era, McpMethod};

/// The Cedar action of a call: one per MCP method family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `tools/call` (resource: a `Tool`).
    CallTool,
    /// `resources/read` (resource: a `Resource`).
    ReadResource,
    /// `prompts/get` (resource: a `Prompt`).
    GetPrompt,
    /// `tools/list` (resource: the `Server`).
    ListTools,
    /// `resources/list` and `resources/templates/list` (resource: the `Server`).
    ListResources,
    /// `prompts/list` (resource: the `Server`).
    ListPrompts,
    /// Every other method, `initialize`, `ping`, notifications, GET streams
    /// and session DELETEs included (resource: the `Server`).
    OtherMethod,
}

impl Action {
    /// Every action, in the order of the schema.
    pub const ALL: [Action; 7] = [
        Action::CallTool,
        Action::ReadResource,
        Action::GetPrompt,
        Action::ListTools,
        Action::ListResources,
        Action::ListPrompts,
        Action::OtherMethod,
    ];

    /// The action of a method family.
    pub fn of(family: McpMethod) -> Action {
        match family {
            McpMethod::ToolsCall => Action::CallTool,
            McpMethod::ResourcesRead => Action::ReadResource,
            McpMethod::PromptsGet => Action::GetPrompt,
            McpMethod::ToolsList => Action::ListTools,
            McpMethod::ResourcesList | McpMethod::ResourceTemplatesList => Action::ListResources,
            McpMethod::PromptsList => Action::ListPrompts,
            _ => Action::OtherMethod,
        }
    }

    /// The Cedar action id, e.g. `call_tool` in `Tollgate::Action::"call_tool"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::CallTool => "call_tool",
            Action::ReadResource => "read_resource",
            Action::GetPrompt => "get_prompt",
            Action::ListTools => "list_tools",
            Action::ListResources => "list_resources",
            Action::ListPrompts => "list_prompts",
            Action::OtherMethod => "other_method",
        }
    }

    /// The kind of named target the action applies to; `None` for actions
    /// on the server itself.
    pub fn target(self) -> Option<TargetKind> {
        match self {
            Action::CallTool => Some(TargetKind::Tool),
            Action::ReadResource => Some(TargetKind::Resource),
            Action::GetPrompt => Some(TargetKind::Prompt),
            _ => None,
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The kind of a named MCP object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// A tool, by name.
    Tool,
    /// A resource (or resource template), by URI.
    Resource,
    /// A prompt, by name.
    Prompt,
}

impl TargetKind {
    /// The action that uses an object of this kind; list filtering shows an
    /// object when this action on it would be allowed.
    pub fn action(self) -> Action {
        match self {
            TargetKind::Tool => Action::CallTool,
            TargetKind::Resource => Action::ReadResource,
            TargetKind::Prompt => Action::GetPrompt,
        }
    }
}

/// A tool's MCP annotations. Unknown hints take the MCP defaults
/// ([`ToolAnnotations::default`]): not read-only, destructive, not
/// idempotent, open world — the cautious reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolAnnotations {
    /// `readOnlyHint` (default `false`).
    pub read_only: bool,
    /// `destructiveHint` (default `true`).
    pub destructive: bool,
    /// `idempotentHint` (default `false`).
    pub idempotent: bool,
    /// `openWorldHint` (default `true`).
    pub open_world: bool,
}

impl Default for ToolAnnotations {
    fn default() -> ToolAnnotations {
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

impl ToolAnnotations {
    /// Annotations from the hints a tool definition carries; absent hints
    /// take the MCP defaults. As MCP specifies, `destructiveHint` and
    /// `idempotentHint` only mean something for a tool that is not
    /// read-only: a read-only tool is not destructive and is idempotent.
    pub fn from_hints(
        read_only: Option<bool>,
        destructive: Option<bool>,
        idempotent: Option<bool>,
        open_world: Option<bool>,
    ) -> ToolAnnotations {
        let d = ToolAnnotations::default();
        let read_only = read_only.unwrap_or(d.read_only);
        ToolAnnotations {
            read_only,
            destructive: !read_only && destructive.unwrap_or(d.destructive),
            idempotent: read_only || idempotent.unwrap_or(d.idempotent),
            open_world: open_world.unwrap_or(d.open_world),
        }
    }

    pub(crate) fn bits(self) -> usize {
        usize::from(self.read_only)
            | usize::from(self.destructive) << 1
            | usize::from(self.idempotent) << 2
            | usize::from(self.open_world) << 3
    }
}

/// The caller's own grant at a `user_oauth` upstream, as policies see it
/// (`context.upstream_grant`): never the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpstreamGrantFacts<'a> {
    /// The caller has connected the upstream.
    pub present: bool,
    /// The scopes the grant holds (empty without one).
    pub scopes: &'a [String],
}

/// One call to authorize.
#[derive(Debug, Clone, Copy)]
pub struct CallRequest<'a> {
    /// The route (server name) the call came in on.
    pub route: &'a str,
    /// The method family; decides the action.
    pub family: McpMethod,
    /// The JSON-RPC method verbatim (`context.method`).
    pub method: &'a str,
    /// The tool or prompt name or resource URI, decoded from the base64
    /// sentinel when needed; required by the named actions.
    pub name: Option<&'a str>,
    /// The protocol era (`context.era`).
    pub era: Era,
    /// The client's address (`context.client_ip`).
    pub client_ip: Option<IpAddr>,
    /// The call's `Mcp-Param-*` arguments, decoded: (name, value). Names
    /// are compared case-insensitively (they are header names).
    pub args: &'a [(&'a str, &'a str)],
    /// The tool's annotations from the approved catalog; `None`: unknown
    /// (the MCP defaults apply).
    pub annotations: Option<ToolAnnotations>,
    /// When the call happens; `None`: now. Policy tests set it.
    pub time: Option<SystemTime>,
    /// The virtual server the call came through (`/mcp/<name>`), whose
    /// `VirtualServer` entity then holds the route's entities; `None` for
    /// a call on the route itself.
    pub virtual_server: Option<&'a str>,
    /// The caller's grant at the route's upstream, on a `user_oauth`
    /// route (`context.upstream_grant`); `None`: the route has none.
    pub upstream_grant: Option<UpstreamGrantFacts<'a>>,
}

impl<'a> CallRequest<'a> {
    /// A call of `method` on `route`, modern era, no name or arguments.
    pub fn new(route: &'a str, method: &'a str) -> CallRequest<'a> {
        CallRequest {
            route,
            family: McpMethod::from_name(method),
            method,
            name: None,
            era: Era::Modern,
            client_ip: None,
            args: &[],
            annotations: None,
            time: None,
            virtual_server: None,
            upstream_grant: None,
        }
    }

    /// The call identified by `call` on `route`.
    pub fn from_call(route: &'a str, call: &'a CallIdentity) -> CallRequest<'a> {
        CallRequest::new(route, &call.method).name(call.name.as_deref())
    }

    /// With the tool/prompt name or resource URI.
    pub fn name(mut self, name: Option<&'a str>) -> CallRequest<'a> {
        self.name = name;
        self
    }

    /// With the protocol era.
    pub fn era(mut self, era: Era) -> CallRequest<'a> {
        self.era = era;
        self
    }

    /// With the client's address.
    pub fn client_ip(mut self, ip: Option<IpAddr>) -> CallRequest<'a> {
        self.client_ip = ip;
        self
    }

    /// With the `Mcp-Param-*` arguments.
    pub fn args(mut self, args: &'a [(&'a str, &'a str)]) -> CallRequest<'a> {
        self.args = args;
        self
    }

    /// With the tool's annotations.
    pub fn annotations(mut self, annotations: Option<ToolAnnotations>) -> CallRequest<'a> {
        self.annotations = annotations;
        self
    }

    /// At a given time instead of now.
    pub fn at(mut self, time: SystemTime) -> CallRequest<'a> {
        self.time = Some(time);
        self
    }

    /// Through the virtual server `name` (or on the route itself).
    pub fn virtual_server(mut self, name: Option<&'a str>) -> CallRequest<'a> {
        self.virtual_server = name;
        self
    }

    /// With the caller's grant at a `user_oauth` route's upstream.
    pub fn upstream_grant(mut self, grant: Option<UpstreamGrantFacts<'a>>) -> CallRequest<'a> {
        self.upstream_grant = grant;
        self
    }

    /// The Cedar action of this call.
    pub fn action(&self) -> Action {
        Action::of(self.family)
    }
}

/// A list response to filter: which route, which kind of object, and the
/// request facts (the same as for a call, without name and arguments).
#[derive(Debug, Clone, Copy)]
pub struct ListRequest<'a> {
    /// The route the list came from.
    pub route: &'a str,
    /// What the list holds.
    pub kind: TargetKind,
    /// The protocol era.
    pub era: Era,
    /// The client's address.
    pub client_ip: Option<IpAddr>,
    /// When; `None`: now.
    pub time: Option<SystemTime>,
    /// The virtual server answering the list, whose entity holds the
    /// route's entries; `None` for a list of the route itself.
    pub virtual_server: Option<&'a str>,
}

impl<'a> ListRequest<'a> {
    /// A list of `kind` on `route`, modern era.
    pub fn new(route: &'a str, kind: TargetKind) -> ListRequest<'a> {
        ListRequest {
            route,
            kind,
            era: Era::Modern,
            client_ip: None,
            time: None,
            virtual_server: None,
        }
    }
}

/// One entry of a list response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListItem<'a> {
    /// Its name (tools, prompts) or URI / URI template (resources).
    pub name: &'a str,
    /// A tool's annotations, when known.
    pub annotations: Option<ToolAnnotations>,
}

impl<'a> From<&'a str> for ListItem<'a> {
    fn from(name: &'a str) -> ListItem<'a> {
        ListItem {
            name,
            annotations: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_family_has_an_action() {
        assert_eq!(Action::of(McpMethod::ToolsCall), Action::CallTool);
        assert_eq!(Action::of(McpMethod::ResourceTemplatesList), Action::ListResources);
        assert_eq!(Action::of(McpMethod::Initialize), Action::OtherMethod);
        assert_eq!(Action::of(McpMethod::StreamGet), Action::OtherMethod);
        for (i, a) in Action::ALL.iter().enumerate() {
            assert_eq!(a.index(), i);
        }
        for k in [TargetKind::Tool, TargetKind::Resource, TargetKind::Prompt] {
            assert_eq!(k.action().target(), Some(k));
        }
        let call = CallIdentity {
            method: "tools/call".into(),
            name: Some("echo".into()),
        };
        let r = CallRequest::from_call("demo", &call);
        assert_eq!((r.action(), r.name), (Action::CallTool, Some("echo")));
    }

    #[test]
    fn unknown_hints_take_the_cautious_mcp_defaults() {
        let a = ToolAnnotations::from_hints(None, None, None, Some(false));
        assert!(!a.read_only && a.destructive && !a.idempotent && !a.open_world);
        let read_only = ToolAnnotations::from_hints(Some(true), Some(true), Some(false), None);
        assert!(read_only.read_only && !read_only.destructive && read_only.idempotent && read_only.open_world);
        assert_eq!(ToolAnnotations::default().bits(), 0b1010);
    }
}
