//! What the gateway has learned of each upstream's tools from the
//! `tools/list` answers it filtered (request path step 12): each tool's
//! annotations, for the policies of later calls (step 8); the hash of its
//! definition, for the audit records of its calls (step 13); and the set of
//! known names, which bounds the `tool` label of metrics.
//!
//! Routes with policies learn from the list answers they filter; routes
//! without learn from the answer's copy once it has been sent
//! ([`Catalog::learn_answer`]), and only when it changed: the answer's
//! result is fingerprinted, and one identical to the last learned is not
//! parsed again.
//!
//! The upstream is an approved server, so its own declarations are the best
//! knowledge the gateway has until a governed catalog pins them. A tool
//! never listed has unknown annotations: the cautious MCP defaults apply
//! (not read-only, destructive).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::{Arc, LazyLock};

use dashmap::DashMap;
use serde_json::Value;
use tollgate_audit::Hash;
use tollgate_policy::ToolAnnotations;

use tollgate_mcp::answer_messages;

/// Most tools remembered per route; further names are not learned (their
/// calls get default annotations and the metrics label `other`).
pub(crate) const MAX_TOOLS_PER_ROUTE: usize = 4096;

/// One listed tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tool {
    pub(crate) annotations: ToolAnnotations,
    /// `sha256:` and the hex SHA-256 of the tool's entry in the list (keys
    /// sorted, compact JSON): which revision of the definition was in effect.
    pub(crate) definition: Arc<str>,
}

/// A tool entry's `annotations`, with the MCP defaults for absent hints.
pub(crate) fn annotations(tool: &Value) -> ToolAnnotations {
    let a = tool.get("annotations");
    let hint = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
    ToolAnnotations::from_hints(
        hint("readOnlyHint"),
        hint("destructiveHint"),
        hint("idempotentHint"),
        hint("openWorldHint"),
    )
}

impl Tool {
    /// The tool as its `tools/list` entry declares it.
    pub(crate) fn from_entry(entry: &Value, annotations: ToolAnnotations) -> Tool {
        let mut canonical = entry.clone();
        canonical.sort_all_objects();
        let hash = Hash::of_line(canonical.to_string().as_bytes());
        Tool {
            annotations,
            definition: Arc::from(format!("sha256:{hash}")),
        }
    }
}

/// Learned tools, per route.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    routes: DashMap<Arc<str>, HashMap<Arc<str>, Tool>>,
    /// The fingerprint of the last whole answer learned, per route.
    learned: DashMap<Arc<str>, u64>,
}

/// A fingerprint of an answer's results: each message from its `"result"`
/// key on (the `id` before it differs from call to call).
fn fingerprint(body: &[u8], sse: bool) -> u64 {
    static RESULT_KEY: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\"result\""));
    let mut h = DefaultHasher::new();
    for msg in answer_messages(body, sse) {
        let from = RESULT_KEY.find(&msg).unwrap_or(0);
        msg[from..].hash(&mut h);
    }
    h.finish()
}

impl Catalog {
    /// The annotations `route`'s upstream declared for `tool`.
    pub(crate) fn annotations(&self, route: &str, tool: &str) -> Option<ToolAnnotations> {
        Some(self.routes.get(route)?.get(tool)?.annotations)
    }

    /// The definition hash of `tool` as `route`'s upstream last listed it.
    pub(crate) fn definition(&self, route: &str, tool: &str) -> Option<Arc<str>> {
        Some(self.routes.get(route)?.get(tool)?.definition.clone())
    }

    /// Remember the tools of a whole `tools/list` answer (JSON or SSE) that
    /// was passed on unread: on routes without policies the answer is not
    /// filtered, and is read here after it was sent. Messages that do not
    /// parse teach nothing.
    pub(crate) fn learn_answer(&self, route: &str, body: &[u8], sse: bool) {
        let print = fingerprint(body, sse);
        if self.learned.get(route).is_some_and(|p| *p == print) {
            return;
        }
        self.learned.insert(Arc::from(route), print);
        let messages = answer_messages(body, sse).filter_map(|m| serde_json::from_slice::<Value>(&m).ok());
        for msg in messages {
            let Some(tools) = msg.pointer("/result/tools").and_then(Value::as_array) else {
                continue;
            };
            let learned = tools.iter().filter_map(|t| {
                let name = t.get("name")?.as_str()?;
                Some((name, Tool::from_entry(t, annotations(t))))
            });
            self.learn(route, learned);
        }
    }

    /// Remember the tools of one `tools/list` page.
    pub(crate) fn learn<'a>(&self, route: &str, tools: impl IntoIterator<Item = (&'a str, Tool)>) {
        let mut entry = self.routes.entry(Arc::from(route)).or_default();
        for (name, tool) in tools {
            if let Some(known) = entry.get_mut(name) {
                *known = tool;
            } else if entry.len() < MAX_TOOLS_PER_ROUTE {
                entry.insert(Arc::from(name), tool);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learned_tools_are_known_and_updated() {
        let c = Catalog::default();
        assert_eq!(c.definition("demo", "echo"), None);
        let ro = ToolAnnotations::from_hints(Some(true), None, None, None);
        let v1 = serde_json::json!({"name": "echo", "inputSchema": {"type": "object", "properties": {}}});
        c.learn("demo", [("echo", Tool::from_entry(&v1, ro))]);
        assert_eq!(c.annotations("demo", "echo"), Some(ro));
        let first = c.definition("demo", "echo").unwrap();
        assert!(first.starts_with("sha256:") && first.len() == 7 + 64, "{first}");
        // Key order does not make a new revision; a changed schema does.
        let reordered = serde_json::json!({"inputSchema": {"properties": {}, "type": "object"}, "name": "echo"});
        assert_eq!(Tool::from_entry(&reordered, ro).definition, first);
        let v2 = serde_json::json!({"name": "echo", "inputSchema": {"type": "object", "required": ["text"]}});
        c.learn("demo", [("echo", Tool::from_entry(&v2, ToolAnnotations::default()))]);
        assert_eq!(c.annotations("demo", "echo"), Some(ToolAnnotations::default()));
        assert_ne!(c.definition("demo", "echo").unwrap(), first);
        assert_eq!(c.annotations("other", "echo"), None);
    }

    #[test]
    fn whole_answers_teach_their_tools_json_or_sse() {
        let c = Catalog::default();
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":true}}]}}"#;
        c.learn_answer("r", json, false);
        assert_eq!(
            c.annotations("r", "a"),
            Some(ToolAnnotations::from_hints(Some(true), None, None, None))
        );
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"b\"}]}}\n\n";
        c.learn_answer("r", sse, true);
        assert!(c.definition("r", "b").is_some());
        c.learn_answer("r", b"{\"result\":{\"tools\":[{\"name\":\"c\"}", false);
        c.learn_answer(
            "r",
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"","data":{"tools":[{"name":"c"}]}}}"#,
            false,
        );
        assert_eq!(c.definition("r", "c"), None, "broken answers and errors teach nothing");
    }
}
