//! `tollgate policy test`: run the table of cases under `DIR/tests/*.toml`
//! against the policies of `DIR` and report `N passed, N failed`.
//!
//! Each case names a caller (token claims), a call (server, virtual server,
//! method, name, arguments, annotations, time, address, era) and the
//! expected decision, optionally with the determining policy ids and
//! missing scopes; a list case names the entries of a list response and
//! those the caller must see. Cases run through the same engine the
//! gateway uses.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tollgate_config::{PolicyFile, UtcOffset};
use tollgate_core::Principal;

use crate::decision::Reason;
use crate::engine::{PolicyEngine, Settings};
use crate::error::SourceError;
use crate::locate::line_col;
use crate::model::{CallRequest, ListRequest};
use crate::validate;

mod case;

use case::{Case, Expect, TestFile};

/// The outcome of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    /// The test file.
    pub file: PathBuf,
    /// The line of the case's `[[case]]` table.
    pub line: usize,
    /// The case's name.
    pub name: String,
    /// Why it failed; `None` when it passed.
    pub failure: Option<String>,
}

/// The outcome of a test run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestReport {
    /// Every case run, in file order.
    pub results: Vec<CaseResult>,
    /// Problems that kept cases from running: an invalid policy set, an
    /// unreadable or malformed test file. Each counts as one failure.
    pub errors: Vec<SourceError>,
}

impl TestReport {
    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.failure.is_none()).count()
    }

    /// Cases that failed, plus problems that kept cases from running.
    pub fn failed(&self) -> usize {
        self.results.len() - self.passed() + self.errors.len()
    }

    /// Whether everything passed.
    pub fn success(&self) -> bool {
        self.failed() == 0
    }
}

impl fmt::Display for TestReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.errors {
            writeln!(f, "error: {e}")?;
        }
        for r in &self.results {
            if let Some(why) = &r.failure {
                writeln!(f, "FAIL {}:{}: {}: {why}", r.file.display(), r.line, r.name)?;
            }
        }
        writeln!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

/// Run the policy tests of the policy directory `dir`: every
/// `dir/tests/*.toml` file, against the policies of `dir` (or of the
/// directory the file names with `policies = "..."`).
pub fn run_tests(dir: &Path) -> TestReport {
    let mut report = TestReport::default();
    match tollgate_config::read_policy_tests(dir) {
        Ok(tests) => {
            for file in &tests {
                run_file(dir, file, &mut report);
            }
        }
        Err(e) => report.errors.push(SourceError::new(e.file, e.message)),
    }
    report
}

fn run_file(dir: &Path, file: &PolicyFile, report: &mut TestReport) {
    let parsed: TestFile = match toml::from_str(&file.text) {
        Ok(t) => t,
        Err(e) => {
            let at = e.span().map(|s| line_col(&file.text, s.start));
            report.errors.push(SourceError::new(&file.path, e.message()).at(at));
            return;
        }
    };
    let Some(engine) = engine_for(dir, file, &parsed, report) else {
        return;
    };
    for case in &parsed.case {
        let line = line_col(&file.text, case.span().start).0;
        report
            .results
            .push(run_case(&engine, &parsed.defaults, case.get_ref(), &file.path, line));
    }
}

/// The engine a test file runs against; `None` (with the reason reported)
/// when its policies do not load.
fn engine_for(dir: &Path, file: &PolicyFile, parsed: &TestFile, report: &mut TestReport) -> Option<PolicyEngine> {
    let offset = match parsed.utc_offset.clone().map(UtcOffset::try_from).transpose() {
        Ok(o) => o.map_or(0, UtcOffset::seconds),
        Err(e) => {
            report.errors.push(SourceError::new(&file.path, e));
            return None;
        }
    };
    let policy_dir = parsed.policies.as_ref().map_or_else(|| dir.to_owned(), |p| dir.join(p));
    let mut settings = Settings::new(&policy_dir);
    settings.utc_offset_seconds = offset;
    let loaded = validate::read(&policy_dir)
        .map_err(|e| vec![e])
        .and_then(|files| PolicyEngine::from_files(settings, &files).map_err(|e| e.0));
    match loaded {
        Ok(engine) => Some(engine),
        Err(errors) => {
            let why = format!("the policies under test ({}) do not load", policy_dir.display());
            report.errors.push(SourceError::new(&file.path, why));
            report.errors.extend(errors);
            None
        }
    }
}

