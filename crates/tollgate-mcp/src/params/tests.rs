#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::json;

use super::*;

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "query": {"type": "string"},
        "tags": {"type": "array", "x-mcp-header": "Tags"},
        "bad": {"type": "string", "x-mcp-header": "not a token"}
    }})
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
    }
    h
}

#[test]
fn only_valid_primitive_annotations_are_declared() {
    let mut got: Vec<(String, String, ParamKind)> = param_headers(&schema())
        .into_iter()
        .map(|p| (p.header.clone(), p.argument(), p.kind))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("dry-run".into(), "dry_run".into(), ParamKind::Boolean),
            ("limit".into(), "limit".into(), ParamKind::Integer),
            ("region".into(), "region".into(), ParamKind::String),
        ]
    );
}

#[test]
fn a_header_name_claimed_twice_is_ambiguous_and_dropped() {
    let mut s = schema();
    s["properties"]["again"] = json!({"type": "string", "x-mcp-header": "REGION"});
    let names: Vec<String> = param_headers(&s).into_iter().map(|p| p.header).collect();
    assert!(!names.contains(&"region".to_owned()), "{names:?}");
    assert_eq!(names.len(), 2);
}

#[test]
fn headers_must_match_the_body_on_a_verified_route() {
    let declared = param_headers(&schema());
    let body = json!({"region": "eu-west-1", "limit": 10, "dry_run": false, "query": "x"});
    let args = body.as_object().unwrap();
    let ok = headers(&[
        ("mcp-param-region", "eu-west-1"),
        ("mcp-param-limit", "10"),
        ("mcp-param-dry-run", "false"),
    ]);
    let mut checked = check_params(&declared, &ok, Some(args)).unwrap();
    checked.sort();
    assert_eq!(checked.len(), 3);
    assert_eq!(checked[2], ("region".into(), "eu-west-1".into()));
    for (bad, why) in [
        (
            vec![("mcp-param-limit", "10"), ("mcp-param-dry-run", "false")],
            "missing",
        ),
        (
            vec![
                ("mcp-param-region", "us-east-1"),
                ("mcp-param-limit", "10"),
                ("mcp-param-dry-run", "false"),
            ],
            "disagrees",
        ),
        (
            vec![
                ("mcp-param-region", "eu-west-1"),
                ("mcp-param-limit", "ten"),
                ("mcp-param-dry-run", "false"),
            ],
            "type",
        ),
        (
            vec![
                ("mcp-param-region", "eu-west-1"),
                ("mcp-param-limit", "10"),
                ("mcp-param-dry-run", "no"),
            ],
            "boolean",
        ),
        (
            vec![
                ("mcp-param-region", "=?base64?%%%?="),
                ("mcp-param-limit", "10"),
                ("mcp-param-dry-run", "false"),
            ],
            "encoding",
        ),
    ] {
        let e = check_params(&declared, &headers(&bad), Some(args)).unwrap_err();
        assert_eq!(e.kind, tollgate_core::ErrorKind::HeaderMismatch, "{why}");
    }
}

#[test]
fn integers_compare_numerically_and_sentinels_decode() {
    let declared = param_headers(&schema());
    let body = json!({"region": "Zürich", "limit": 7});
    let h = headers(&[
        ("mcp-param-region", "=?base64?WsO8cmljaA==?="),
        ("mcp-param-limit", "007"),
    ]);
    let checked = check_params(&declared, &h, body.as_object()).unwrap();
    assert!(checked.contains(&("region".to_owned(), "Zürich".to_owned())));
    let absent = json!({"limit": null});
    assert!(
        check_params(&declared, &HeaderMap::new(), absent.as_object()).is_ok(),
        "null: not expected"
    );
    let extra = headers(&[("mcp-param-limit", "3")]);
    assert!(
        check_params(&declared, &extra, absent.as_object()).is_err(),
        "a header for an absent argument"
    );
}

#[test]
fn without_the_body_headers_are_only_checked_for_form() {
    let declared = param_headers(&schema());
    let h = headers(&[("mcp-param-limit", "12")]);
    assert_eq!(
        check_params(&declared, &h, None).unwrap(),
        vec![("limit".to_owned(), "12".to_owned())]
    );
    assert!(check_params(&declared, &headers(&[("mcp-param-limit", "1.5")]), None).is_err());
    assert!(check_params(&declared, &headers(&[("mcp-param-limit", "9007199254740992")]), None).is_err());
}

#[test]
fn arguments_are_read_from_a_body() {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}"#;
    assert_eq!(tool_arguments(body).unwrap()["a"], 1);
    assert!(tool_arguments(b"{").is_err());
    assert!(tool_arguments(br#"{"params":{}}"#).unwrap().is_empty());
}

#[test]
fn nested_properties_are_reached_through_properties_only() {
    let s = json!({"type": "object", "properties": {
        "filter": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}
        }},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string", "x-mcp-header": "Item"}
        }}}
    }});
    let declared = param_headers(&s);
    assert_eq!(declared.len(), 1, "{declared:?}");
    assert_eq!(declared[0].argument(), "filter.region");
    let body = json!({"filter": {"region": "eu"}});
    let args = body.as_object().unwrap();
    let got = check_params(&declared, &headers(&[("mcp-param-region", "eu")]), Some(args)).unwrap();
    assert_eq!(got, vec![("region".to_owned(), "eu".to_owned())]);
    let err = check_params(&declared, &headers(&[("mcp-param-region", "us")]), Some(args)).unwrap_err();
    assert_eq!(err.kind, tollgate_core::ErrorKind::HeaderMismatch);
    assert!(check_params(&declared, &headers(&[]), Some(args)).is_err());
}

#[test]
fn integers_compare_as_numbers() {
    let declared = param_headers(&schema());
    for body in [json!({"limit": 42}), json!({"limit": 42.0})] {
        let args = body.as_object().unwrap();
        for sent in ["42", "042", "+42"] {
            assert!(
                check_params(&declared, &headers(&[("mcp-param-limit", sent)]), Some(args)).is_ok(),
                "{sent} {body}"
            );
        }
        assert!(check_params(&declared, &headers(&[("mcp-param-limit", "43")]), Some(args)).is_err());
    }
}
