use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;
use quick_cache::DefaultHashBuilder;
use tollgate_core::Era;

use super::*;
use crate::model::ToolAnnotations;

fn facts<'a>(route: &'a str, method: &'a str) -> Facts<'a> {
    Facts {
        route,
        method,
        era: Era::Modern,
        client_ip: None,
        annotations: None,
        now: 0,
        utc_offset: 0,
        virtual_server: None,
        upstream_grant: None,
    }
}

const LOCAL: Local = Local {
    hour: 9,
    minute: 1,
    weekday: 3,
};

const ASKER: Asker = Asker {
    principal: 1,
    generation: 1,
};

/// Needs reading the context attributes `names`.
fn reading(names: &[&str]) -> Needs {
    let mut needs = Needs::default();
    for name in names {
        needs.add_policy(&serde_json::json!({ ".": { "left": { "Var": "context" }, "attr": name } }));
    }
    needs
}

/// Whether `a` finds what was stored under `b`; checked both ways round,
/// and that equivalent keys hash alike.
fn same(a: &Lookup<'_>, b: &Lookup<'_>) -> bool {
    let found = a.equivalent(&b.to_key());
    assert_eq!(found, b.equivalent(&a.to_key()), "{a:?} {b:?}");
    assert_eq!(found, a.to_key() == b.to_key(), "{a:?} {b:?}");
    if found {
        let h = DefaultHashBuilder::default();
        assert_eq!(h.hash_one(a), h.hash_one(b.to_key()), "{a:?} {b:?}");
    }
    found
}

#[test]
fn keys_hold_every_input_the_policies_read() {
    let key = |needs, route, name, args, local| {
        Lookup::new(
            needs,
            ASKER,
            Action::CallTool,
            name,
            &facts(route, "tools/call"),
            local,
            args,
        )
    };
    assert!(
        key(Needs::ALL, "r", Some("n"), &[], LOCAL).is_none(),
        "`now` is never cached"
    );
    let some = Needs::default();
    // Without needs, only route and name count.
    let a = key(some, "r", Some("n"), &[("x", "1")], LOCAL).unwrap();
    assert!(same(
        &a,
        &key(some, "r", Some("n"), &[], Local { hour: 1, ..LOCAL }).unwrap()
    ));
    // Fields stay apart.
    let b = key(some, "r/", Some("n"), &[], LOCAL).unwrap();
    assert!(!same(&b, &key(some, "r", Some("/n"), &[], LOCAL).unwrap()));
    let c = key(some, "r", None, &[], LOCAL).unwrap();
    assert!(!same(&c, &key(some, "r", Some(""), &[], LOCAL).unwrap()));
    // A call through a virtual server never shares a decision with the
    // same call on the route, nor with one through another virtual server.
    let through = |f: &Facts<'static>| Lookup::new(some, ASKER, Action::CallTool, Some("n"), f, LOCAL, &[]).unwrap();
    let direct = facts("r", "tools/call");
    let eng = Facts {
        virtual_server: Some("eng"),
        ..direct
    };
    assert!(!same(&through(&direct), &through(&eng)));
    assert!(same(&through(&eng), &through(&eng)));
    let ops = Facts {
        virtual_server: Some("ops"),
        ..direct
    };
    assert!(!same(&through(&eng), &through(&ops)));
    let empty = Facts {
        virtual_server: Some(""),
        ..direct
    };
    assert!(!same(&through(&direct), &through(&empty)));
}

#[test]
fn context_inputs_count_only_when_read() {
    let needs = reading(&["minute", "client_ip", "annotations", "method", "args"]);
    let ip = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let base = facts("r", "tools/call");
    let repo: &[(&str, &str)] = &[("Repo", "x")];
    let with = |f: Facts<'static>, local, args| {
        Lookup::new(needs, ASKER, Action::CallTool, Some("n"), &f, local, args).unwrap()
    };
    let a = with(base, LOCAL, repo);
    assert!(same(&a, &with(base, Local { hour: 1, ..LOCAL }, &[("rEPO", "x")])));
    assert!(!same(&a, &with(base, Local { minute: 2, ..LOCAL }, repo)));
    assert!(!same(&a, &with(Facts { client_ip: ip, ..base }, LOCAL, repo)));
    let read_only = Some(ToolAnnotations::from_hints(Some(true), None, None, None));
    assert!(!same(
        &a,
        &with(
            Facts {
                annotations: read_only,
                ..base
            },
            LOCAL,
            repo
        )
    ));
    assert!(!same(&a, &with(Facts { method: "m", ..base }, LOCAL, repo)));
    assert!(
        !same(&a, &with(base, LOCAL, &[("Repo", "X")])),
        "values keep their case"
    );
    assert!(!same(&a, &with(base, LOCAL, &[("Repo", "x"), ("b", "")])));
    assert!(!same(&a, &with(base, LOCAL, &[])));
    // Another principal or policy generation never shares an entry.
    let asked = |asker| Lookup::new(needs, asker, Action::CallTool, Some("n"), &base, LOCAL, repo).unwrap();
    assert!(!same(&a, &asked(Asker { principal: 2, ..ASKER })));
    assert!(!same(&a, &asked(Asker { generation: 2, ..ASKER })));
    let other_action = Lookup::new(needs, ASKER, Action::GetPrompt, Some("n"), &base, LOCAL, repo).unwrap();
    assert!(!same(&a, &other_action));
}

fn text() -> impl Strategy<Value = String> {
    "[aA:]{0,2}"
}

fn pairs(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

proptest! {
    /// A lookup finds a stored key exactly when every input is equal
    /// (argument names up to ASCII case), and then hashes like it.
    #[test]
    fn lookups_find_exactly_the_equal_keys(
        names in (prop::option::of(text()), prop::option::of(text())),
        args in (prop::collection::vec((text(), text()), 0..2), prop::collection::vec((text(), text()), 0..2)),
        minutes in (0i64..2, 0i64..2),
        vias in (prop::option::of(text()), prop::option::of(text())),
    ) {
        let needs = reading(&["minute", "args"]);
        let (a_args, b_args) = (pairs(&args.0), pairs(&args.1));
        let fa = Facts { virtual_server: vias.0.as_deref(), ..facts("r", "m") };
        let fb = Facts { virtual_server: vias.1.as_deref(), ..facts("r", "m") };
        let local = |minute| Local { minute, ..LOCAL };
        let a = Lookup::new(needs, ASKER, Action::CallTool, names.0.as_deref(), &fa, local(minutes.0), &a_args).unwrap();
        let b = Lookup::new(needs, ASKER, Action::CallTool, names.1.as_deref(), &fb, local(minutes.1), &b_args).unwrap();
        let lower = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned())).collect()
        };
        let equal = names.0 == names.1 && minutes.0 == minutes.1 && lower(&a_args) == lower(&b_args) && vias.0 == vias.1;
        prop_assert_eq!(same(&a, &b), equal);
        prop_assert!(same(&a, &a));
    }
}
