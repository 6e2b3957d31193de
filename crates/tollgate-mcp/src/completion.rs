//! What a `completion/complete` request completes an argument of: its
//! `params.ref`, a prompt by name or a resource (template) by URI.
//!
//! Read by the catalog gate (step 7) and by virtual servers to route the
//! request, so that completing a prompt's or resource's arguments is
//! governed like using it. Only `params.ref` is deserialized; the rest of
//! the body is skipped.

use serde::Deserialize;

/// The definition a `completion/complete` refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// `{"type": "ref/prompt", "name": …}`.
    Prompt(String),
    /// `{"type": "ref/resource", "uri": …}` (a resource or a template).
    Resource(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    One(Call),
    Many(Vec<Call>),
}

#[derive(Deserialize)]
struct Call {
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(rename = "ref", default)]
    reference: Option<Reference>,
}

#[derive(Deserialize)]
struct Reference {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
}

/// The `ref` of the `index`th message of `body` (0 for a single message),
/// when it is a completion request's well-formed reference.
///
/// ```
/// use tollgate_mcp::{CompletionRef, completion_ref};
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"n","value":"A"}}}"#;
/// assert_eq!(completion_ref(body, 0), Some(CompletionRef::Prompt("greet".into())));
/// ```
pub fn completion_ref(body: &[u8], index: usize) -> Option<CompletionRef> {
    let call = match serde_json::from_slice::<Body>(body).ok()? {
        Body::One(call) if index == 0 => call,
        Body::One(_) => return None,
        Body::Many(mut calls) if index < calls.len() => calls.swap_remove(index),
        Body::Many(_) => return None,
    };
    let r = call.params?.reference?;
    match r.kind.as_str() {
        "ref/prompt" => r.name.map(CompletionRef::Prompt),
        "ref/resource" => r.uri.map(CompletionRef::Resource),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_name_a_prompt_or_a_resource_in_a_message_or_a_batch() {
        let body = br#"{"params":{"ref":{"type":"ref/resource","uri":"demo://x/{id}"}}}"#;
        assert_eq!(
            completion_ref(body, 0),
            Some(CompletionRef::Resource("demo://x/{id}".into()))
        );
        assert_eq!(completion_ref(body, 1), None);
        let batch = br#"[{"id":1,"method":"ping"},{"params":{"ref":{"type":"ref/prompt","name":"p"}}}]"#;
        assert_eq!(completion_ref(batch, 1), Some(CompletionRef::Prompt("p".into())));
        assert_eq!(completion_ref(batch, 0), None);
        assert_eq!(completion_ref(br#"{"params":{"ref":{"type":"ref/other"}}}"#, 0), None);
        assert_eq!(completion_ref(br#"{"params":{"ref":{"type":"ref/prompt"}}}"#, 0), None);
        assert_eq!(completion_ref(b"{}", 0), None);
        assert_eq!(completion_ref(b"not json", 0), None);
    }
}
