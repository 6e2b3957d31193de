//! Keeps `docs/metrics.md` in sync with the metrics the gateway registers.
//!
//! Every metric is registered on one fresh registry, as `Gateway::new`
//! does (so duplicate names fail here too), and described from its
//! collector: name and labels from the descriptors, which exist even for a
//! label vector without samples, type from `collect`. The per-call metrics
//! (`tollgate-meter`) keep their collectors private, so they are described
//! from a registry of their own after observing one summary that touches
//! every one of them; a guard counts their metric families so that a new
//! one cannot go unnoticed.
//!
//! The doc's metric tables are those whose first header cell is `metric`:
//! `| metric | type | labels | label values | meaning |`, one row per
//! metric, names and labels in backticks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prometheus::Registry;
use prometheus::core::Collector;
use prometheus::proto::{MetricFamily, MetricType};
use tollgate_audit::AuditHandle;
use tollgate_core::{Answer, CallElement, CallObserver, CallSummary, ErrorKind, Hidden, McpMethod, PolicyVerdict};
use tollgate_meter::CallMetrics;

use super::{CatalogCollector, LimitCollector, Metrics, StatusCollector, VirtualCollector};
use crate::services::audit_write_seconds;

const DOC: &str = include_str!("../../../../docs/metrics.md");

/// What the doc says, or the code registers, about one metric.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Described {
    kind: String,
    labels: BTreeSet<String>,
}

fn kind_name(t: MetricType) -> String {
    format!("{t:?}").to_ascii_lowercase()
}

/// Describe `c` from its descriptors (name, labels) and one collection
/// (type).
fn describe(c: &dyn Collector, out: &mut BTreeMap<String, Described>) {
    let kinds: BTreeMap<String, MetricType> = c
        .collect()
        .iter()
        .map(|mf| (mf.name().to_owned(), mf.get_field_type()))
        .collect();
    for d in c.desc() {
        let kind = kinds
            .get(&d.fq_name)
            .map_or_else(|| "unknown".to_owned(), |t| kind_name(*t));
        let labels = d.variable_labels.iter().cloned().collect();
        let previous = out.insert(d.fq_name.clone(), Described { kind, labels });
        assert!(previous.is_none(), "{} described twice", d.fq_name);
    }
}

/// Describe the families a registry gathers (those with samples).
fn describe_gathered(families: &[MetricFamily], out: &mut BTreeMap<String, Described>) {
    for mf in families {
        let labels = mf
            .get_metric()
            .iter()
            .flat_map(|m| m.get_label().iter().map(|l| l.name().to_owned()))
            .collect();
        let described = Described {
            kind: kind_name(mf.get_field_type()),
            labels,
        };
        let previous = out.insert(mf.name().to_owned(), described);
        assert!(previous.is_none(), "{} described twice", mf.name());
    }
}

/// Every metric the gateway registers.
fn registered() -> BTreeMap<String, Described> {
    let registry = Registry::new();
    let mut out = BTreeMap::new();

    let http = Metrics::register(&registry).expect("HTTP metrics register");
    // No `..`: a metric added to `Metrics` must be added here.
    let Metrics {
        requests,
        duration,
        in_flight,
        handles: _,
    } = &http;
    let collectors: [&dyn Collector; 3] = [requests, duration, in_flight];
    for c in collectors {
        describe(c, &mut out);
    }

    // A gateway with a (never reachable) shared limit store: the store's
    // gauges are only collected when there is one.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _inside = runtime.enter();
    let gateway = crate::test_support::TestGateway::new(
        "[[servers]]\nname = \"s\"\nurl = \"http://127.0.0.1:1/mcp\"\n\
         [limits.redis]\nurl = \"redis://127.0.0.1:1\"\ntimeout = \"10ms\"\n",
    );
    let live = gateway.gateway.live();
    let status =
        StatusCollector::new(AuditHandle::disabled(), None, live.clone(), None).expect("status collector builds");
    describe(&status, &mut out);
    registry.register(Box::new(status)).expect("status collector registers");

    let approvals = Arc::new(crate::catalog::Approvals::new(tollgate_catalog::Lock::default()));
    let lock = Arc::new(crate::governance::reload::LockFile::new("catalog.lock".into(), None));
    let catalog = CatalogCollector::new(live.clone(), approvals, lock).expect("catalog collector builds");
    describe(&catalog, &mut out);
    registry
        .register(Box::new(catalog))
        .expect("catalog collector registers");

    let limits = LimitCollector::new(live.clone()).expect("limit collector builds");
    describe(&limits, &mut out);
    registry.register(Box::new(limits)).expect("limit collector registers");

    let vault = super::VaultCollector::new(live.clone()).expect("vault collector builds");
    describe(&vault, &mut out);
    registry.register(Box::new(vault)).expect("vault collector registers");

    let upstreams = super::UpstreamCollector::new(live.clone()).expect("upstream collector builds");
    describe(&upstreams, &mut out);
    registry
        .register(Box::new(upstreams))
        .expect("upstream collector registers");

    let virtuals = VirtualCollector::new(live).expect("virtual-server collector builds");
    describe(&virtuals, &mut out);
    registry
        .register(Box::new(virtuals))
        .expect("virtual-server collector registers");

    let status = Arc::new(crate::shipping::ShipStatus::new("r", Arc::default()));
    let shipping = super::ShipCollector::new(status).expect("shipping collector builds");
    describe(&shipping, &mut out);
    registry
        .register(Box::new(shipping))
        .expect("shipping collector registers");

    let shared = crate::governance::shared::ApprovalMetrics::new().expect("approval metrics build");
    for c in shared.collectors() {
        describe(c, &mut out);
    }
    shared.register(&registry).expect("approval metrics register");

    let checkpoints = crate::checkpoint::CheckpointMetrics::new().expect("checkpoint metrics build");
    for c in checkpoints.collectors() {
        describe(c, &mut out);
    }
    let tls = crate::tls::expiry_gauges().expect("TLS expiry gauges build");
    describe(&tls, &mut out);
    registry.register(Box::new(tls)).expect("TLS expiry gauges register");

    let audit = audit_write_seconds().expect("audit histogram builds");
    describe(&audit, &mut out);
    registry.register(Box::new(audit)).expect("audit histogram registers");

    crate::audit_index::IndexMetrics::register(&registry).expect("index metrics register beside the others");
    let index = Registry::new();
    crate::audit_index::IndexMetrics::register(&index).expect("index metrics register");
    describe_gathered(&index.gather(), &mut out);

    CallMetrics::register(&registry).expect("call metrics register beside the others");
    let own = Registry::new();
    let calls = CallMetrics::register(&own).expect("call metrics register");
    calls.observe(&every_call_metric());
    let families = own.gather();
    let debug = format!("{calls:?}");
    let fields = debug.matches("MetricVec").count() + debug.matches("Desc {").count();
    assert_eq!(
        families.len(),
        fields,
        "CallMetrics has {fields} metrics but {} have samples: make the summary below touch the new one",
        families.len()
    );
    describe_gathered(&families, &mut out);
    out
}

