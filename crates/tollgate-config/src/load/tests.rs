use std::collections::HashMap;

use super::*;

/// An environment with only the variables a test puts in it and no files;
/// shared by the configuration tests.
#[derive(Default)]
pub(crate) struct FakeEnv(pub(crate) HashMap<String, String>);

impl Environment for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
    fn read_file(&self, path: &Path) -> Result<Vec<u8>, String> {
        Err(format!("no such file {}", path.display()))
    }
}

const MINIMAL: &str = r#"
[listen]
public = "127.0.0.1:8080"   # MCP traffic: routes /mcp/{server}
admin  = "127.0.0.1:9090"   # /healthz /readyz /metrics

[[servers]]
name = "everything"
url = "http://127.0.0.1:3001/mcp"
header_trust = "verify"     # or "upstream" (see DESIGN.md)
"#;

fn errors(text: &str) -> Vec<ConfigError> {
    load_str(Path::new("gw.toml"), text, &FakeEnv::default()).unwrap_err().0
}

#[test]
fn the_documented_minimal_config_loads_with_safe_defaults() {
    let loaded = load_str(Path::new("gw.toml"), MINIMAL, &FakeEnv::default()).unwrap();
    let c = loaded.config;
    assert_eq!(c.servers[0].name.as_str(), "everything");
    assert!(c.servers[0].legacy);
    assert_eq!(c.limits.max_body_bytes, 4 * 1024 * 1024);
    assert!(loaded.session_keys.is_empty());
}

#[test]
fn unknown_keys_name_file_line_and_key() {
    let text = MINIMAL.replace("header_trust = \"verify\"", "header_trust = \"verify\"\ncolour = 1");
    let e = &errors(&text)[0];
    assert_eq!(e.file, Path::new("gw.toml"));
    assert_eq!(e.line, Some(10));
    assert_eq!(e.key, "servers[0].colour");
    assert!(e.message.contains("unknown field `colour`"), "{e}");
    assert!(e.to_string().starts_with("gw.toml:10:"), "{e}");
}

#[test]
fn bad_values_name_their_key() {
    let e = &errors(&MINIMAL.replace("\"verify\"", "\"maybe\""))[0];
    assert_eq!(e.key, "servers[0].header_trust");
    assert_eq!(e.line, Some(9));
    let e = &errors(&MINIMAL.replace("name = \"everything\"", "name = \"no spaces\""))[0];
    assert_eq!(e.key, "servers[0].name");
    assert!(e.message.contains("invalid server name"));
}

#[test]
fn semantic_errors_are_all_reported_with_lines() {
    let text = format!(
        "{MINIMAL}\n[[servers]]\nname = \"everything\"\nurl = \"ftp://x/mcp\"\n\n[security]\nallowed_origins = [\"https://ok.example\", \"https://bad.example/path\"]\n"
    );
    let errs = errors(&text);
    let keys: Vec<_> = errs.iter().map(|e| (e.key.as_str(), e.line)).collect();
    assert_eq!(
        keys,
        vec![
            ("security.allowed_origins[1]", Some(16)),
            ("servers[1].name", Some(12)),
            ("servers[1].url", Some(13)),
        ]
    );
}

#[test]
fn session_keys_resolve_from_the_environment_and_never_print() {
    let text = format!("{MINIMAL}\n[sessions]\nkey = {{ env = \"K\" }}\n");
    let mut env = FakeEnv::default();
    env.0
        .insert("K".into(), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into());
    let loaded = load_str(Path::new("gw.toml"), &text, &env).unwrap();
    assert_eq!(loaded.session_keys[0].expose()[31], 31);
    assert_eq!(format!("{:?}", loaded.session_keys[0]), "Secret([redacted])");
    let e = &errors(&text)[0];
    assert_eq!(e.key, "sessions.key");
    assert!(e.message.contains("K is not set"));
}

#[test]
fn syntax_errors_have_a_line() {
    let e = &errors("[listen\npublic = 1")[0];
    assert_eq!(e.line, Some(1));
}

