//! Opt-in capture of tool arguments and results, redacted and capped.
//!
//! Off unless a route sets `capture_arguments` / `capture_results`. A
//! captured value is parsed, every object key that matches a redaction
//! pattern has its value replaced by `"[redacted]"`, and the result is
//! re-serialized; above `capture_max_bytes` it is cut (after redaction, so
//! a cut never reveals a redacted value). A message that cannot be parsed
//! is never stored as text, since it could not be redacted.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_core::{CallElement, McpMethod};

/// What a record keeps of a call's arguments and result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    /// `params.arguments` (else `params`) of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// `result` (else `error`) of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A value was cut to `capture_max_bytes` (it is then a string holding
    /// the start of its JSON text) or could not be captured.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// The placeholder for a redacted value.
pub const REDACTED: &str = "[redacted]";

/// What a route captures of its calls (the server maps it from the
/// route's `audit` table and `[audit] redact_keys`).
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureSettings {
    /// Capture the arguments of a request.
    pub arguments: bool,
    /// Capture the result of its answer.
    pub results: bool,
    /// Largest captured value, in bytes of JSON; larger ones are cut.
    pub max_bytes: usize,
    /// Keys whose values are redacted: an object key is redacted when it
    /// contains one of them, both lowercased and without `-` and `_`.
    pub redact_keys: Vec<String>,
}

/// A route's capture settings.
#[derive(Debug, Clone, Default)]
pub struct CapturePolicy {
    arguments: bool,
    results: bool,
    max_bytes: usize,
    patterns: Vec<String>,
}

impl CapturePolicy {
    /// The policy of `settings`.
    pub fn new(settings: &CaptureSettings) -> CapturePolicy {
        let patterns = settings
            .redact_keys
            .iter()
            .map(|k| normalize(k))
            .filter(|k| !k.is_empty())
            .collect();
        CapturePolicy {
            arguments: settings.arguments,
            results: settings.results,
            max_bytes: settings.max_bytes,
            patterns,
        }
    }

    /// Whether request arguments are captured.
    pub fn captures_arguments(&self) -> bool {
        self.arguments
    }

    /// Whether results are captured.
    pub fn captures_results(&self) -> bool {
        self.results
    }

    /// Whether a request of these messages is captured: a single
    /// `tools/call`, `prompts/get` or `resources/read` on a route that
    /// captures arguments or results. The server keeps such a request's
    /// body (and, for results, the start of its answer, up to
    /// [`CapturePolicy::tee_limit`]) in the call summary's payload.
    pub fn applies_to(&self, elements: &[CallElement]) -> bool {
        let [e] = elements else { return false };
        (self.arguments || self.results)
            && matches!(
                McpMethod::from_name(&e.method),
                McpMethod::ToolsCall | McpMethod::PromptsGet | McpMethod::ResourcesRead
            )
    }

    /// How many bytes of a response the server should keep to capture its
    /// result; a larger response is recorded as not captured.
    pub fn tee_limit(&self) -> usize {
        self.max_bytes.saturating_mul(8).max(64 * 1024)
    }

    /// Capture the arguments of a JSON-RPC request message.
    pub fn arguments(&self, request: &[u8]) -> Option<(Value, bool)> {
        if !self.arguments {
            return None;
        }
        let Ok(mut msg) = serde_json::from_slice::<Value>(request) else {
            return Some(not_captured(request.len()));
        };
        let params = msg.get_mut("params")?;
        let value = match params.get_mut("arguments") {
            Some(args) => args.take(),
            None => params.take(),
        };
        Some(self.finish(value))
    }

    /// Capture the result of a JSON-RPC response: a JSON body, or an SSE
    /// stream whose last response event is used. `complete` is false when
    /// the server kept only the first [`CapturePolicy::tee_limit`] bytes.
    pub fn result(&self, response: &[u8], complete: bool) -> Option<(Value, bool)> {
        if !self.results {
            return None;
        }
        if !complete {
            return Some(not_captured(response.len()));
        }
        let Some(mut msg) = parse_response(response) else {
            return Some(not_captured(response.len()));
        };
        let value = match msg.get_mut("result") {
            Some(r) => r.take(),
            None => msg.get_mut("error").map(Value::take).unwrap_or(Value::Null),
        };
        Some(self.finish(value))
    }

    /// Replace the values of matching keys, at any depth.
    pub fn redact(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if self.matches(k) {
                        *v = Value::String(REDACTED.to_owned());
                    } else {
                        self.redact(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact(v)),
            _ => {}
        }
    }

    fn matches(&self, key: &str) -> bool {
        let key = normalize(key);
        self.patterns.iter().any(|p| key.contains(p.as_str()))
    }

    fn finish(&self, mut value: Value) -> (Value, bool) {
        self.redact(&mut value);
        let text = value.to_string();
        if text.len() <= self.max_bytes {
            return (value, false);
        }
        let mut cut = self.max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        (Value::String(text[..cut].to_owned()), true)
    }
}

fn not_captured(len: usize) -> (Value, bool) {
    (Value::String(format!("[not captured: {len} bytes]")), true)
}

/// Lowercase, without `-` and `_`: `X-Api-Key` and `api_key` both become
/// `xapikey` / `apikey`.
fn normalize(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

fn parse_response(body: &[u8]) -> Option<Value> {
    let trimmed = body.trim_ascii_start();
    if trimmed.first() == Some(&b'{') {
        return serde_json::from_slice(trimmed).ok();
    }
    let text = std::str::from_utf8(body).ok()?;
    let mut last = None;
    for event in text.split("\n\n").flat_map(|e| e.split("\r\n\r\n")) {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n"))
            && (v.get("result").is_some() || v.get("error").is_some())
        {
            last = Some(v);
        }
    }
    last
}

#[cfg(test)]
mod tests;
