use std::path::Path;

use crate::{ClientAuthMethod, ConfigError, Credential, SigningAlgorithm, load_str};

use crate::load::tests::FakeEnv;

fn env() -> FakeEnv {
    let mut env = FakeEnv::default();
    for (k, v) in [("INTRO", "intro-secret"), ("GH", "ghp_123"), ("CC", "cc-secret")] {
        env.0.insert(k.into(), v.into());
    }
    env
}

const FULL: &str = r#"
[listen]
public = "0.0.0.0:8080"
admin  = "127.0.0.1:9090"

[auth]
public_base_url = "https://mcp.example.com/"

[[auth.issuers]]
issuer = "https://idp.example.com/realms/acme"
audiences = ["api://tollgate"]
algorithms = ["RS256", "PS256"]
require_typ = "at+jwt"
claims = { groups = "realm_access.roles", scopes = "scp" }
introspection = { endpoint = "https://idp.example.com/introspect", client_id = "gw", client_secret = { env = "INTRO" } }

[[servers]]
name = "github"
url = "https://api.github.example.com/mcp"
auth = { scopes = ["mcp:tools"], scopes_supported = ["mcp:tools", "mcp:admin"] }
credential = { kind = "static", scheme = "Bearer", value = { env = "GH" } }

[[servers]]
name = "search"
url = "https://search.internal/mcp"

[servers.credential]
kind = "client_credentials"
token_endpoint = "https://idp.example.com/token"
client_id = "gateway"
client_secret = { env = "CC" }
auth_method = "client_secret_post"
scope = "search.read"

[[servers]]
name = "files"
url = "https://files.internal/mcp"
credential = { kind = "token_exchange", token_endpoint = "https://idp.example.com/token", client_id = "gw", client_secret = { env = "CC" } }

[[servers]]
name = "open"
url = "https://open.internal/mcp"
auth = { required = false }
"#;

fn errors(text: &str) -> Vec<ConfigError> {
    load_str(Path::new("gw.toml"), text, &env()).unwrap_err().0
}

fn one_error(text: &str) -> ConfigError {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    errs.into_iter().next().unwrap()
}

#[test]
fn a_full_identity_config_loads_and_resolves_its_secrets() {
    let loaded = load_str(Path::new("/etc/gw/gw.toml"), FULL, &env()).unwrap();
    let c = &loaded.config;
    let iss = &c.auth.issuers[0];
    assert_eq!(iss.algorithms, vec![SigningAlgorithm::RS256, SigningAlgorithm::PS256]);
    assert_eq!(iss.claims.groups, "realm_access.roles");
    assert_eq!(iss.claims.subject, "sub");
    assert_eq!(iss.leeway.as_secs(), 30);
    assert_eq!(
        c.resource_url(&c.servers[0]).as_deref(),
        Some("https://mcp.example.com/mcp/github")
    );
    assert!(c.auth_required(&c.servers[0]));
    assert!(!c.auth_required(&c.servers[3]));
    assert_eq!(
        loaded.auth_secrets.introspection[0].as_ref().unwrap().expose(),
        b"intro-secret"
    );
    let creds = &loaded.auth_secrets.credentials;
    assert_eq!(creds[0].as_ref().unwrap().expose(), b"Bearer ghp_123");
    assert_eq!(creds[1].as_ref().unwrap().expose(), b"cc-secret");
    assert!(creds[3].is_none());
    let Credential::ClientCredentials(cc) = &c.servers[1].credential else {
        panic!()
    };
    assert_eq!(cc.auth_method, ClientAuthMethod::ClientSecretPost);
    assert_eq!(c.servers[2].credential.as_str(), "token_exchange");
    assert!(loaded.dev_issuer.is_none());
    assert!(format!("{loaded:?}").contains("[redacted]"));
    assert!(!format!("{loaded:?}").contains("ghp_123"));
}