#[test]
fn schema_describes_servers() {
    let s = schema().to_string();
    assert!(s.contains("header_trust"));
    assert!(s.contains("max_body_bytes"));
}

#[test]
fn limits_store_budgets_and_prices_are_validated_with_their_keys() {
    let text = format!(
        "{MINIMAL}\n[limits]\ntime_zone = \"Mars/Olympus\"\n\n[limits.redis]\nurl = \"http://x\"\n\
         password = {{ env = \"REDIS_PW\" }}\nreplicas = 0\n\n\
         [[limits.budgets]]\nid = \"b\"\nperiod = \"month\"\ntokens = 0\nwarn_at = 1.5\n\n\
         [[limits.prices]]\nroutes = [\"nowhere\"]\ntools = [\"\"]\nper_million_tokens = -1.0\n"
    );
    let keys: Vec<String> = errors(&text).into_iter().map(|e| e.key).collect();
    for key in [
        "limits.prices[0].routes",
        "limits.prices[0].tools",
        "limits.prices[0].per_million_tokens",
        "limits.time_zone",
        "limits.redis.url",
        "limits.redis.replicas",
        "limits.redis.password",
        "limits.budgets[0].tokens",
        "limits.budgets[0].warn_at",
    ] {
        assert!(keys.iter().any(|k| k == key), "{key} not in {keys:?}");
    }
    let plain_tls = format!("{MINIMAL}\n[limits.redis]\nurl = \"redis://r:6379\"\ntls = {{ cert = \"c.pem\" }}\n");
    let e = errors(&plain_tls);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.iter().all(|e| e.key == "limits.redis.tls"), "{e:?}");
    let good = format!(
        "{MINIMAL}\n[limits.redis]\nurl = \"rediss://redis.internal:6380\"\npassword = {{ env = \"REDIS_PW\" }}\n"
    );
    let mut env = FakeEnv::default();
    env.0.insert("REDIS_PW".into(), "pw\n".into());
    let loaded = load_str(Path::new("gw.toml"), &good, &env).unwrap();
    assert_eq!(
        loaded.limit_store_password.as_ref().map(|p| p.expose().to_vec()),
        Some(b"pw".to_vec())
    );
}

#[test]
fn the_console_needs_an_identity_provider_a_secret_and_a_role() {
    let keys =
        |text: &str| -> Vec<(String, Option<usize>)> { errors(text).into_iter().map(|e| (e.key, e.line)).collect() };
    let found = keys(&format!("{MINIMAL}\n[console]\nenabled = true\n"));
    assert!(found.contains(&("console.issuer".into(), Some(11))), "{found:?}");
    assert!(found.iter().any(|(k, _)| k == "console.roles"), "{found:?}");
    let found = keys(&format!(
        "{MINIMAL}\n[console]\nenabled = true\nissuer = \"https://idp.example\"\nurl = \"https://gw.example/admin\"\n\
         token_endpoint = \"http://idp.example/token\"\n[console.roles]\nviewer = [\"*\"]\n"
    ));
    for key in [
        "console.issuer",
        "console.client_secret",
        "console.url",
        "console.token_endpoint",
    ] {
        assert!(found.iter().any(|(k, _)| k == key), "{key} not in {found:?}");
    }
    let good = format!(
        "{MINIMAL}\n[[auth.issuers]]\nissuer = \"https://idp.example\"\n\n[console]\nenabled = true\n\
         issuer = \"https://idp.example\"\nclient_secret = {{ env = \"CONSOLE_SECRET\" }}\n\
         [console.roles]\nviewer = [\"*\"]\nadmin = [\"ops\"]\n"
    );
    let mut env = FakeEnv::default();
    env.0.insert("CONSOLE_SECRET".into(), "s3cret\n".into());
    let loaded = load_str(Path::new("gw.toml"), &good, &env).unwrap();
    assert_eq!(
        loaded.console_secret.map(|s| s.expose().to_vec()),
        Some(b"s3cret".to_vec())
    );
    assert_eq!(loaded.config.console_url(), "http://127.0.0.1:9090/console");
}

