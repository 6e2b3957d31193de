//! `[[virtual_servers]]`: parsing, defaults, the name mapping, and every
//! refusal with its key and line.

use std::path::Path;

use super::*;
use crate::load::tests::FakeEnv;
use crate::{ConfigError, load_str};

const BASE: &str = r#"
[listen]
public = "127.0.0.1:8080"
admin  = "127.0.0.1:9090"

[[servers]]
name = "github"
url = "http://127.0.0.1:3001/mcp"

[[servers]]
name = "jira"
url = "http://127.0.0.1:3002/mcp"

[[servers]]
name = "docs"
url = "http://127.0.0.1:3003/mcp"
"#;

const ENGINEERING: &str = r#"
[[virtual_servers]]
name = "engineering"
expose = "search"
pinned = ["github_create_issue"]
auth = { scopes = ["mcp:tools"] }

[[virtual_servers.members]]
server = "github"
exclude = ["delete_repository"]

[[virtual_servers.members]]
server = "jira"
prefix = "ticket."
tools = ["create", "search"]
rename = { search = "find_tickets" }
describe = { create = "Open a ticket in the engineering project." }

[[virtual_servers.members]]
server = "docs"
"#;

fn load(extra: &str) -> Result<Config, Vec<ConfigError>> {
    load_str(Path::new("gw.toml"), &format!("{BASE}{extra}"), &FakeEnv::default())
        .map(|l| l.config)
        .map_err(|e| e.0)
}

/// The 1-based line, in `BASE + extra`, of the first occurrence of `needle`
/// in `extra`.
fn line_of(extra: &str, needle: &str) -> Option<usize> {
    let at = BASE.len() + extra.find(needle)?;
    Some(format!("{BASE}{extra}")[..at].matches('\n').count() + 1)
}

/// The single problem of `extra`: its key, line and message.
fn one(extra: &str) -> (String, Option<usize>, String) {
    let e = load(extra).unwrap_err();
    assert_eq!(e.len(), 1, "{e:#?}");
    let e = e.into_iter().next().unwrap();
    assert!(e.to_string().starts_with("gw.toml:"), "{e}");
    (e.key, e.line, e.message)
}

fn member(text: &str) -> Member {
    toml::from_str(text).unwrap()
}

#[test]
fn a_virtual_server_loads_with_every_key() {
    let c = load(ENGINEERING).unwrap();
    let v = c.virtual_server("engineering").unwrap();
    assert_eq!(v.expose, Expose::Search);
    assert_eq!(v.expose.as_str(), "search");
    assert_eq!(v.pinned, ["github_create_issue"]);
    assert_eq!(v.auth.scopes, ["mcp:tools"]);
    let servers: Vec<_> = v.members.iter().map(|m| m.server.as_str()).collect();
    assert_eq!(servers, ["github", "jira", "docs"]);
    let jira = v.member("jira").unwrap();
    assert_eq!(jira.prefix(), "ticket.");
    assert_eq!(
        jira.tools.as_deref(),
        Some(&["create".to_owned(), "search".to_owned()][..])
    );
    assert_eq!(jira.rename.get("search").map(String::as_str), Some("find_tickets"));
    assert_eq!(
        jira.describe.get("create").map(String::as_str),
        Some("Open a ticket in the engineering project.")
    );
    assert!(v.member("wiki").is_none());
    assert!(c.virtual_server("github").is_none());
}

#[test]
fn defaults_expose_everything_under_the_server_prefix() {
    let c = load("\n[[virtual_servers]]\nname = \"all\"\nmembers = [{ server = \"docs\" }]\n").unwrap();
    let v = &c.virtual_servers[0];
    assert_eq!(v.expose, Expose::All);
    assert!(v.pinned.is_empty());
    assert!(!c.virtual_auth_required(v), "no issuer: no token, as for servers");
    assert_eq!(
        c.virtual_resource_url(v).as_deref(),
        Some("http://127.0.0.1:8080/mcp/all")
    );
    let m = &v.members[0];
    assert_eq!((m.prefix.as_deref(), m.prefix()), (None, "docs_".to_owned()));
    assert_eq!((&m.tools, m.exclude.len(), m.rename.len()), (&None, 0, 0));
    assert!(load("").unwrap().virtual_servers.is_empty());
}

