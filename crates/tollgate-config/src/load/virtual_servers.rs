//! Validation of `[[virtual_servers]]`: route names, members, prefixes,
//! renames and descriptions, and the name collisions that can be known from the
//! configuration alone. (Their `auth` tables are checked with the servers'
//! in `auth`.)

use std::collections::HashMap;

use super::Problems;
use crate::locate::Seg;
use crate::virtual_server::{Expose, FIND_TOOLS, Member, VirtualServer, is_valid_tool_name};
use crate::{Config, ServerName};

fn vs_path(i: usize, rest: &[Seg]) -> Vec<Seg> {
    let mut p = vec![Seg::Key("virtual_servers".into()), Seg::Index(i)];
    p.extend_from_slice(rest);
    p
}

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

fn member_path(i: usize, j: usize, rest: &[Seg]) -> Vec<Seg> {
    let mut p = vs_path(i, &[key("members"), Seg::Index(j)]);
    p.extend_from_slice(rest);
    p
}

pub(super) fn validate(c: &Config, out: &mut Problems) {
    for (i, v) in c.virtual_servers.iter().enumerate() {
        validate_name(c, i, &v.name, out);
        if v.members.is_empty() {
            out.push((vs_path(i, &[key("members")]), "at least one member is required".into()));
        }
        for (j, m) in v.members.iter().enumerate() {
            validate_member(c, v, i, j, m, out);
        }
        validate_prefixes(v, i, out);
        validate_exposed_names(v, i, out);
        validate_pinned(v, i, out);
        validate_auth_covers_members(c, v, i, out);
    }
}

fn validate_name(c: &Config, i: usize, name: &ServerName, out: &mut Problems) {
    let p = vs_path(i, &[key("name")]);
    if c.servers.iter().any(|s| s.name == *name) {
        out.push((
            p,
            format!("{:?} is already the name of a [[servers]] entry", name.as_str()),
        ));
    } else if c.virtual_servers[..i].iter().any(|o| o.name == *name) {
        out.push((p, format!("duplicate virtual server name {:?}", name.as_str())));
    }
}

fn validate_member(c: &Config, v: &VirtualServer, i: usize, j: usize, m: &Member, out: &mut Problems) {
    let at = |rest: &[Seg]| member_path(i, j, rest);
    if let Some(k) = v.members[..j].iter().position(|o| o.server == m.server) {
        out.push((
            at(&[key("server")]),
            format!("{:?} is already a member (members[{k}])", m.server),
        ));
    } else if !c.servers.iter().any(|s| s.name.as_str() == m.server) {
        let what = if c.virtual_servers.iter().any(|o| o.name.as_str() == m.server) {
            "is a virtual server: members are [[servers]] entries"
        } else {
            "is not the name of a [[servers]] entry"
        };
        out.push((at(&[key("server")]), format!("{:?} {what}", m.server)));
    }
    if let Some(prefix) = &m.prefix {
        // A valid prefix followed by any valid name is a valid name.
        if !is_valid_tool_name(&format!("{prefix}x")) {
            out.push((
                at(&[key("prefix")]),
                format!("invalid prefix {prefix:?}: use at most 127 of A-Z a-z 0-9 _ - ."),
            ));
        }
    }
    for (from, to) in &m.rename {
        if !is_valid_tool_name(to) {
            out.push((
                at(&[key("rename"), key(from)]),
                format!("invalid tool name {to:?}: use 1 to 128 of A-Z a-z 0-9 _ - ."),
            ));
        }
    }
    for (name, text) in &m.describe {
        let problem = if text.trim().is_empty() {
            Some("an empty description: write the description to show, or remove the entry".to_owned())
        } else if !m.includes(name) {
            Some(format!("describes {name:?}, which this member leaves out"))
        } else {
            None
        };
        if let Some(problem) = problem {
            out.push((at(&[key("describe"), key(name)]), problem));
        }
    }
    for (k, name) in m.exclude.iter().enumerate() {
        if m.tools.as_ref().is_some_and(|only| only.contains(name)) {
            out.push((
                at(&[key("exclude"), Seg::Index(k)]),
                format!("{name:?} is also in tools: list it in one of them"),
            ));
        }
    }
}

