//! One definition an upstream lists — a tool, a prompt, a resource or a
//! resource template — and its revision: the SHA-256 of its RFC 8785
//! canonical JSON.
//!
//! The whole entry is hashed as listed (name, title, description, input
//! and output schemas, annotations, `_meta`, anything else): any change to
//! any of it is a new revision. Pagination artefacts (`nextCursor`) belong
//! to the list answer, not to an entry, so they never enter a hash.

use std::fmt;

use aws_lc_rs::digest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CatalogError;

/// What kind of definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool (`tools/list`, called with `tools/call`).
    Tool,
    /// A prompt (`prompts/list`, `prompts/get`).
    Prompt,
    /// A resource (`resources/list`, `resources/read`).
    Resource,
    /// A resource template (`resources/templates/list`).
    ResourceTemplate,
}

impl Kind {
    /// Every kind, in the order lists are synced.
    pub const ALL: [Kind; 4] = [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::ResourceTemplate];

    /// A stable lowercase name (`tool`, `prompt`, `resource`,
    /// `resource_template`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::ResourceTemplate => "resource_template",
        }
    }

    /// The list method that returns definitions of this kind.
    pub fn list_method(self) -> &'static str {
        match self {
            Kind::Tool => "tools/list",
            Kind::Prompt => "prompts/list",
            Kind::Resource => "resources/list",
            Kind::ResourceTemplate => "resources/templates/list",
        }
    }

    /// The key of the list in the list result.
    pub fn result_key(self) -> &'static str {
        match self {
            Kind::Tool => "tools",
            Kind::Prompt => "prompts",
            Kind::Resource => "resources",
            Kind::ResourceTemplate => "resourceTemplates",
        }
    }

    /// The field an entry is named by.
    pub fn key_field(self) -> &'static str {
        match self {
            Kind::Tool | Kind::Prompt => "name",
            Kind::Resource => "uri",
            Kind::ResourceTemplate => "uriTemplate",
        }
    }

    /// The kind a list method returns.
    pub fn of_list_method(method: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.list_method() == method)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A definition's revision: `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Revision(String);

impl Revision {
    /// The revision of a definition entry.
    ///
    /// # Errors
    ///
    /// When the entry cannot be canonicalized (a number JSON cannot carry).
    pub fn of(entry: &Value) -> Result<Revision, CatalogError> {
        let canonical = serde_json_canonicalizer::to_vec(entry).map_err(|e| CatalogError::Canonical(e.to_string()))?;
        let digest = digest::digest(&digest::SHA256, &canonical);
        let mut text = String::with_capacity(7 + 64);
        text.push_str("sha256:");
        for b in digest.as_ref() {
            text.push(char::from(HEX[usize::from(b >> 4)]));
            text.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Ok(Revision(text))
    }

    /// A revision as written in a lock file or record.
    ///
    /// # Errors
    ///
    /// When `text` is not `sha256:` and 64 lowercase hex digits.
    pub fn parse(text: &str) -> Result<Revision, CatalogError> {
        let ok = text
            .strip_prefix("sha256:")
            .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| HEX.contains(&b)));
        if ok {
            Ok(Revision(text.to_owned()))
        } else {
            Err(CatalogError::Revision(text.to_owned()))
        }
    }

    /// The text form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// One definition as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Tool, prompt, resource or template.
    pub kind: Kind,
    /// Its name (tools, prompts), URI (resources) or URI template.
    pub key: String,
    /// The entry as listed.
    pub body: Value,
    /// Its revision.
    pub revision: Revision,
}

impl Definition {
    /// A definition from a list entry.
    ///
    /// # Errors
    ///
    /// When the entry is not an object naming itself by the kind's key
    /// field, or cannot be canonicalized.
    pub fn new(kind: Kind, body: Value) -> Result<Definition, CatalogError> {
        let key = body
            .get(kind.key_field())
            .and_then(Value::as_str)
            .ok_or_else(|| CatalogError::Entry {
                kind,
                reason: format!("no string `{}`", kind.key_field()),
            })?
            .to_owned();
        let revision = Revision::of(&body)?;
        Ok(Definition {
            kind,
            key,
            body,
            revision,
        })
    }

    /// The tool's behaviour hints (`annotations`), as declared.
    pub fn hints(&self) -> Hints {
        Hints::of(&self.body)
    }

    /// The description, if any.
    pub fn description(&self) -> Option<&str> {
        self.body.get("description").and_then(Value::as_str)
    }
}

/// A tool's declared behaviour hints; `None` where the definition says
/// nothing (the MCP defaults then apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

impl Hints {
    /// The hints in an entry's `annotations`.
    pub fn of(entry: &Value) -> Hints {
        let a = entry.get("annotations");
        let hint = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
        Hints {
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
            open_world: hint("openWorldHint"),
        }
    }
}

#[cfg(test)]
mod tests;