#[test]
fn exposed_names_are_prefixed_filtered_and_renamed() {
    let m = member(
        "server = \"jira\"\ntools = [\"create\", \"search\", \"close\"]\nexclude = [\"close\"]\nrename = { search = \
         \"find_tickets\", other = \"x\" }\n",
    );
    assert_eq!(m.exposed("create").as_deref(), Some("jira_create"));
    assert_eq!(m.exposed("search").as_deref(), Some("find_tickets"), "rename wins");
    assert_eq!(m.exposed("close"), None, "excluded");
    assert_eq!(m.exposed("other"), None, "not in tools, renamed or not");
    assert_eq!(m.exposed("delete"), None, "not in tools");
    let m = member("server = \"github\"\nprefix = \"\"\nexclude = [\"delete_repository\"]\n");
    assert_eq!(m.exposed("create_issue").as_deref(), Some("create_issue"));
    assert_eq!(m.exposed("delete_repository"), None);
    assert!(m.includes("anything") && !m.includes("delete_repository"));
}

#[test]
fn resolve_finds_the_member_and_its_own_name() {
    let c = load(ENGINEERING).unwrap();
    let v = &c.virtual_servers[0];
    let listed = |m: &Member, name: &str| match m.server.as_str() {
        "github" => ["create_issue", "delete_repository"].contains(&name),
        "jira" => ["create", "search", "close"].contains(&name),
        _ => name == "read",
    };
    let resolve = |exposed: &str| v.resolve(exposed, listed).map(|(m, n)| (m.server.clone(), n));
    let found = |server: &str, name: &str| Some((server.to_owned(), name.to_owned()));
    assert_eq!(resolve("github_create_issue"), found("github", "create_issue"));
    assert_eq!(resolve("ticket.create"), found("jira", "create"));
    assert_eq!(resolve("find_tickets"), found("jira", "search"));
    assert_eq!(resolve("docs_read"), found("docs", "read"));
    assert_eq!(resolve("ticket.search"), None, "renamed: only the new name");
    assert_eq!(resolve("ticket.close"), None, "not in tools");
    assert_eq!(resolve("github_delete_repository"), None, "excluded");
    assert_eq!(resolve("docs_write"), None, "not listed by the member");
    assert_eq!(resolve("github_"), None);
    assert_eq!(resolve("create_issue"), None);
}

#[test]
fn resolve_refuses_a_name_two_members_expose() {
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"github\", prefix = \"a_\" }, { server = \
                \"jira\", prefix = \"a_b_\" }]\n";
    let c = load(text).unwrap();
    let v = &c.virtual_servers[0];
    let only = |server: &'static str, own: &'static str| move |m: &Member, n: &str| m.server == server && n == own;
    let hit = |r: Option<(&Member, String)>| r.map(|(m, n)| format!("{}/{n}", m.server));
    assert_eq!(
        hit(v.resolve("a_b_x", only("github", "b_x"))).as_deref(),
        Some("github/b_x")
    );
    assert_eq!(hit(v.resolve("a_b_x", only("jira", "x"))).as_deref(), Some("jira/x"));
    let both = |m: &Member, n: &str| (m.server == "github" && n == "b_x") || (m.server == "jira" && n == "x");
    assert_eq!(hit(v.resolve("a_b_x", both)), None, "a collision resolves to nothing");
    let v: VirtualServer =
        toml::from_str("name = \"v\"\nmembers = [{ server = \"d\", rename = { a = \"d_b\" } }]").unwrap();
    assert_eq!(hit(v.resolve("d_b", |_, n| n == "a")).as_deref(), Some("d/a"));
    assert_eq!(hit(v.resolve("d_b", |_, _| true)), None, "a and b both exposed as d_b");
}