/// A finished call that touches every per-call metric: a denied tool
/// call, a hidden list entry, a first byte, bytes both ways, and an
/// upstream failure.
fn every_call_metric() -> CallSummary {
    let denied = PolicyVerdict {
        allowed: false,
        enforced: true,
        reason: "deny",
        policies: Arc::from([]),
    };
    CallSummary {
        elements: vec![CallElement {
            jsonrpc_id: Some(Box::from("1")),
            method: "tools/call".into(),
            family: McpMethod::ToolsCall,
            name: Some("t".into()),
            policy: Some(denied),
            definition: None,
            catalog: None,
            rpc_error: None,
        }],
        forwarded: true,
        bytes_in: 1,
        answer: Answer {
            status: 502,
            error: Some(ErrorKind::UpstreamUnavailable),
            bytes_out: 1,
            ttfb: Some(Duration::ZERO),
            ..Answer::default()
        },
        hidden: Some(Hidden {
            entries: 1,
            enforced: true,
        }),
        ..CallSummary::new("r1", "r", SystemTime::now(), McpMethod::ToolsCall)
    }
}

/// The rows of the doc's metric tables.
fn documented(doc: &str) -> BTreeMap<String, Described> {
    let mut out = BTreeMap::new();
    let mut columns: Option<(usize, usize)> = None;
    for line in doc.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            columns = None;
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.first() == Some(&"metric") {
            let at = |name: &str| cells.iter().position(|c| *c == name);
            columns = Some((
                at("type").expect("a metric table has a type column"),
                at("labels").expect("a metric table has a labels column"),
            ));
            continue;
        }
        let Some((kind, labels)) = columns else {
            continue;
        };
        if cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':'))) {
            continue;
        }
        let name = cells[0].trim_matches('`');
        assert!(
            name.starts_with("tollgate_") || name.starts_with("mcp_"),
            "docs/metrics.md: `{name}` in a metric table is not a metric name"
        );
        let described = Described {
            kind: cells.get(kind).copied().unwrap_or_default().to_owned(),
            labels: backticked(cells.get(labels).copied().unwrap_or_default()),
        };
        let previous = out.insert(name.to_owned(), described);
        assert!(previous.is_none(), "docs/metrics.md: `{name}` has two rows");
    }
    out
}

/// The `code` spans of a cell.
fn backticked(cell: &str) -> BTreeSet<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

#[test]
fn every_registered_metric_has_a_row_and_every_row_is_registered() {
    let code = registered();
    let doc = documented(DOC);
    for (name, described) in &code {
        let Some(row) = doc.get(name) else {
            panic!("docs/metrics.md has no row for `{name}` ({described:?})");
        };
        assert_eq!(
            row, described,
            "docs/metrics.md: the row of `{name}` disagrees with the code"
        );
    }
    for name in doc.keys() {
        assert!(
            code.contains_key(name),
            "docs/metrics.md lists `{name}`, which the gateway does not register"
        );
    }
}

#[test]
fn doc_tables_are_parsed() {
    let doc = documented(
        "| metric | type | labels | label values | meaning |\n| --- | --- | --- | --- | --- |\n\
         | `tollgate_x_total` | counter | `route`, `kind` | a; b | m |\n| `mcp_y` | gauge | — | — | m |\n\n\
         | label | values |\n| --- | --- |\n| `tollgate_not_a_row` | v |\n",
    );
    assert_eq!(doc.len(), 2);
    assert_eq!(
        doc["tollgate_x_total"],
        Described {
            kind: "counter".into(),
            labels: ["kind".to_owned(), "route".to_owned()].into(),
        }
    );
    assert!(doc["mcp_y"].labels.is_empty());
}
