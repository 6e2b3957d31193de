//! The poisoning checks measured on a labelled corpus
//! (`tests/corpus/*.jsonl`): benign definitions modelled on the tool lists
//! of public MCP servers, and poisoned ones written after the published
//! tool-poisoning techniques. Each entry is marked `tune` or `heldout`; the
//! checks are tuned against the tune split only. Entries with a
//! `heldout_round` were held out in an earlier measurement and are tune
//! data since (`docs/catalog.md`, "Measured", has the history).
//!
//! The target on the held-out split is a recall of at least 90 % (poisoned
//! definitions raising a finding of severity high or medium) with at most
//! 3 % of benign definitions raising one. The false-alarm bound is met and
//! asserted; the recall target is not met (57 % measured), so its test is
//! ignored with the figure, and a guard keeps the recall from falling below
//! what was measured.
//!
//! Entries of one `server` form one snapshot, so that each definition is
//! checked with the context the gateway gives it (its server's other
//! definitions, the other servers and their tools). The figures, the
//! misses and the false alarms are printed (`cargo test -p
//! tollgate-catalog --test poison_corpus -- --nocapture`). The tool
//! catalogue of the search-quality test, written independently of these
//! checks, is counted too as a further benign set.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs, reason = "tests")]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::Value;
use tollgate_catalog::{CheckContext, Definition, Finding, Kind, Severity, Snapshot, check};

const BENIGN: &str = include_str!("corpus/benign.jsonl");
const POISONED: &str = include_str!("corpus/poisoned.jsonl");
const SEARCH_TOOLS: &str = include_str!("../../../tests/fixtures/search/tools.json");

/// The target on the held-out split.
const MIN_RECALL: f64 = 0.90;
const MAX_FALSE_ALARMS: f64 = 0.03;
/// The held-out recall measured (37 of 65), which changes must not lower.
const MEASURED_RECALL: f64 = 0.56;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    label: Label,
    #[serde(default)]
    technique: Option<String>,
    split: Split,
    server: String,
    #[serde(default)]
    kind: Option<Kind>,
    /// The measurement this entry was held out in, before it became tune
    /// data.
    #[serde(default)]
    heldout_round: Option<u8>,
    definition: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Label {
    Poisoned,
    Benign,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Split {
    Tune,
    Heldout,
}

fn corpus() -> Vec<Entry> {
    let entries: Vec<Entry> = BENIGN
        .lines()
        .chain(POISONED.lines())
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for e in &entries {
        assert_eq!(e.technique.is_some(), e.label == Label::Poisoned, "{}", e.id);
    }
    entries
}

/// Each entry's findings, every server's entries checked as one snapshot.
fn findings(entries: &[(String, Kind, Value)]) -> Vec<Vec<Finding>> {
    let mut snapshots: BTreeMap<&str, Snapshot> = BTreeMap::new();
    let mut definitions = Vec::new();
    for (server, kind, body) in entries {
        let d = Definition::new(*kind, body.clone()).unwrap();
        let snapshot = snapshots
            .entry(server.as_str())
            .or_insert_with(|| Snapshot::empty(server));
        assert!(
            snapshot
                .definitions
                .insert((d.kind, d.key.clone()), d.clone())
                .is_none(),
            "{server}: {} twice",
            d.key
        );
        definitions.push((server.as_str(), d));
    }
    let servers: Vec<String> = snapshots.keys().map(|s| (*s).to_owned()).collect();
    let contexts: BTreeMap<&str, CheckContext> = snapshots
        .iter()
        .map(|(name, snapshot)| {
            let others = snapshots.values().filter(|s| s.server != *name);
            let tools = others.flat_map(|s| s.of_kind(Kind::Tool).map(|d| d.key.clone()));
            let context = CheckContext::for_snapshot(snapshot, &servers).with_other_tools(tools.collect::<Vec<_>>());
            (*name, context)
        })
        .collect();
    definitions
        .iter()
        .map(|(server, d)| check(d, &contexts[server]))
        .collect()
}

fn alarming(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity >= Severity::Medium)
}

/// What one split scored.
#[derive(Debug, Default)]
struct Figures {
    poisoned: usize,
    caught: usize,
    benign: usize,
    false_alarms: usize,
    missed: Vec<String>,
    alarms: Vec<String>,
}

impl Figures {
    fn recall(&self) -> f64 {
        self.caught as f64 / self.poisoned.max(1) as f64
    }

    fn false_alarm_rate(&self) -> f64 {
        self.false_alarms as f64 / self.benign.max(1) as f64
    }

    fn report(&self, name: &str) {
        println!(
            "{name}: recall {}/{} = {:.3}; benign flagged high/medium {}/{} = {:.3}",
            self.caught,
            self.poisoned,
            self.recall(),
            self.false_alarms,
            self.benign,
            self.false_alarm_rate()
        );
        for m in &self.missed {
            println!("  missed   {m}");
        }
        for a in &self.alarms {
            println!("  flagged  {a}");
        }
    }
}