#[test]
fn tool_names_follow_the_mcp_recommendation() {
    for ok in [
        "a",
        "getUser",
        "DATA_EXPORT_v2",
        "admin.tools.list",
        "x-y",
        &"a".repeat(128),
    ] {
        assert!(is_valid_tool_name(ok), "{ok:?} refused");
    }
    for bad in ["", "a b", "a/b", "a,b", "é", "a:b", &"a".repeat(129)] {
        assert!(!is_valid_tool_name(bad), "{bad:?} accepted");
    }
}

#[test]
fn route_names_are_shared_with_servers_and_unique() {
    let text = "\n[[virtual_servers]]\nname = \"jira\"\nmembers = [{ server = \"docs\" }]\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        ("virtual_servers[0].name", line_of(text, "name = \"jira\""))
    );
    assert_eq!(msg, "\"jira\" is already the name of a [[servers]] entry");
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\" }]\n\n[[virtual_servers]]\nname = \
                \"v\"\nmembers = [{ server = \"jira\" }]\n";
    let (key, line, msg) = one(text);
    assert_eq!((key.as_str(), line), ("virtual_servers[1].name", Some(23)));
    assert_eq!(msg, "duplicate virtual server name \"v\"");
    let (key, _, msg) = one("\n[[virtual_servers]]\nname = \"a b\"\nmembers = [{ server = \"docs\" }]\n");
    assert_eq!(key, "virtual_servers[0].name");
    assert!(msg.contains("invalid server name"), "{msg}");
}

#[test]
fn members_must_be_known_distinct_servers() {
    let (key, _, msg) = one("\n[[virtual_servers]]\nname = \"v\"\nmembers = []\n");
    assert_eq!(
        (key.as_str(), msg.as_str()),
        ("virtual_servers[0].members", "at least one member is required")
    );
    let (key, _, msg) = one("\n[[virtual_servers]]\nname = \"v\"\n");
    assert_eq!(key, "virtual_servers[0]");
    assert!(msg.contains("missing field `members`"), "{msg}");
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\" },\n  { server = \"wiki\" }]\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        (
            "virtual_servers[0].members[1].server",
            line_of(text, "{ server = \"wiki")
        )
    );
    assert_eq!(msg, "\"wiki\" is not the name of a [[servers]] entry");
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\" }, { server = \"docs\", prefix = \
                \"d_\" }]\n";
    let (key, _, msg) = one(text);
    assert_eq!(key, "virtual_servers[0].members[1].server");
    assert_eq!(msg, "\"docs\" is already a member (members[0])");
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\" }]\n\n[[virtual_servers]]\nname = \
                \"w\"\nmembers = [{ server = \"v\" }]\n";
    let (key, _, msg) = one(text);
    assert_eq!(key, "virtual_servers[1].members[0].server");
    assert_eq!(msg, "\"v\" is a virtual server: members are [[servers]] entries");
    let (key, _, msg) = one("\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\", alias = \"d\" }]\n");
    assert_eq!(key, "virtual_servers[0].members[0].alias");
    assert!(msg.contains("unknown field `alias`"), "{msg}");
}

#[test]
fn prefixes_and_renames_must_make_valid_tool_names() {
    let text =
        "\n[[virtual_servers]]\nname = \"v\"\n\n[[virtual_servers.members]]\nserver = \"docs\"\nprefix = \"docs/\"\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        ("virtual_servers[0].members[0].prefix", line_of(text, "prefix"))
    );
    assert_eq!(msg, "invalid prefix \"docs/\": use at most 127 of A-Z a-z 0-9 _ - .");
    let (key, _, _) = one(&format!(
        "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{{ server = \"docs\", prefix = \"{}\" }}]\n",
        "p".repeat(128)
    ));
    assert_eq!(key, "virtual_servers[0].members[0].prefix");
    let text = "\n[[virtual_servers]]\nname = \"v\"\n\n[[virtual_servers.members]]\nserver = \"docs\"\n\n[virtual_servers.\
                members.rename]\nread = \"read docs\"\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        ("virtual_servers[0].members[0].rename.read", line_of(text, "read ="))
    );
    assert_eq!(
        msg,
        "invalid tool name \"read docs\": use 1 to 128 of A-Z a-z 0-9 _ - ."
    );
}

