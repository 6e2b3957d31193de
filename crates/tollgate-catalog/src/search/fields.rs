//! The fields of a tool definition that search reads, and how much a match
//! in each counts.
//!
//! A definition is read as listed: its exposed name, `title` and
//! `annotations.title`, `description`, and the argument names, titles,
//! descriptions and string enum values of `inputSchema` (nested objects
//! and array items included, a few levels deep). Anything else (output
//! schemas, `_meta`, defaults, examples) is not searched.

use serde_json::Value;

/// A searched part of a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    /// The exposed name (prefix included: `github_create_issue`).
    Name = 0,
    /// `title` and `annotations.title`.
    Title = 1,
    /// `description`.
    Description = 2,
    /// The names of the arguments in `inputSchema`.
    ArgName = 3,
    /// The titles, descriptions and enum values of those arguments.
    ArgText = 4,
}

/// How many fields there are.
pub(super) const FIELDS: usize = 5;

/// BM25F field weights: a term in the name says most about what a tool
/// does, one in an argument's description least.
pub(super) const WEIGHT: [f32; FIELDS] = [3.0, 2.0, 1.0, 0.6, 0.3];

/// BM25F length normalisation per field (0: none, 1: full). Names and
/// titles are short and similar in length, so their length says little.
pub(super) const LENGTH_NORM: [f32; FIELDS] = [0.3, 0.3, 0.75, 0.5, 0.75];

/// How deep into nested argument schemas names and descriptions are read.
const MAX_SCHEMA_DEPTH: usize = 4;

/// Calls `emit` with each searched text of the tool `name` defined by
/// `definition`, and the field it belongs to.
pub(super) fn texts(name: &str, definition: &Value, mut emit: impl FnMut(Field, &str)) {
    emit(Field::Name, name);
    if let Some(title) = definition.get("title").and_then(Value::as_str) {
        emit(Field::Title, title);
    }
    let annotated = definition
        .get("annotations")
        .and_then(|a| a.get("title"))
        .and_then(Value::as_str);
    if let Some(title) = annotated {
        emit(Field::Title, title);
    }
    if let Some(description) = definition.get("description").and_then(Value::as_str) {
        emit(Field::Description, description);
    }
    if let Some(schema) = definition.get("inputSchema") {
        arguments(schema, 0, &mut emit);
    }
}

/// The arguments of one object schema, then those of the schemas nested in
/// them.
fn arguments(schema: &Value, depth: usize, emit: &mut impl FnMut(Field, &str)) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            emit(Field::ArgName, name);
            for key in ["title", "description"] {
                if let Some(text) = property.get(key).and_then(Value::as_str) {
                    emit(Field::ArgText, text);
                }
            }
            let values = property.get("enum").and_then(Value::as_array).into_iter().flatten();
            for value in values.filter_map(Value::as_str) {
                emit(Field::ArgText, value);
            }
            arguments(property, depth + 1, emit);
        }
    }
    if let Some(items) = schema.get("items") {
        arguments(items, depth + 1, emit);
    }
}