#[test]
fn console_audiences_are_the_consoles_own() {
    let config = |audiences: &str| {
        format!(
            "{MINIMAL}\n[[auth.issuers]]\nissuer = \"https://idp.example\"\naudiences = [\"api://tollgate\"]\n\n\
             [console]\nenabled = true\nissuer = \"https://idp.example\"\nclient_secret = {{ env = \"S\" }}\n\
             audiences = {audiences}\n[console.roles]\nviewer = [\"*\"]\n"
        )
    };
    let keys = |text: &str| -> Vec<String> {
        let all = errors(text).into_iter().map(|e| e.key);
        all.filter(|k| k.starts_with("console.audiences")).collect()
    };
    let found = keys(&config(
        "[\"console-api\", \"\", \"api://tollgate\", \"http://127.0.0.1:8080/mcp/everything\"]",
    ));
    assert_eq!(
        found,
        ["console.audiences[1]", "console.audiences[2]", "console.audiences[3]"],
        "empty, the issuer's route-wide audience, a route's URL"
    );
    let mut env = FakeEnv::default();
    env.0.insert("S".into(), "s3cret".into());
    let loaded = load_str(Path::new("gw.toml"), &config("[\"console-api\"]"), &env).unwrap();
    assert_eq!(loaded.config.console.audiences, ["console-api"]);
}

#[test]
fn an_id_jag_server_names_what_it_lacks() {
    let text = format!(
        "{MINIMAL}\n[dev_issuer]\nenabled = true\n[[dev_issuer.users]]\nsubject = \"alice\"\n\
         [authorization_server]\nenabled = true\ndevelopment = true\n\
         [vault]\nkeys = [{{ id = \"k1\", key = {{ env = \"K\" }} }}]\n\
         [[servers]]\nname = \"crm\"\nurl = \"https://crm.example.com/mcp\"\ncredential = {{ kind = \"id_jag\" }}\n"
    );
    let env = FakeEnv(HashMap::from([(
        "K".into(),
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into(),
    )]));
    let found = load_str(Path::new("gw.toml"), &text, &env).unwrap_err().0;
    let keys: Vec<&str> = found.iter().map(|e| e.key.as_str()).collect();
    assert!(keys.contains(&"servers[1].credential.client_id"), "{found:?}");
    assert!(keys.contains(&"authorization_server.identity_provider"), "{found:?}");
}

#[test]
fn checkpoint_keys_are_checked_and_the_signing_key_resolved() {
    let text = format!(
        "{MINIMAL}\n[audit]\ncheckpoint_key = {{ env = \"CP_KEY\" }}\ncheckpoint_public_keys = [\"{}\", \"AAAA\"]\n",
        "A".repeat(43) + "="
    );
    let e = errors(&text);
    assert_eq!(e.len(), 3, "{e:?}");
    assert_eq!(e[0].key, "audit.checkpoint_public_keys[1]");
    assert!(e[0].message.contains("32 bytes"), "{}", e[0].message);
    assert_eq!(e[1].key, "audit.checkpoint_key");
    assert_eq!(e[2].key, "store.replica", "a checkpoint names its replica");

    let mut env = FakeEnv::default();
    env.0.insert("CP_KEY".into(), "-----BEGIN PRIVATE KEY-----\n…\n".into());
    env.0.insert("HOSTNAME".into(), "gw-1".into());
    let loaded = load_str(Path::new("gw.toml"), &text.replace(", \"AAAA\"", ""), &env).unwrap();
    let checkpoint = loaded.checkpoint.unwrap();
    assert!(checkpoint.key.expose().starts_with(b"-----BEGIN"));
    assert_eq!(checkpoint.replica, "gw-1");
    assert_eq!(
        loaded.config.audit.checkpoint_interval,
        std::time::Duration::from_secs(60)
    );
}
