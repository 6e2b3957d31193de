//! Loading refuses bad policy sets with every problem located at
//! file:line:column, and `validate` summarizes good ones.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use common::{policy_dir, repo_policies};
use tollgate_policy::{PolicyEngine, Settings, SourceError, validate};

fn errors(files: &[(&str, &str)]) -> Vec<SourceError> {
    let dir = policy_dir(files);
    let errors = validate(dir.path()).unwrap_err();
    // `validate` and loading share one path.
    assert_eq!(PolicyEngine::load(Settings::new(dir.path())).unwrap_err().0, errors);
    errors
}

#[test]
fn syntax_errors_point_at_their_line() {
    let e = errors(&[
        ("good.cedar", "@id(\"ok\")\npermit (principal, action, resource);\n"),
        (
            "bad.cedar",
            "@id(\"a\")\npermit (principal, action, resource);\n\n@id(\"b\")\npermit (principal, action resource);\n",
        ),
    ]);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].file.ends_with("bad.cedar"), "{}", e[0]);
    assert_eq!(e[0].line, Some(5), "{}", e[0]);
    assert!(e[0].to_string().contains("bad.cedar:5:"), "{}", e[0]);
}

#[test]
fn every_policy_needs_a_unique_id() {
    let e = errors(&[
        (
            "a.cedar",
            "// first\n@id(\"same\")\npermit (principal, action, resource);\n\npermit (principal, action, resource);\n",
        ),
        ("b.cedar", "\n@id(\"same\")\nforbid (principal, action, resource);\n"),
    ]);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].message.contains("@id"), "{}", e[0]);
    assert_eq!((e[0].line, e[0].file.ends_with("a.cedar")), (Some(5), true));
    assert!(e[1].message.contains("duplicate @id \"same\""), "{}", e[1]);
    assert_eq!((e[1].line, e[1].file.ends_with("b.cedar")), (Some(2), true));
}

#[test]
fn templates_are_refused() {
    let e = errors(&[(
        "t.cedar",
        "@id(\"t\")\npermit (principal == ?principal, action, resource);\n",
    )]);
    assert!(e[0].message.contains("templates"), "{}", e[0]);
    assert_eq!(e[0].line, Some(1));
}

#[test]
fn validation_errors_name_policy_file_and_line() {
    let e = errors(&[(
        "v.cedar",
        "@id(\"typo\")\npermit (principal, action, resource)\nwhen {\n  context.hours > 8\n};\n",
    )]);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].policy.as_deref(), Some("typo"));
    assert_eq!(e[0].line, Some(4), "{}", e[0]);
    assert!(e[0].message.contains("hours"), "{}", e[0]);
    assert!(!e[0].message.starts_with("for policy"), "{}", e[0]);
    let e = errors(&[(
        "u.cedar",
        "@id(\"u\")\npermit (principal in Tollgate::Grop::\"x\", action, resource);",
    )]);
    assert!(e[0].message.contains("Grop"), "{}", e[0]);
}

#[test]
fn a_schema_out_of_step_with_the_gateway_is_refused() {
    let schema = std::fs::read_to_string(repo_policies().join("schema.cedarschema")).unwrap();
    let dir = policy_dir(&[]);
    let broken = schema
        .replace("    hour: Long, ", "    ")
        .replace("action other_method", "action other_methods");
    assert_ne!(broken, schema);
    std::fs::write(dir.path().join("schema.cedarschema"), &broken).unwrap();
    let e = validate(dir.path()).unwrap_err();
    let text: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("other_method") && t.contains("not declared")),
        "{text:#?}"
    );
    assert!(text.iter().any(|t| t.contains("hour")), "{text:#?}");
    assert!(e.iter().all(|x| x.file.ends_with("schema.cedarschema")));

    std::fs::write(
        dir.path().join("schema.cedarschema"),
        "namespace Tollgate {\n  entity User in [Nope];\n}",
    )
    .unwrap();
    let e = validate(dir.path()).unwrap_err();
    assert!(e[0].to_string().contains("Nope"), "{e:?}");
}

#[test]
fn virtual_server_entities_are_checked_when_the_schema_declares_them() {
    let schema = std::fs::read_to_string(repo_policies().join("schema.cedarschema")).unwrap();
    let dir = policy_dir(&[]);
    let write = |text: &str| std::fs::write(dir.path().join("schema.cedarschema"), text).unwrap();
    // Declared, but a server cannot be in it: refused.
    let unrelated = schema.replace("entity Server in [VirtualServer] {", "entity Server {");
    assert_ne!(unrelated, schema);
    write(&unrelated);
    let e = validate(dir.path()).unwrap_err();
    let text: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert!(text.iter().any(|t| t.contains("VirtualServer")), "{text:#?}");
    // A schema from before virtual-server entities still loads; its
    // policies cannot name one.
    let before = unrelated.replace("  entity VirtualServer;\n", "");
    assert_ne!(before, unrelated);
    write(&before);
    validate(dir.path()).unwrap();
    std::fs::write(
        dir.path().join("v.cedar"),
        "@id(\"v\")\npermit (principal, action, resource in Tollgate::VirtualServer::\"eng\");\n",
    )
    .unwrap();
    let e = validate(dir.path()).unwrap_err();
    assert!(e[0].to_string().contains("VirtualServer"), "{e:?}");
    write(&schema);
    validate(dir.path()).unwrap();
}

#[test]
fn a_missing_directory_or_schema_is_reported() {
    let e = validate(std::path::Path::new("/nonexistent/policies")).unwrap_err();
    assert!(e[0].to_string().contains("/nonexistent/policies"), "{}", e[0]);
}

#[test]
fn the_summary_counts_and_lists() {
    let dir = policy_dir(&[(
        "s.cedar",
        r#"@id("p") permit (principal, action, resource) when { context.hour > 1 };
           @id("f") @scope("mcp:admin") forbid (principal, action, resource) unless { context.scopes.contains("mcp:admin") };"#,
    )]);
    let s = validate(dir.path()).unwrap();
    assert_eq!(
        (s.policies, s.permits, s.forbids, s.scope_forbids, s.files),
        (2, 1, 1, 1, 1)
    );
    assert_eq!(s.ids, ["p", "f"]);
    assert_eq!(s.context, ["scopes", "hour"]);
    assert!(
        s.to_string()
            .contains("2 policies (1 permit, 1 forbid, 1 with @scope) in 1 files"),
        "{s}"
    );
}