#[test]
fn unsafe_algorithms_are_refused_with_a_reason() {
    let e = one_error(&FULL.replace(r#"["RS256", "PS256"]"#, r#"["RS256", "none"]"#));
    assert_eq!(e.key, "auth.issuers[0].algorithms[1]");
    assert!(e.message.contains("unsigned tokens are never accepted"), "{e}");
    let e = one_error(&FULL.replace(r#"["RS256", "PS256"]"#, r#"["HS256"]"#));
    assert!(e.message.contains("HMAC"), "{e}");
    assert_eq!(e.line, Some(12));
}

#[test]
fn credential_tables_reject_unknown_keys_and_kinds() {
    let e = one_error(&FULL.replace("scope = \"search.read\"", "scope = \"search.read\"\ncolour = 1"));
    assert!(e.key.starts_with("servers[1].credential"), "{e}");
    assert!(e.message.contains("colour"), "{e}");
    assert!(e.line.is_some(), "{e}");
    let e = one_error(&FULL.replace("kind = \"client_credentials\"", "kind = \"magic\""));
    assert!(e.message.contains("unknown variant"), "{e}");
    assert!(e.message.contains("`client_credentials`"), "the choices are named: {e}");
    assert!(!e.message.contains("magic"), "the value is not repeated: {e}");
}

#[test]
fn insecure_issuers_are_refused_except_on_loopback() {
    let http = FULL.replace("issuer = \"https://idp", "issuer = \"http://idp");
    let e = &errors(&http)[0];
    assert_eq!(e.key, "auth.issuers[0].issuer");
    assert!(e.message.contains("https://"), "{e}");
    let flagged = http.replace("require_typ", "allow_insecure_http = true\nrequire_typ");
    let keys: Vec<_> = errors(&flagged).into_iter().map(|e| e.key).collect();
    assert!(
        keys.contains(&"auth.issuers[0].allow_insecure_http".to_owned()),
        "{keys:?}"
    );
    let local = FULL
        .replace("https://idp.example.com/realms", "http://127.0.0.1:8081/realms")
        .replace("require_typ", "allow_insecure_http = true\nrequire_typ");
    load_str(Path::new("gw.toml"), &local, &env()).unwrap();
}

#[test]
fn routes_that_require_tokens_need_an_issuer_and_a_base_url() {
    let text = r#"
[listen]
public = "0.0.0.0:8080"
admin  = "127.0.0.1:9090"

[[servers]]
name = "a"
url = "http://127.0.0.1:3001/mcp"
auth = { required = true, scopes = ["bad scope"] }
credential = { kind = "token_exchange", token_endpoint = "http://idp.example.com/t", client_id = "gw", client_secret = { env = "NOPE" } }
"#;
    let errs: Vec<_> = errors(text).into_iter().map(|e| (e.key, e.line)).collect();
    assert_eq!(
        errs,
        vec![
            ("servers[0].auth.required".to_owned(), Some(9)),
            ("auth.public_base_url".to_owned(), Some(1)),
            ("servers[0].auth.scopes[0]".to_owned(), Some(9)),
            ("servers[0].credential.token_endpoint".to_owned(), Some(10)),
            ("servers[0].credential.client_secret".to_owned(), Some(10)),
        ]
    );
    let open = text.replace("required = true", "required = false");
    let e = &errors(&open)[0];
    assert_eq!(e.key, "servers[0].auth.scopes[0]");
    let keys: Vec<_> = errors(&open).into_iter().map(|e| e.key).collect();
    assert!(keys.contains(&"servers[0].credential.kind".to_owned()), "{keys:?}");
}

#[test]
fn scopes_supported_must_cover_the_required_scopes() {
    let e = one_error(&FULL.replace(
        r#"scopes_supported = ["mcp:tools", "mcp:admin"]"#,
        r#"scopes_supported = ["x"]"#,
    ));
    assert_eq!(e.key, "servers[0].auth.scopes_supported");
}

#[test]
fn the_dev_issuer_is_refused_on_a_public_listener_unless_allowed() {
    let dev = format!("{FULL}\n[dev_issuer]\nenabled = true\n");
    let e = one_error(&dev);
    assert_eq!(e.key, "dev_issuer.enabled");
    assert!(e.message.contains("listen.public (0.0.0.0:8080)"), "{e}");
    let allowed = dev.replace("enabled = true", "enabled = true\nallow_non_loopback = true");
    let loaded = load_str(Path::new("/etc/gw/gw.toml"), &allowed, &env()).unwrap();
    let settings = loaded.dev_issuer.unwrap();
    assert_eq!(settings.issuer, "http://127.0.0.1:9090/dev-issuer");
    assert_eq!(settings.key_file, Path::new("/etc/gw/tollgate-dev-key.pem"));
}

#[test]
fn a_dev_issuer_alone_makes_routes_require_tokens() {
    let text = r#"
[listen]
public = "127.0.0.1:8080"
admin  = "127.0.0.1:9090"

[dev_issuer]
enabled = true

[[servers]]
name = "demo"
url = "http://127.0.0.1:3001/mcp"
"#;
    let loaded = load_str(Path::new("gw.toml"), text, &env()).unwrap();
    let c = &loaded.config;
    assert!(c.auth_required(&c.servers[0]));
    assert_eq!(
        c.resource_url(&c.servers[0]).as_deref(),
        Some("http://127.0.0.1:8080/mcp/demo")
    );
}
