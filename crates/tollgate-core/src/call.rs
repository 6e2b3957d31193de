//! What a call is: its protocol era and MCP identity.

use std::fmt;

/// The protocol era of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 and later: stateless, standard headers on every POST.
    Modern,
    /// 2025-11-25 and earlier: `initialize`, sessions, GET streams, batches.
    Legacy,
}

impl Era {
    /// A stable lowercase name for logs, metrics and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// The MCP method of a call, reduced to the families the gateway cares about.
///
/// `Other` keeps metrics cardinality bounded; the exact method string is kept
/// in [`CallIdentity::method`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpMethod {
    /// `initialize` (legacy).
    Initialize,
    /// `server/discover` (modern).
    Discover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `ping`.
    Ping,
    /// Any `notifications/*` method.
    Notification,
    /// A GET stream (legacy).
    StreamGet,
    /// A DELETE ending a session (legacy).
    SessionDelete,
    /// A POSTed JSON-RPC response (legacy: answer to a server request).
    Response,
    /// Anything else.
    Other,
}

impl McpMethod {
    /// Classify a JSON-RPC method name.
    pub fn from_name(method: &str) -> McpMethod {
        match method {
            "initialize" => McpMethod::Initialize,
            "server/discover" => McpMethod::Discover,
            "tools/list" => McpMethod::ToolsList,
            "tools/call" => McpMethod::ToolsCall,
            "resources/list" => McpMethod::ResourcesList,
            "resources/templates/list" => McpMethod::ResourceTemplatesList,
            "resources/read" => McpMethod::ResourcesRead,
            "prompts/list" => McpMethod::PromptsList,
            "prompts/get" => McpMethod::PromptsGet,
            "ping" => McpMethod::Ping,
            m if m.starts_with("notifications/") => McpMethod::Notification,
            _ => McpMethod::Other,
        }
    }

    /// A bounded label value for metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            McpMethod::Initialize => "initialize",
            McpMethod::Discover => "server/discover",
            McpMethod::ToolsList => "tools/list",
            McpMethod::ToolsCall => "tools/call",
            McpMethod::ResourcesList => "resources/list",
            McpMethod::ResourceTemplatesList => "resources/templates/list",
            McpMethod::ResourcesRead => "resources/read",
            McpMethod::PromptsList => "prompts/list",
            McpMethod::PromptsGet => "prompts/get",
            McpMethod::Ping => "ping",
            McpMethod::Notification => "notification",
            McpMethod::StreamGet => "stream",
            McpMethod::SessionDelete => "session/delete",
            McpMethod::Response => "response",
            McpMethod::Other => "other",
        }
    }

    /// Whether the 2026-07-28 era requires an `Mcp-Name` header for it.
    pub fn requires_name(self) -> bool {
        matches!(
            self,
            McpMethod::ToolsCall | McpMethod::PromptsGet | McpMethod::ResourcesRead
        )
    }
}

impl fmt::Display for McpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The identity of one JSON-RPC message, as the gateway authorizes and
/// records it: method and, for named methods, the tool/prompt name or
/// resource URI (decoded from the base64 sentinel when needed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallIdentity {
    /// The JSON-RPC method, verbatim.
    pub method: String,
    /// `params.name` (tools, prompts) or `params.uri` (resources), if any.
    pub name: Option<String>,
}

impl CallIdentity {
    /// The method family.
    pub fn family(&self) -> McpMethod {
        McpMethod::from_name(&self.method)
    }
}
