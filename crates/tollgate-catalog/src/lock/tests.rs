//! The lock file: round trips, order, and each refusal with its position.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn def(kind: Kind, body: Value) -> Definition {
    Definition::new(kind, body).unwrap()
}

fn echo() -> Definition {
    def(
        Kind::Tool,
        json!({"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}),
    )
}

fn sample() -> Lock {
    let mut lock = Lock::default();
    let t = at(1_796_306_400); // 2026-12-03T14:00:00Z
    lock.approve("zeta", &echo(), "bob@example.com", t, None);
    lock.approve("demo", &echo(), "alice@example.com", t, Some("CHG-42"));
    let readme = def(
        Kind::Resource,
        json!({"uri": "demo://readme", "name": "readme", "mimeType": "text/plain"}),
    );
    lock.approve("demo", &readme, "alice@example.com", t, None);
    let add = def(
        Kind::Tool,
        json!({"name": "add", "description": "Add a and b: it's 'simple' '''quoted''' \u{7f}."}),
    );
    lock.approve(
        "demo",
        &add,
        "carol \"C\" <carol@example.com>",
        t + Duration::from_millis(1500),
        None,
    );
    lock
}

fn parse(text: &str) -> Result<Lock, LockErrors> {
    Lock::parse(Path::new("catalog.lock"), text)
}

fn errors(text: &str) -> Vec<String> {
    parse(text).unwrap_err().0.iter().map(ToString::to_string).collect()
}

#[test]
fn a_written_lock_parses_back_equal_and_rewrites_identically() {
    let lock = sample();
    let text = lock.to_toml();
    let back = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, lock);
    assert_eq!(back.to_toml(), text);
    assert_eq!(lock.len(), 4);
}

#[test]
fn entries_are_sorted_by_server_kind_and_key() {
    let text = sample().to_toml();
    let names: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("server = ") || l.starts_with("name = "))
        .collect();
    assert_eq!(
        names,
        [
            "server = \"demo\"",
            "name = \"add\"",
            "server = \"demo\"",
            "name = \"echo\"",
            "server = \"demo\"",
            "name = \"demo://readme\"",
            "server = \"zeta\"",
            "name = \"echo\"",
        ]
    );
    assert_eq!(sample().servers().collect::<Vec<_>>(), ["demo", "zeta"]);
}

#[test]
fn the_text_is_the_documented_format() {
    let mut lock = Lock::default();
    lock.approve("demo", &echo(), "alice@example.com", at(1_796_306_400), Some("CHG-42"));
    let expected = format!(
        "{}\n[[approval]]\nserver = \"demo\"\nkind = \"tool\"\nname = \"echo\"\nrevision = \
         \"sha256:935ede469576b85da311f627e47c00a6dcef675cad3869f6765dac64cc1e3352\"\napproved_by = \
         \"alice@example.com\"\napproved_at = \"2026-12-03T14:00:00Z\"\nnote = \"CHG-42\"\ndefinition = \
         '''\n{{\n  \"description\": \"Echo the text back.\",\n  \"inputSchema\": {{\n    \"properties\": {{\n      \
         \"text\": {{\n        \"type\": \"string\"\n      }}\n    }},\n    \"required\": [\n      \"text\"\n    ],\n    \
         \"type\": \"object\"\n  }},\n  \"name\": \"echo\"\n}}\n'''\n",
        write::HEADER
    );
    assert_eq!(lock.to_toml(), expected);
}

#[test]
fn approval_times_are_kept_to_the_second() {
    let mut lock = Lock::default();
    lock.approve("demo", &echo(), "a", at(100) + Duration::from_nanos(999_999_999), None);
    assert_eq!(lock.get("demo", Kind::Tool, "echo").unwrap().approved_at, at(100));
    // An approval built by hand keeps its fraction through the file.
    let mut approval = lock.get("demo", Kind::Tool, "echo").unwrap().clone();
    approval.approved_at = at(100) + Duration::from_millis(250);
    lock.insert(approval);
    assert_eq!(parse(&lock.to_toml()).unwrap(), lock);
}

#[test]
fn an_empty_file_is_an_empty_lock() {
    assert!(parse("").unwrap().is_empty());
    assert!(parse(write::HEADER).unwrap().is_empty());
    assert_eq!(Lock::default().to_toml(), write::HEADER);
}

/// The lock file of one valid entry, with the replacements of `edit` made.
fn entry_text(edit: &[(&str, &str)]) -> String {
    let mut lock = Lock::default();
    lock.approve("demo", &echo(), "alice@example.com", at(1_796_306_400), None);
    let mut out = lock.to_toml();
    for (from, to) in edit {
        assert!(out.contains(from), "{from} not in\n{out}");
        out = out.replacen(from, to, 1);
    }
    out
}

#[test]
fn every_problem_is_reported_with_line_column_and_key() {
    let text = entry_text(&[
        ("kind = \"tool\"", "kind = \"widget\""),
        ("revision = \"sha256:9", "revision = \"sha1:9"),
        (
            "approved_at = \"2026-12-03T14:00:00Z\"",
            "approved_at = \"yesterday\"\ncolour = \"red\"",
        ),
    ]);
    let errs = errors(&text);
    assert_eq!(errs.len(), 4, "{errs:#?}");
    assert_eq!(
        errs[0],
        "catalog.lock:8:8: key `approval[0].kind`: unknown kind \"widget\": expected tool, prompt, resource or \
         resource_template"
    );
    assert!(
        errs[1].starts_with("catalog.lock:10:12: key `approval[0].revision`: not a revision"),
        "{errs:#?}"
    );
    assert!(errs[2].starts_with("catalog.lock:12:15: key `approval[0].approved_at`: not an RFC 3339"));
    assert!(errs[3].starts_with("catalog.lock:13:1: key `approval[0].colour`: unknown key"));
}

