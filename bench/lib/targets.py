"""The targets of PERF.md and the verdicts of a run against them.

Owns `TARGETS` (the limits) and `judge`, which reads a summary made by
summary.summarize_runs and returns the list of verdicts that goes into the
result's summary["targets"]: value, limit, pass, how far it missed, and
whether its median had at least two clean rounds.
"""

from __future__ import annotations

from summary import C_ARMS

TARGETS = {
    "rps_ratio_vs_nginx": 1.0,  # C ratio / B ratio, at least
    "added_p50_ms": 0.10,
    "added_p99_ms": 0.25,
    "sse_added_p50_ms": 0.10,
    "idle_kib_per_conn": 8.0,
    "audit_cpu_us": 3.0,  # PERF.md §4: audit ≤ 3 µs CPU per request
    "full_vs_pure_rps": 0.75,  # PERF.md §4: the full pipeline keeps ≥ 0.75x of pure-proxy RPS
}


def verdict(name, arm, value, limit, unit, higher_is_better=False, basis=None) -> dict:
    if value is None:
        ok, miss = None, None
    elif higher_is_better:
        ok, miss = value >= limit, round(limit - value, 4) if value < limit else 0
    else:
        ok, miss = value <= limit, round(value - limit, 4) if value > limit else 0
    return {"target": name, "arm": arm, "value": value, "limit": limit, "unit": unit,
            "pass": ok, "miss_by": miss, "basis": basis}


def judge(out: dict, doc: dict) -> list[dict]:
    """The verdicts for a summary `out` of the result `doc`, in report order."""
    T = []
    rate = doc["settings"]["rate"]
    b_ratio = out["throughput"].get("B", {}).get("ratio_vs_A", {}).get("median")
    for arm in C_ARMS:
        if arm not in out["throughput"]:
            continue
        c = out["throughput"][arm]["ratio_vs_A"]
        rel = round(c["median"] / b_ratio, 3) if c["median"] and b_ratio else None
        T.append(verdict("RPS ratio vs direct ≥ nginx's (C/B)", arm, rel, TARGETS["rps_ratio_vs_nginx"], "x of nginx",
                         higher_is_better=True, basis=c["basis"]))
    for arm in C_ARMS:
        if arm not in out["fixed_rate"]:
            continue
        f = out["fixed_rate"][arm]
        T.append(verdict(f"added p50 at {rate} RPS", arm, f["added_p50_ms_vs_A"]["median"],
                         TARGETS["added_p50_ms"], "ms", basis=f["added_p50_ms_vs_A"]["basis"]))
        T.append(verdict(f"added p99 at {rate} RPS", arm, f["added_p99_ms_vs_A"]["median"],
                         TARGETS["added_p99_ms"], "ms", basis=f["added_p99_ms_vs_A"]["basis"]))
    pl = out.get("pipeline", {})
    if "pipeline" in pl and pl["pipeline"]["rps_ratio"]:
        r = pl["pipeline"]["rps_ratio"]
        T.append(verdict("full pipeline RPS ≥ 0.75x pure proxy's (Cf/Cv)", "Cf", r["median"], TARGETS["full_vs_pure_rps"],
                         "x of Cv", higher_is_better=True, basis=r["basis"]))
    if "audit" in pl:
        T.append(verdict("audit CPU per request at saturation (Ca - Cv)", "Ca", pl["audit"]["cpu_us_saturation"],
                         TARGETS["audit_cpu_us"], "µs"))
        T.append(verdict(f"audit CPU per request at {rate} RPS (Ca - Cv)", "Ca",
                         pl["audit"]["cpu_us_fixed_rate"], TARGETS["audit_cpu_us"], "µs"))
    if "Cu" in out["sse"]:
        s = out["sse"]["Cu"]["added_ttfe_p50_ms"]
        T.append(verdict("SSE first event added, p50", "Cu", s["median"], TARGETS["sse_added_p50_ms"], "ms",
                         basis=s["basis"]))
    if "Cu" in out["idle"]:
        T.append(verdict("memory per idle keep-alive connection", "C", out["idle"]["Cu"]["kib_per_conn"],
                         TARGETS["idle_kib_per_conn"], "KiB"))
    return T