#[test]
fn statically_known_collisions_are_refused() {
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [\n  { server = \"github\", rename = { search = \"find\" } \
                },\n  { server = \"jira\", rename = { query = \"find\" } },\n]\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        ("virtual_servers[0].members[1].rename.query", line_of(text, "query"))
    );
    assert_eq!(msg, "\"find\" is already the exposed name of \"search\" of \"github\"");
    let text =
        "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\", rename = { a = \"x\", b = \"x\" } }]\n";
    let (key, _, _) = one(text);
    assert_eq!(key, "virtual_servers[0].members[0].rename.b");
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [\n  { server = \"github\", tools = [\"create_issue\"] },\n  \
                { server = \"jira\", rename = { create = \"github_create_issue\" } },\n]\n";
    let (key, _, msg) = one(text);
    assert_eq!(key, "virtual_servers[0].members[1].rename.create");
    assert_eq!(
        msg,
        "\"github_create_issue\" is already the exposed name of \"create_issue\" of \"github\""
    );
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\", prefix = \"x_\" },\n  { server = \
                \"jira\", prefix = \"x_\" }]\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        (
            "virtual_servers[0].members[1].prefix",
            line_of(text, "{ server = \"jira")
        )
    );
    assert_eq!(
        msg,
        "members \"docs\" and \"jira\" share the prefix \"x_\", their tool names could collide"
    );
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\" }, { server = \"jira\", prefix = \
                \"docs_\" }]\n";
    assert_eq!(one(text).0, "virtual_servers[0].members[1].prefix");
    // Left out names expose nothing, so they collide with nothing.
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [\n  { server = \"github\", rename = { a = \"x\" }, exclude \
                = [\"a\"] },\n  { server = \"jira\", rename = { b = \"x\" } },\n]\n";
    assert!(load(text).is_ok());
}

#[test]
fn search_mode_reserves_find_tools_and_owns_pinned() {
    let text = "\n[[virtual_servers]]\nname = \"v\"\npinned = [\"docs_read\"]\nmembers = [{ server = \"docs\" }]\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        ("virtual_servers[0].pinned", line_of(text, "pinned"))
    );
    assert_eq!(msg, "pinned is only used with expose = \"search\"");
    let search = |rest: &str| format!("\n[[virtual_servers]]\nname = \"v\"\nexpose = \"search\"\n{rest}");
    let (key, _, msg) = one(&search(
        "members = [{ server = \"docs\", rename = { search = \"find_tools\" } }]\n",
    ));
    assert_eq!(key, "virtual_servers[0].members[0].rename.search");
    assert!(msg.starts_with("\"find_tools\" is the search tool"), "{msg}");
    let errs = load(&search(
        "pinned = [\"docs_read\", \"bad name\", \"find_tools\", \"docs_read\"]\nmembers = [{ server = \"docs\" }]\n",
    ))
    .unwrap_err();
    let keys: Vec<_> = errs.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "virtual_servers[0].pinned[1]",
            "virtual_servers[0].pinned[2]",
            "virtual_servers[0].pinned[3]"
        ]
    );
    let (key, _, msg) =
        one("\n[[virtual_servers]]\nname = \"v\"\nexpose = \"some\"\nmembers = [{ server = \"docs\" }]\n");
    assert!(
        key == "virtual_servers[0].expose" && msg.contains("unknown variant"),
        "{key}: {msg}"
    );
    let all = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\", rename = { search = \"find_tools\" } \
               }]\n";
    assert!(
        load(all).is_ok(),
        "find_tools is an ordinary name with expose = \"all\""
    );
}

#[test]
fn a_name_both_listed_and_excluded_is_refused() {
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"jira\", tools = [\"a\", \"b\"], exclude = \
                [\"c\", \"b\"] }]\n";
    let (key, _, msg) = one(text);
    assert_eq!(key, "virtual_servers[0].members[0].exclude[1]");
    assert_eq!(msg, "\"b\" is also in tools: list it in one of them");
}