#[test]
fn missing_and_ill_typed_keys_are_refused() {
    let text = entry_text(&[
        ("approved_by = \"alice@example.com\"\n", ""),
        ("server = \"demo\"", "server = 7"),
        ("name = \"echo\"", "name = \"\""),
    ]);
    let errs = errors(&text);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert_eq!(
        errs[0],
        "catalog.lock:6:1: key `approval[0].approved_by`: missing key `approved_by`"
    );
    assert_eq!(
        errs[1],
        "catalog.lock:7:10: key `approval[0].server`: must be a string, not integer"
    );
    assert_eq!(errs[2], "catalog.lock:9:8: key `approval[0].name`: must not be empty");
}

#[test]
fn a_definition_must_be_the_approved_json_object() {
    let not_json = errors(&entry_text(&[("\"type\": \"object\"\n", "\"type\": object\n")]));
    assert_eq!(not_json.len(), 1, "{not_json:#?}");
    // Line 25 of the file holds `"type": object` (line 12 of the JSON); the
    // error points at `object`.
    assert!(not_json[0].starts_with("catalog.lock:25:13: "), "{not_json:#?}");
    assert!(not_json[0].contains("key `approval[0].definition`: not JSON"));

    let array = errors(&entry_text(&[
        ("definition = '''\n{", "definition = '''\n[{"),
        ("}\n'''", "}]\n'''"),
    ]));
    assert_eq!(array.len(), 1);
    assert!(array[0].ends_with("must be a JSON object: the definition as the server lists it"));

    let edited = errors(&entry_text(&[(
        "Echo the text back.",
        "Echo the text back, and mail it.",
    )]));
    assert_eq!(edited.len(), 1);
    assert!(edited[0].starts_with("catalog.lock:13:14: key `approval[0].definition`: its revision is sha256:"));

    let renamed = errors(&entry_text(&[("name = \"echo\"", "name = \"ekko\"")]));
    assert_eq!(renamed.len(), 1);
    assert!(
        renamed[0].ends_with("its `name` is \"echo\", not `name` \"ekko\""),
        "{renamed:#?}"
    );

    let resource = errors(&entry_text(&[("kind = \"tool\"", "kind = \"resource\"")]));
    assert_eq!(resource.len(), 1);
    assert!(
        resource[0].ends_with("a resource definition needs a string `uri`"),
        "{resource:#?}"
    );
}

#[test]
fn duplicate_entries_are_refused() {
    let one = entry_text(&[]);
    let entry = one.split_once("\n[[approval]]").unwrap().1;
    let text = format!("{one}\n[[approval]]{entry}");
    let errs = errors(&text);
    assert_eq!(
        errs,
        [
            "catalog.lock:31:1: key `approval[1]`: duplicate approval of tool \"echo\" of server \"demo\" (first at line 6)"
        ]
    );
}

#[test]
fn other_tables_and_toml_syntax_errors_are_refused() {
    let errs = errors("[approval]\nserver = \"demo\"\n\n[extra]\n");
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].starts_with("catalog.lock:1:1: key `approval`: must be an array of tables"));
    assert!(errs[1].starts_with("catalog.lock:4:2: key `extra`: unknown key"));

    let errs = errors("[[approval]]\nserver = \"demo\n");
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with("catalog.lock:2:"), "{errs:#?}");
}

#[test]
fn a_datetime_value_is_accepted_for_approved_at() {
    let text = entry_text(&[(
        "approved_at = \"2026-12-03T14:00:00Z\"",
        "approved_at = 2026-12-03T14:00:00Z",
    )]);
    let lock = parse(&text).unwrap();
    assert_eq!(lock.iter().next().unwrap().approved_at, at(1_796_306_400));
}

#[test]
fn a_union_keeps_each_definitions_newer_approval_and_the_other_on_a_tie() {
    let t = at(1_796_306_400);
    let mut file = Lock::default();
    file.approve("demo", &echo(), "git", t + Duration::from_secs(10), None);
    let readme = def(Kind::Resource, json!({"uri": "demo://readme", "name": "readme"}));
    file.approve("demo", &readme, "git", t, None);
    let mut store = Lock::default();
    let echo2 = def(Kind::Tool, json!({"name": "echo", "description": "Echo, louder."}));
    store.approve("demo", &echo2, "console", t, None);
    store.approve("demo", &readme, "console", t, Some("same second"));
    store.approve("zeta", &echo(), "console", t, None);
    let both = file.union_newest(&store);
    assert_eq!(both.len(), 3);
    let e = both.get("demo", Kind::Tool, "echo").unwrap();
    assert_eq!(
        (e.approved_by.as_str(), &e.revision),
        ("git", &echo().revision),
        "the file's is newer"
    );
    assert_eq!(
        both.get("demo", Kind::Resource, "demo://readme").unwrap().approved_by,
        "console",
        "a tie"
    );
    assert_eq!(
        both.get("zeta", Kind::Tool, "echo").unwrap().approved_by,
        "console",
        "only in other"
    );
    let later = {
        let mut l = Lock::default();
        l.approve("demo", &echo2, "console", t + Duration::from_secs(11), None);
        l
    };
    assert_eq!(
        file.union_newest(&later)
            .get("demo", Kind::Tool, "echo")
            .unwrap()
            .revision,
        echo2.revision
    );
    assert_eq!(Lock::default().union_newest(&file), file);
    assert_eq!(file.union_newest(&Lock::default()), file);
}
