//! The repository's policies: the demo set and the examples validate, and
//! their test tables pass (`tollgate policy validate|test` in `make test`).

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use tollgate_policy::{run_tests, validate};

#[test]
fn the_shipped_policies_validate() {
    let demo = validate(&common::repo_policies()).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(demo.policies >= 8, "{demo}");
    assert_eq!(demo.scope_forbids, 1);
    assert!(demo.warnings.is_empty(), "{demo}");
    let examples = validate(&common::repo_policies().join("examples")).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        examples.ids.contains(&"destructive-tools-need-admin-scope".to_owned()),
        "{examples}"
    );
    assert!(examples.context.contains(&"annotations"), "{examples}");
    assert!(!examples.context.contains(&"client_ip"), "{examples}");
    assert!(examples.reads_issuer, "09-issuer-aware-principal.cedar reads it");
    assert!(!demo.reads_issuer, "{demo}");
}

#[test]
fn the_shipped_policy_tests_pass() {
    let report = run_tests(&common::repo_policies());
    println!("{report}");
    assert!(report.success(), "{report}");
    assert!(report.passed() >= 50, "{report}");
    assert!(
        report
            .to_string()
            .ends_with(&format!("{} passed, 0 failed\n", report.passed()))
    );
}