/// Two members under one prefix could expose the same name.
fn validate_prefixes(v: &VirtualServer, i: usize, out: &mut Problems) {
    for (j, m) in v.members.iter().enumerate() {
        let prefix = m.prefix();
        let earlier = v.members[..j]
            .iter()
            .find(|o| o.server != m.server && o.prefix() == prefix);
        if let Some(o) = earlier {
            out.push((
                member_path(i, j, &[key("prefix")]),
                format!(
                    "members {:?} and {:?} share the prefix {prefix:?}, their tool names could collide",
                    o.server, m.server
                ),
            ));
        }
    }
}

/// Exposed names known from the configuration alone: rename targets, and
/// the names of `tools` lists. Two equal ones collide; so does `find_tools`
/// in search mode.
fn validate_exposed_names(v: &VirtualServer, i: usize, out: &mut Problems) {
    let mut seen: HashMap<String, (&str, &str)> = HashMap::new();
    for (j, m) in v.members.iter().enumerate() {
        for (name, exposed, p) in static_names(m, i, j) {
            if v.expose == Expose::Search && exposed == FIND_TOOLS {
                out.push((
                    p.clone(),
                    format!(
                        "{FIND_TOOLS:?} is the search tool of expose = \"search\": expose this tool under another name"
                    ),
                ));
            }
            match seen.get(exposed.as_str()) {
                Some((server, other)) if (*server, *other) != (m.server.as_str(), name) => out.push((
                    p,
                    format!("{exposed:?} is already the exposed name of {other:?} of {server:?}"),
                )),
                Some(_) => {}
                None => {
                    seen.insert(exposed, (m.server.as_str(), name));
                }
            }
        }
    }
}

/// A member's exposed names known from the configuration, each with the
/// member's own name and the key that makes it: rename targets, then the
/// other names of its `tools` list.
fn static_names(m: &Member, i: usize, j: usize) -> Vec<(&str, String, Vec<Seg>)> {
    let renamed = m.rename.iter().filter(|(from, _)| m.includes(from)).map(|(from, to)| {
        let p = member_path(i, j, &[key("rename"), key(from)]);
        (from.as_str(), to.clone(), p)
    });
    let listed = m.tools.iter().flatten().enumerate().filter_map(|(k, name)| {
        if m.rename.contains_key(name) {
            return None;
        }
        let p = member_path(i, j, &[key("tools"), Seg::Index(k)]);
        Some((name.as_str(), m.exposed(name)?, p))
    });
    renamed.chain(listed).collect()
}

fn validate_pinned(v: &VirtualServer, i: usize, out: &mut Problems) {
    if v.expose == Expose::All && !v.pinned.is_empty() {
        out.push((
            vs_path(i, &[key("pinned")]),
            "pinned is only used with expose = \"search\"".into(),
        ));
        return;
    }
    for (k, name) in v.pinned.iter().enumerate() {
        let p = vs_path(i, &[key("pinned"), Seg::Index(k)]);
        if !is_valid_tool_name(name) {
            out.push((
                p,
                format!("invalid tool name {name:?}: use 1 to 128 of A-Z a-z 0-9 _ - ."),
            ));
        } else if name == FIND_TOOLS {
            out.push((p, format!("{FIND_TOOLS:?} is always listed in search mode")));
        } else if v.pinned[..k].contains(name) {
            out.push((p, format!("{name:?} is already pinned")));
        }
    }
}

/// A call through a virtual server skips its member's own `auth` (the
/// caller was authenticated for the virtual server), so the virtual
/// server must ask at least what each member asks: a token when a member
/// requires one, and every scope a member requires.
fn validate_auth_covers_members(c: &Config, v: &VirtualServer, i: usize, out: &mut Problems) {
    let open = !c.virtual_auth_required(v);
    for m in &v.members {
        let Some(server) = c.servers.iter().find(|s| s.name.as_str() == m.server) else {
            continue;
        };
        if !c.auth_required(server) {
            continue;
        }
        if open {
            out.push((
                vs_path(i, &[key("auth")]),
                format!(
                    "member {:?} requires a token, so the virtual server must too (auth.required)",
                    m.server
                ),
            ));
            continue;
        }
        let missing: Vec<&str> = server
            .auth
            .scopes
            .iter()
            .filter(|s| !v.auth.scopes.contains(s))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            out.push((
                vs_path(i, &[key("auth"), key("scopes")]),
                format!(
                    "must include the scopes member {:?} requires: {}",
                    m.server,
                    missing.join(", ")
                ),
            ));
        }
    }
}
