//! Every unknown key of a configuration file at once, each with the
//! nearest known key: the file is walked beside the configuration's JSON
//! Schema (the one `tollgate schema` prints), so that a file with three
//! misspellings is fixed in one round, not three. Only tables whose schema
//! forbids other keys are judged; a table whose shape cannot be told (an
//! untagged choice) is left to the deserializer's own message.

use serde_json::{Map, Value};
use toml::de::{DeTable, DeValue};

use super::Problems;
use crate::locate::Seg;

/// The unknown keys of `root`, located by path.
pub(super) fn unknown_keys(root: &DeTable<'_>) -> Problems {
    let schema = super::schema();
    let mut out = Problems::new();
    let mut path = Vec::new();
    table(&schema, &schema, root, &mut path, &mut out);
    out
}

/// `node` with `$ref`s and `Option`s (`anyOf` with `null`) followed.
fn resolve<'s>(schema: &'s Value, mut node: &'s Value) -> &'s Value {
    for _ in 0..16 {
        if let Some(target) = node.get("$ref").and_then(Value::as_str) {
            let name = target.rsplit('/').next().unwrap_or_default();
            match schema.get("$defs").and_then(|d| d.get(name)) {
                Some(found) => node = found,
                None => return node,
            }
            continue;
        }
        let branches = node.get("anyOf").and_then(Value::as_array);
        let not_null: Vec<&Value> = branches
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        match not_null.as_slice() {
            [one] if branches.is_some() => node = one,
            _ => return node,
        }
    }
    node
}

/// The branch of a `oneOf` tagged by `kind` that `t` names.
fn tagged<'s>(node: &'s Value, t: &DeTable<'_>) -> Option<&'s Value> {
    let kind = t
        .iter()
        .find(|(k, _)| k.get_ref() == "kind")
        .and_then(|(_, v)| match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => None,
        })?;
    node.get("oneOf")?
        .as_array()?
        .iter()
        .find(|b| b.pointer("/properties/kind/const").and_then(Value::as_str) == Some(kind.as_str()))
}

fn table(schema: &Value, node: &Value, t: &DeTable<'_>, path: &mut Vec<Seg>, out: &mut Problems) {
    let node = resolve(schema, node);
    let node = tagged(node, t).unwrap_or(node);
    let Some(props) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    let closed = node.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in t {
        let key = key.get_ref().as_ref();
        path.push(Seg::Key(key.to_owned()));
        match props.get(key) {
            Some(sub) => self::value(schema, sub, value.get_ref(), path, out),
            None if closed => out.push((path.clone(), unknown(key, props))),
            None => {}
        }
        path.pop();
    }
}

fn value(schema: &Value, node: &Value, v: &DeValue<'_>, path: &mut Vec<Seg>, out: &mut Problems) {
    match v {
        DeValue::Table(t) => table(schema, node, t, path, out),
        DeValue::Array(items) => {
            let node = resolve(schema, node);
            let Some(each) = node.get("items") else { return };
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                self::value(schema, each, item.get_ref(), path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The message for unknown `key` among `known`, with the nearest one.
fn unknown(key: &str, known: &Map<String, Value>) -> String {
    let nearest = known
        .keys()
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min();
    match nearest {
        Some((_, k)) => format!("unknown field `{key}`; did you mean `{k}`?"),
        None => {
            let all: Vec<String> = known.keys().map(|k| format!("`{k}`")).collect();
            format!("unknown field `{key}`, expected one of {}", all.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String)> {
        let root = DeTable::parse(text).unwrap();
        unknown_keys(root.get_ref())
            .into_iter()
            .map(|(p, m)| (crate::locate::render(&p), m))
            .collect()
    }

    #[test]
    fn every_misspelt_key_is_named_with_the_nearest_one() {
        let got = found(
            "[listen]\npublic = \"127.0.0.1:8080\"\nadmn = \"x\"\n[auth]\npublc_base_url = \"https://x\"\n\
             [[servers]]\nname = \"a\"\nurl = \"http://x\"\nheader_trst = \"verify\"\n\
             credential = { kind = \"static\", valu = { env = \"X\" } }\n",
        );
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "auth.publc_base_url",
                "listen.admn",
                "servers[0].credential.valu",
                "servers[0].header_trst"
            ],
            "{got:?}"
        );
        assert!(got[0].1.contains("did you mean `public_base_url`"), "{got:?}");
        assert!(got[2].1.contains("did you mean `value`"), "{got:?}");
    }

    #[test]
    fn a_right_file_has_none() {
        let text = include_str!("../../../../examples/demo.toml");
        assert_eq!(found(text), Vec::<(String, String)>::new());
    }
}
