//! `tollgate validate` with two trusted issuers: a warning (exit 0) while
//! no policy reads the issuer, none once one does; and a limit naming a
//! subject without its issuer is a warning too, with its line.

use std::path::Path;

use tollgate_e2e::children::tollgate_cli;
use tollgate_e2e::policy_dir;

/// A configuration trusting `issuers`, its policies in `policies`, with a
/// rate-limit rule naming `principals` (TOML).
fn config(issuers: &[&str], policies: &Path, principals: &str) -> String {
    let trusted: String = issuers
        .iter()
        .map(|i| format!("[[auth.issuers]]\nissuer = \"{i}\"\njwks_uri = \"{i}/jwks\"\n\n"))
        .collect();
    format!(
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"127.0.0.1:9090\"\n\n{trusted}\
         [policy]\ndir = \"{}\"\n\n[[servers]]\nname = \"demo\"\nurl = \"http://127.0.0.1:3001/mcp\"\n\n\
         [[limits.rules]]\nid = \"r\"\nprincipals = {principals}\nrate = 1\nperiod = \"1m\"\n",
        policies.display()
    )
}

/// `tollgate validate` of `text`: its exit code and stderr.
async fn validate(text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, text).unwrap();
    let out = tollgate_cli(&["validate", "--config", path.to_str().unwrap()]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(": ok (1 servers)"), "{stdout}");
    (out.status.code().unwrap(), String::from_utf8(out.stderr).unwrap())
}

const BY_ID: &str = "@id(\"alice\")\npermit (principal == Tollgate::User::\"alice\", action, resource);\n";

#[tokio::test]
async fn two_issuers_and_no_policy_on_the_issuer_is_a_warning() {
    let two = ["https://idp.corp.example", "https://partner.example"];
    let qualified = "[{ issuer = \"https://partner.example\", subject = \"alice\" }]";
    let blind = policy_dir(BY_ID);
    let (code, err) = validate(&config(&two, blind.path(), qualified)).await;
    assert_eq!(code, 0, "a warning, not an error: {err}");
    let warning = err
        .lines()
        .find(|l| l.contains("key `policy.dir`"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(warning.starts_with("warning: "), "{err}");
    assert!(
        warning.contains("gateway.toml: key `policy.dir`: 2 issuers are trusted"),
        "{err}"
    );
    assert!(
        warning.contains("no policy in") && warning.contains("principal.issuer"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "the qualified principal is no warning: {err}");

    let aware = policy_dir(&format!(
        "{}when {{ principal.issuer == \"https://idp.corp.example\" }};\n",
        BY_ID.trim_end().trim_end_matches(';')
    ));
    let (code, err) = validate(&config(&two, aware.path(), qualified)).await;
    assert_eq!((code, err.as_str()), (0, ""), "a policy reads the issuer");

    let (code, err) = validate(&config(&two[..1], blind.path(), "[\"alice\"]")).await;
    assert_eq!((code, err.as_str()), (0, ""), "one issuer: unambiguous");

    // A subject without its issuer, with two trusted: located like an error.
    let (code, err) = validate(&config(&two, aware.path(), "[\"alice\"]")).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("warning: ") && err.contains(":22:") && err.contains("key `limits.rules[0].principals`"),
        "{err}"
    );
}