#[test]
fn a_virtual_server_auth_is_checked_like_a_server_auth() {
    let text = "\n[[virtual_servers]]\nname = \"v\"\nauth = { required = true, scopes = [\"a b\"] }\nmembers = [{ server = \
                \"docs\" }]\n";
    let errs = load(text).unwrap_err();
    let keys: Vec<_> = errs.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        ["virtual_servers[0].auth.required", "virtual_servers[0].auth.scopes[0]"]
    );
    assert!(errs[0].message.contains("no [[auth.issuers]]"), "{}", errs[0]);
}

#[test]
fn the_schema_describes_virtual_servers() {
    let schema = crate::schema().to_string();
    for key in [
        "virtual_servers",
        "members",
        "prefix",
        "exclude",
        "rename",
        "pinned",
        "\"search\"",
    ] {
        assert!(schema.contains(key), "{key} missing from the schema");
    }
}

#[test]
fn a_virtual_server_has_policy_and_audit_keys_like_a_server() {
    let c = load(
        "\n[[virtual_servers]]\nname = \"v\"\npolicy = { mode = \"observe\" }\n\
         audit = { approved_by = \"CHG-9\", capture_arguments = true }\nmembers = [{ server = \"docs\" }]\n",
    )
    .unwrap();
    let v = c.virtual_server("v").unwrap();
    assert_eq!(v.policy.mode, Some(crate::PolicyMode::Observe));
    assert_eq!(v.audit.approved_by.as_deref(), Some("CHG-9"));
    // Its mode is its own; the members keep theirs.
    let modes = c.policy.route_modes(&c);
    assert_eq!(modes.get("v"), Some(&crate::PolicyMode::Observe));
    assert_eq!(modes.get("docs"), Some(&crate::PolicyMode::Enforce));
    let (key, _, message) = one(
        "\n[[virtual_servers]]\nname = \"v\"\npolicy = { mode = \"sometimes\" }\nmembers = [{ server = \"docs\" }]\n",
    );
    assert_eq!(key, "virtual_servers[0].policy.mode");
    assert!(message.contains("unknown variant"), "{message}");
}

#[test]
fn a_virtual_server_asks_at_least_what_its_members_ask() {
    // With an issuer, every server requires a token by default.
    let issuer = "\n[dev_issuer]\nenabled = true\n";
    let open = format!(
        "{issuer}\n[[virtual_servers]]\nname = \"v\"\nauth = {{ required = false }}\nmembers = [{{ server = \"docs\" }}]\n"
    );
    let (key, _, message) = one(&open);
    assert_eq!(key, "virtual_servers[0].auth");
    assert!(message.contains("requires a token"), "{message}");

    let scoped = format!(
        "{issuer}\n[[servers]]\nname = \"admin\"\nurl = \"http://127.0.0.1:3004/mcp\"\nauth = {{ scopes = [\"repo:write\"] }}\n\n\
         [[virtual_servers]]\nname = \"v\"\nauth = {{ scopes = [\"mcp:tools\"] }}\nmembers = [{{ server = \"admin\" }}]\n"
    );
    let (key, _, message) = one(&scoped);
    assert_eq!(key, "virtual_servers[0].auth.scopes");
    assert!(message.contains("repo:write"), "{message}");
}

#[test]
fn descriptions_must_say_something_about_an_exposed_name() {
    let text = "\n[[virtual_servers]]\nname = \"v\"\n\n[[virtual_servers.members]]\nserver = \"docs\"\nexclude = \
                [\"drop\"]\n\n[virtual_servers.members.describe]\nread = \"  \"\n";
    let (key, line, msg) = one(text);
    assert_eq!(
        (key.as_str(), line),
        ("virtual_servers[0].members[0].describe.read", line_of(text, "read ="))
    );
    assert!(msg.starts_with("an empty description"), "{msg}");
    let text = "\n[[virtual_servers]]\nname = \"v\"\nmembers = [{ server = \"docs\", exclude = [\"drop\"], describe = { \
                drop = \"Drops.\" } }]\n";
    let (key, _, msg) = one(text);
    assert_eq!(key, "virtual_servers[0].members[0].describe.drop");
    assert_eq!(msg, "describes \"drop\", which this member leaves out");
}