/// Every entry with its findings, checked once per test binary.
static CHECKED: LazyLock<Vec<(Entry, Vec<Finding>)>> = LazyLock::new(|| {
    let entries = corpus();
    let inputs: Vec<(String, Kind, Value)> = entries
        .iter()
        .map(|e| (e.server.clone(), e.kind.unwrap_or(Kind::Tool), e.definition.clone()))
        .collect();
    let all = findings(&inputs);
    entries.into_iter().zip(all).collect()
});

fn measure(split: Split) -> Figures {
    measure_where(|e| e.split == split)
}

fn measure_where(keep: impl Fn(&Entry) -> bool) -> Figures {
    let mut figures = Figures::default();
    for (e, found) in CHECKED.iter().filter(|(e, _)| keep(e)) {
        let flagged = alarming(found);
        match e.label {
            Label::Poisoned => {
                figures.poisoned += 1;
                if flagged {
                    figures.caught += 1;
                } else {
                    let technique = e.technique.as_deref().unwrap_or_default();
                    figures.missed.push(format!("{} ({technique})", e.id));
                }
            }
            Label::Benign => {
                figures.benign += 1;
                if flagged {
                    figures.false_alarms += 1;
                    let shown: Vec<String> = found
                        .iter()
                        .filter(|f| f.severity >= Severity::Medium)
                        .map(|f| format!("{} {} {}: {}", f.severity, f.check, f.field, f.excerpt))
                        .collect();
                    figures.alarms.push(format!("{}: {shown:#?}", e.id));
                }
            }
        }
    }
    figures
}

#[test]
fn the_corpus_is_large_and_split() {
    let entries = corpus();
    let count = |label: Label, split: Option<Split>| {
        entries
            .iter()
            .filter(|e| e.label == label && split.is_none_or(|s| e.split == s))
            .count()
    };
    assert!(count(Label::Poisoned, None) >= 120, "{}", count(Label::Poisoned, None));
    assert!(count(Label::Benign, None) >= 300, "{}", count(Label::Benign, None));
    for label in [Label::Poisoned, Label::Benign] {
        let (all, held) = (count(label, None), count(label, Some(Split::Heldout)));
        assert!(
            held * 5 >= all && held * 5 <= all * 2,
            "{label:?}: {held} of {all} held out"
        );
    }
    let mut ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), entries.len(), "ids are unique");
}

#[test]
fn tune_split_figures() {
    let figures = measure(Split::Tune);
    figures.report("tune");
    for round in [1, 2] {
        let held = measure_where(|e| e.heldout_round == Some(round));
        held.report(&format!("tune, of which held out in round {round}"));
    }
    assert!(figures.recall() >= MIN_RECALL, "tune recall {:.3}", figures.recall());
    assert!(figures.false_alarm_rate() <= MAX_FALSE_ALARMS);
}

#[test]
fn heldout_split_keeps_false_alarms_down_and_recall_up() {
    let figures = measure(Split::Heldout);
    figures.report("heldout");
    assert!(
        figures.false_alarm_rate() <= MAX_FALSE_ALARMS,
        "held-out false alarms {:.3}",
        figures.false_alarm_rate()
    );
    assert!(
        figures.recall() >= MEASURED_RECALL,
        "held-out recall {:.3}, below the {MEASURED_RECALL} measured",
        figures.recall()
    );
}

#[test]
#[ignore = "not met: held-out recall 0.57 (37 of 65) against a target of 0.90; see docs/catalog.md"]
fn heldout_split_meets_the_recall_target() {
    let figures = measure(Split::Heldout);
    figures.report("heldout");
    assert!(
        figures.recall() >= MIN_RECALL,
        "held-out recall {:.3}",
        figures.recall()
    );
}

/// The search-quality catalogue (539 tools of 45 servers modelled on real
/// ones) is benign too and was never tuned on: its false alarms are
/// reported and held to the same bound.
#[test]
fn the_search_catalogue_raises_few_alarms() {
    let doc: Value = serde_json::from_str(SEARCH_TOOLS).unwrap();
    let mut inputs = Vec::new();
    for server in doc["servers"].as_array().unwrap() {
        let name = server["server"].as_str().unwrap().to_owned();
        for tool in server["tools"].as_array().unwrap() {
            inputs.push((name.clone(), Kind::Tool, tool.clone()));
        }
    }
    let all = findings(&inputs);
    let flagged: Vec<String> = inputs
        .iter()
        .zip(&all)
        .filter(|(_, f)| alarming(f))
        .map(|((server, _, body), f)| {
            let first = f.iter().find(|f| f.severity >= Severity::Medium).unwrap();
            format!(
                "{server}/{}: {} {}: {}",
                body["name"], first.check, first.field, first.excerpt
            )
        })
        .collect();
    println!(
        "search catalogue: flagged high/medium {}/{}",
        flagged.len(),
        inputs.len()
    );
    for f in &flagged {
        println!("  flagged  {f}");
    }
    assert!(flagged.len() as f64 <= inputs.len() as f64 * MAX_FALSE_ALARMS);
}