fn run_case(
    engine: &PolicyEngine,
    defaults: &toml::Table,
    table: &toml::Table,
    file: &Path,
    line: usize,
) -> CaseResult {
    let mut merged = defaults.clone();
    merged.extend(table.clone());
    let fallback = merged
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("(unnamed)")
        .to_owned();
    let (name, failure) = match toml::Value::Table(merged).try_into::<Case>() {
        Ok(case) => (case.name.clone(), check(engine, &case).err()),
        Err(e) => (fallback, Some(format!("malformed case: {}", e.message()))),
    };
    CaseResult {
        file: file.to_owned(),
        line,
        name,
        failure,
    }
}

/// Run one case; `Err` says how it failed.
fn check(engine: &PolicyEngine, case: &Case) -> Result<(), String> {
    let principal = Arc::new(case.principal());
    let method = case.method()?;
    let time = case.time(engine.settings().utc_offset_seconds)?;
    if let Some(names) = &case.list {
        check_list(engine, case, &principal, &method, time, names)?;
    } else if case.expect.is_none() {
        return Err("set `expect` (or `list` and `visible`)".into());
    }
    let Some(expect) = case.expect else { return Ok(()) };
    let args = case.args()?;
    let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut call = CallRequest::new(&case.server, &method).name(case.name()).args(&args);
    call = call
        .era(case.era())
        .client_ip(case.client_ip)
        .annotations(case.annotations())
        .virtual_server(case.virtual_server.as_deref());
    call.time = time;
    let d = engine.decide(&principal, &call);
    let got = match &d.reason {
        Reason::Allow => Expect::Allow,
        Reason::Deny => Expect::Deny,
        Reason::DenyMissingScope { .. } => Expect::DenyMissingScope,
        Reason::Error { .. } => Expect::Error,
    };
    let ids: Vec<&str> = d.determining_policy_ids.iter().map(|s| &**s).collect();
    if got != expect {
        let detail = match &d.reason {
            Reason::Error { messages } => messages.join("; "),
            _ => format!("determining: {ids:?}"),
        };
        return Err(format!("expected {}, got {} ({detail})", expect.as_str(), got.as_str()));
    }
    if let Some(expected) = &case.determining
        && !same_set(&ids, expected)
    {
        return Err(format!("expected determining policies {expected:?}, got {ids:?}"));
    }
    let scopes: Vec<&str> = d
        .missing_scopes()
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .collect();
    match &case.missing_scopes {
        Some(expected) if !same_set(&scopes, expected) => {
            Err(format!("expected missing scopes {expected:?}, got {scopes:?}"))
        }
        _ => Ok(()),
    }
}

/// A list case: the entries the caller sees.
fn check_list(
    engine: &PolicyEngine,
    case: &Case,
    principal: &Arc<Principal>,
    method: &str,
    time: Option<SystemTime>,
    names: &[String],
) -> Result<(), String> {
    let mut list = ListRequest::new(&case.server, case.list_kind(method)?);
    list.era = case.era();
    list.client_ip = case.client_ip;
    list.time = time;
    list.virtual_server = case.virtual_server.as_deref();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let seen = engine.filter_names(principal, &list, &names);
    let expected = case.visible.as_ref().ok_or("a list case needs `visible`")?;
    if !same_set(&seen, expected) {
        return Err(format!("expected visible {expected:?}, got {seen:?}"));
    }
    Ok(())
}

fn same_set(got: &[&str], expected: &[String]) -> bool {
    let mut a: Vec<&str> = got.to_vec();
    let mut b: Vec<&str> = expected.iter().map(String::as_str).collect();
    a.sort_unstable();
    b.sort_unstable();
    a.dedup();
    b.dedup();
    a == b
}
