use std::path::Path;

use crate::ConfigError;
use crate::load::load_str;
use crate::load::tests::FakeEnv;

const MARKER: &str = "MARKER7f3a";

fn config(listen_admin: &str, extra: &str) -> String {
    format!(
        "[listen]\npublic = \"127.0.0.1:8080\"\nadmin = \"{listen_admin}\"\n{extra}\n\
         [[servers]]\nname = \"a\"\nurl = \"http://127.0.0.1:3001/mcp\"\n"
    )
}

fn env(vars: &[(&str, &str)]) -> FakeEnv {
    let mut env = FakeEnv::default();
    for (k, v) in vars {
        env.0.insert((*k).to_owned(), (*v).to_owned());
    }
    env
}

fn errors(text: &str, env: &FakeEnv) -> Vec<ConfigError> {
    match load_str(Path::new("gw.toml"), text, env) {
        Ok(_) => panic!("loads:\n{text}"),
        Err(e) => e.0,
    }
}

const TOKEN: &str = "[admin]\ntoken = { env = \"ADMIN_TOKEN\" }\n";

#[test]
fn the_admin_token_is_read_from_its_source_and_never_printed() {
    let text = config("127.0.0.1:9090", TOKEN);
    let good = "a-long-enough-admin-token\n";
    let loaded = load_str(Path::new("gw.toml"), &text, &env(&[("ADMIN_TOKEN", good)])).unwrap();
    let token = loaded.admin_token.unwrap();
    assert_eq!(token.expose(), b"a-long-enough-admin-token");
    assert_eq!(format!("{token:?}"), "Secret([redacted])");
    let none = load_str(Path::new("gw.toml"), &config("127.0.0.1:9090", ""), &env(&[])).unwrap();
    assert!(none.admin_token.is_none());
}

#[test]
fn an_unusable_admin_token_is_named_by_its_key_only() {
    let text = config("127.0.0.1:9090", TOKEN);
    for (value, why) in [
        ("s-MARKER7f3a", "at least 16"),
        ("MARKER7f3a with spaces inside", "printable ASCII"),
    ] {
        let e = &errors(&text, &env(&[("ADMIN_TOKEN", value)]))[0];
        assert_eq!((e.key.as_str(), e.line), ("admin.token", Some(5)), "{e}");
        assert!(e.message.contains(why), "{e}");
        assert!(!e.to_string().contains(MARKER), "the token is quoted: {e}");
    }
    let e = &errors(&text, &env(&[]))[0];
    assert_eq!(e.key, "admin.token");
    assert!(e.message.contains("ADMIN_TOKEN is not set"), "{e}");
}

#[test]
fn an_admin_listener_off_loopback_without_a_token_is_a_warning() {
    let load = |admin: &str, extra: &str| {
        let vars = env(&[("ADMIN_TOKEN", "a-long-enough-admin-token")]);
        load_str(Path::new("gw.toml"), &config(admin, extra), &vars).unwrap()
    };
    let open = load("0.0.0.0:9090", "");
    assert_eq!(open.warnings.len(), 1, "{:?}", open.warnings);
    let w = &open.warnings[0];
    assert_eq!((w.key.as_str(), w.line), ("listen.admin", Some(3)));
    assert!(w.message.contains("[admin] token"), "{w}");
    assert!(load("0.0.0.0:9090", TOKEN).warnings.is_empty());
    assert!(load("127.0.0.1:9090", "").warnings.is_empty());
    assert!(load("[::1]:9090", "").warnings.is_empty());
}

#[test]
fn userinfo_in_an_upstream_url_is_refused_without_being_repeated() {
    let text = config("127.0.0.1:9090", "").replace(
        "http://127.0.0.1:3001/mcp",
        &format!("https://svc:{MARKER}@mcp.example.com/mcp?key={MARKER}"),
    );
    let errs = errors(&text, &env(&[]));
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert_eq!((e.key.as_str(), e.line), ("servers[0].url", Some(7)));
    assert!(e.message.contains("user name or password"), "{e}");
    assert!(!e.to_string().contains(MARKER), "{e}");
}

/// A configuration whose secrets and URLs all carry the marker, each in a
/// way that fails validation; no error repeats it.
#[test]
fn no_error_repeats_a_secret_or_a_url() {
    let url = format!("https://u:{MARKER}@idp.example.com/?k={MARKER}");
    let extra = format!(
        "{TOKEN}\n[sessions]\nkey = {{ env = \"SESSION_KEY\" }}\n\n[security]\nallowed_origins = [\"{url}\"]\n\n\
         [auth]\npublic_base_url = \"{url}\"\n\n[[auth.issuers]]\nissuer = \"{url}\"\n\n\
         [console]\nenabled = true\nissuer = \"https://c:{MARKER}@other.example/\"\nurl = \"{url}\"\n[console.roles]\nviewer = [\"*\"]\n"
    );
    let text = config("127.0.0.1:9090", &extra).replace("http://127.0.0.1:3001/mcp", &url)
        + "credential = { kind = \"static\", value = { env = \"UPSTREAM\" } }\n";
    let vars = env(&[
        ("ADMIN_TOKEN", MARKER),
        ("SESSION_KEY", MARKER),
        ("UPSTREAM", &format!("{MARKER}\u{7}")),
    ]);
    let errs = errors(&text, &vars);
    let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
    for key in [
        "admin.token",
        "sessions.key",
        "security.allowed_origins[0]",
        "auth.public_base_url",
        "auth.issuers[0].issuer",
        "console.issuer",
        "console.url",
        "servers[0].url",
        "servers[0].credential.value",
    ] {
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
    for e in &errs {
        assert!(!e.to_string().contains(MARKER), "{e}");
    }
}

/// serde quotes a value it cannot use; the message keeps the key and what
/// was expected, not the value.
#[test]
fn deserializer_errors_do_not_quote_the_value() {
    for (find, replace) in [
        (
            "http://127.0.0.1:3001/mcp".to_owned(),
            format!("https://u:{MARKER}@mcp.example.com:99999/mcp"),
        ),
        ("name = \"a\"".to_owned(), format!("name = \"{MARKER} x\"")),
        (
            "[[servers]]".to_owned(),
            format!("[[servers]]\nheader_trust = \"{MARKER}\""),
        ),
        (
            "[[servers]]".to_owned(),
            "[[servers]]\nlegacy = \"MARKER7f3a\"".to_owned(),
        ),
    ] {
        let text = config("127.0.0.1:9090", "").replace(&find, &replace);
        let e = &errors(&text, &env(&[]))[0];
        assert!(e.key.starts_with("servers[0]."), "{e}");
        assert!(e.line.is_some(), "{e}");
        assert!(!e.to_string().contains(MARKER), "{e}");
    }
    let e = &errors(&format!("{MARKER} = [1"), &env(&[]))[0];
    assert!(!e.to_string().contains(MARKER), "{e}");
}
