//! Revisions checked against fixtures computed apart from this code (RFC
//! 8785 canonical form written by hand — keys sorted, no white space,
//! minimal escapes — and hashed with an independent SHA-256), so that a
//! wrong canonical form cannot pass.

use serde_json::json;

use super::*;

/// (entry, expected revision), computed outside this crate.
fn fixtures() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"name":"echo","description":"Echo the text back.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}),
            "sha256:935ede469576b85da311f627e47c00a6dcef675cad3869f6765dac64cc1e3352",
        ),
        (
            json!({"name":"grüße","title":"Grüße","description":"Sag hallo — \u{2603} and \"quotes\"\n","annotations":{"readOnlyHint":true,"destructiveHint":false},"_meta":{"x":1}}),
            "sha256:5c3d91881a2730593496c934d6a7e0c7a96af087c4e886c3df3ce6630600873f",
        ),
        (
            json!({"name":"add","inputSchema":{"type":"object","properties":{"a":{"type":"integer","minimum":-5},"b":{"type":"integer","maximum":100000}}}}),
            "sha256:5fbf2fa799975e01c26d40a99a690506c6f7793ba07c404666143b6f2f3b5599",
        ),
    ]
}

#[test]
fn revisions_match_independently_computed_fixtures() {
    for (entry, expected) in fixtures() {
        assert_eq!(Revision::of(&entry).unwrap().as_str(), expected, "{entry}");
    }
}

#[test]
fn numbers_take_their_ecmascript_form() {
    // {"name":"f","x":0.5,"y":1e+21,"z":-0.0001}
    let entry = json!({"name": "f", "x": 0.5, "y": 1e21, "z": -0.0001});
    let expected = "sha256:e8e1faecae9e7fea1a23bac97bdc5135823ec546a25bc69f71ed792f50283e4a";
    assert_eq!(Revision::of(&entry).unwrap().as_str(), expected);
}

#[test]
fn key_order_is_not_a_revision_but_any_content_is() {
    let a = json!({"name": "echo", "description": "x", "inputSchema": {"type": "object", "properties": {}}});
    let b = json!({"inputSchema": {"properties": {}, "type": "object"}, "description": "x", "name": "echo"});
    assert_eq!(Revision::of(&a).unwrap(), Revision::of(&b).unwrap());
    for changed in [
        json!({"name": "echo", "description": "x ", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "echo", "title": "Echo", "description": "x", "inputSchema": {"type": "object", "properties": {}}}),
        json!({"name": "echo", "description": "x", "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}}),
        json!({"name": "echo", "description": "x", "inputSchema": {"type": "object", "properties": {}}, "_meta": {}}),
        json!({"name": "echo", "description": "x", "inputSchema": {"type": "object", "properties": {}}, "outputSchema": {"type": "object"}}),
    ] {
        assert_ne!(Revision::of(&a).unwrap(), Revision::of(&changed).unwrap(), "{changed}");
    }
}

#[test]
fn a_definition_is_named_by_its_kind_key() {
    let t = Definition::new(Kind::Tool, json!({"name": "echo"})).unwrap();
    assert_eq!((t.kind, t.key.as_str()), (Kind::Tool, "echo"));
    let r = Definition::new(Kind::Resource, json!({"uri": "demo://readme", "name": "readme"})).unwrap();
    assert_eq!(r.key, "demo://readme");
    let tpl = Definition::new(
        Kind::ResourceTemplate,
        json!({"uriTemplate": "demo://x/{id}", "name": "x"}),
    )
    .unwrap();
    assert_eq!(tpl.key, "demo://x/{id}");
    assert!(Definition::new(Kind::Tool, json!({"title": "no name"})).is_err());
    assert!(Definition::new(Kind::Resource, json!({"name": "no uri"})).is_err());
}

#[test]
fn revisions_parse_only_in_their_written_form() {
    let r = Revision::of(&json!({"name": "a"})).unwrap();
    assert_eq!(Revision::parse(r.as_str()).unwrap(), r);
    for bad in ["sha256:", "sha256:ABC", "md5:00", &r.as_str().to_uppercase()] {
        assert!(Revision::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn hints_are_read_as_declared() {
    let h = Hints::of(&json!({"annotations": {"readOnlyHint": true, "openWorldHint": false}}));
    assert_eq!(
        h,
        Hints {
            read_only: Some(true),
            destructive: None,
            idempotent: None,
            open_world: Some(false)
        }
    );
    assert_eq!(Hints::of(&json!({"name": "x"})), Hints::default());
}
