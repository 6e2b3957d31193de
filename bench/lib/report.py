#!/usr/bin/env python3
"""Summary and markdown for a benchmark result (bench/results/*.json).

Used by harness.py at the end of a run; also runnable on its own to
re-render a result: `python3 bench/lib/report.py bench/results/X.json`
prints the markdown (add `--write` to rewrite the .md beside it).

Every headline number is a median over rounds of a per-round comparison
(PERF.md §3). Rounds in which a run was noisy (other processes used more
than BENCH_NOISY_CORES during it) are left out when at least two clean
rounds remain; otherwise all rounds are used and the value is flagged.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


C_ARMS = ("Cu", "Cv", "Ca", "Cf")
# Arms compared with Tollgate arms besides A and B: Ca (audit) and Cf (full
# pipeline) against the pure verify proxy Cv, and Cf against Ca.
EXTRA_BASES = {"Ca": ("Cv",), "Cf": ("Cv", "Ca")}
# The pipeline's parts, as differences of arms: (name, arm, base, what).
PARTS = [
    ("audit", "Ca", "Cv", "audit trail (batch)"),
    ("auth_policy", "Cf", "Ca", "token + scope + Cedar"),
    ("pipeline", "Cf", "Cv", "full pipeline"),
]
TARGETS = {
    "rps_ratio_vs_nginx": 1.0,  # C ratio / B ratio, at least
    "added_p50_ms": 0.10,
    "added_p99_ms": 0.25,
    "sse_added_p50_ms": 0.10,
    "idle_kib_per_conn": 8.0,
    "audit_cpu_us": 3.0,  # PERF.md §4: audit ≤ 3 µs CPU per request
    "full_vs_pure_rps": 0.75,  # PERF.md §4: the full pipeline keeps ≥ 0.75x of pure-proxy RPS
}


def pct(values: list[float], p: float) -> float:
    """Percentile with linear interpolation (p in 0..100)."""
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def pick(per_round: list[dict]) -> dict:
    """Median of per-round values: clean rounds if at least two, else all."""
    valid = [x for x in per_round if x["value"] is not None]
    clean = [x for x in valid if not x["noisy"]]
    use, basis = (clean, "clean") if len(clean) >= 2 else (valid, "all")
    return {
        "median": round(statistics.median([x["value"] for x in use]), 4) if use else None,
        "basis": basis,
        "rounds_used": len(use),
        "per_round": [None if x["value"] is None else round(x["value"], 4) for x in per_round],
        "noisy_rounds": [x["round"] for x in per_round if x["noisy"]],
    }


def by_round(records: list[dict]) -> dict[int, dict[str, dict]]:
    out: dict[int, dict[str, dict]] = {}
    for rec in records:
        out.setdefault(rec["round"], {})[rec["arm"]] = rec
    return out


def serving_key(arm: str) -> str:
    return {"A": "stub", "B": "nginx", "Ca": "tollgate_audit", "Cf": "tollgate_full"}.get(arm, "tollgate")


TICK = 100  # USER_HZ, the unit of utime/stime in /proc (the run records its own)


def cpu_us(recs: list[dict], key: str) -> float | None:
    ticks = sum(r["cpu_ticks"][key] for r in recs)
    reqs = sum(r["requests"] for r in recs)
    return round(ticks / TICK * 1e6 / reqs, 2) if reqs else None


def bad(rec: dict) -> bool:
    if rec.get("errors") and isinstance(rec["errors"], int):
        return True
    if isinstance(rec.get("errors"), dict) and sum(rec["errors"].values()):
        return True
    status = rec.get("status")
    return bool(status) and any(k != "200" and v for k, v in status.items())


def summarize(doc: dict) -> dict:
    global TICK
    TICK = doc.get("host", {}).get("clk_tck", TICK)
    arms = list(doc["arms"])
    out: dict = {"throughput": {}, "fixed_rate": {}, "sse": {}, "idle": {}, "targets": []}

    # ---- throughput: ratio vs A per round
    tp = by_round(doc["throughput"])
    for arm in arms:
        recs = [tp[r][arm] for r in sorted(tp) if arm in tp[r]]
        entry = {
            "rps": pick([{"round": x["round"], "value": x["rps"], "noisy": x["noisy"]} for x in recs]),
            "cpu_us_per_req": cpu_us(recs, serving_key(arm)),
            "errors": sum(x["errors"] for x in recs),
        }
        if arm != "A":
            ratios = []
            for r in sorted(tp):
                a, x = tp[r].get("A"), tp[r].get(arm)
                if a and x:
                    ratios.append({"round": r, "value": x["rps"] / a["rps"], "noisy": a["noisy"] or x["noisy"]})
            entry["ratio_vs_A"] = pick(ratios)
            m = entry["ratio_vs_A"]["median"]
            entry["proxy_cost"] = round(1 / m - 1, 3) if m else None
            entry["stub_cpu_us_per_req"] = cpu_us(recs, "stub")
            for base in EXTRA_BASES.get(arm, ()):
                rows = []
                for r in sorted(tp):
                    b, x = tp[r].get(base), tp[r].get(arm)
                    if b and x:
                        rows.append({"round": r, "value": x["rps"] / b["rps"], "noisy": b["noisy"] or x["noisy"]})
                entry[f"ratio_vs_{base}"] = pick(rows)
        out["throughput"][arm] = entry

    # ---- fixed rate: added latency vs A (and vs B), CPU per request
    fr = by_round(doc["fixed_rate"])
    for arm in arms:
        recs = [fr[r][arm] for r in sorted(fr) if arm in fr[r]]
        entry = {
            "cpu_us_per_req": cpu_us(recs, serving_key(arm)),
            "errors": sum(1 for x in recs if bad(x)),
        }
        for q in ("p50_ms", "p90_ms", "p99_ms", "p999_ms"):
            entry[q] = pick([{"round": x["round"], "value": x[q], "noisy": x["noisy"]} for x in recs])
        if arm != "A":
            entry["stub_cpu_us_per_req"] = cpu_us(recs, "stub")
            for base in (("A", "B") + EXTRA_BASES.get(arm, ())) if arm in C_ARMS else ("A",):
                for q in ("p50_ms", "p90_ms", "p99_ms"):
                    rows = []
                    for r in sorted(fr):
                        b, x = fr[r].get(base), fr[r].get(arm)
                        if not (b and x):
                            continue
                        value = x[q] - b[q]
                        # PERF.md §3: a p99 counts only when A's own p99 that round is below 1 ms.
                        if q == "p99_ms" and fr[r]["A"]["p99_ms"] >= 1.0:
                            value = None
                        rows.append({"round": r, "value": value, "noisy": b["noisy"] or x["noisy"]})
                    entry[f"added_{q}_vs_{base}"] = pick(rows)
        out["fixed_rate"][arm] = entry

    # ---- the pipeline's parts: CPU and latency of one arm minus another
    for part, arm, base, what in PARTS:
        t, f = out["throughput"], out["fixed_rate"]
        if arm not in t or base not in t:
            continue

        def minus(a, b, digits=2):
            return round(a - b, digits) if a is not None and b is not None else None

        out.setdefault("pipeline", {})[part] = {
            "arm": arm,
            "base": base,
            "what": what,
            "cpu_us_saturation": minus(t[arm]["cpu_us_per_req"], t[base]["cpu_us_per_req"]),
            "cpu_us_fixed_rate": minus(f[arm]["cpu_us_per_req"], f[base]["cpu_us_per_req"]),
            "rps_ratio": t[arm].get(f"ratio_vs_{base}"),
            **{f"added_{q}": f[arm].get(f"added_{q}_vs_{base}") for q in ("p50_ms", "p90_ms", "p99_ms")},
        }

    # ---- audit trails: records written for the requests sent
    for rec in doc.get("audit", []):
        out.setdefault("audit", {})[rec["arm"]] = rec

    # ---- SSE time to first event
    ss = by_round(doc["sse"])
    sse_arms = sorted({x["arm"] for x in doc["sse"]}, key=lambda a: "A B Cu Cv".split().index(a))
    for arm in sse_arms:
        recs = [ss[r][arm] for r in sorted(ss) if arm in ss[r]]
        entry = {
            "ttfe_p50_ms": pick([{"round": x["round"], "value": x["ttfe_p50_ms"], "noisy": x["noisy"]} for x in recs]),
            "ttfe_p99_ms": pick([{"round": x["round"], "value": x["ttfe_p99_ms"], "noisy": x["noisy"]} for x in recs]),
            "gap_p50_ms": pick([{"round": x["round"], "value": x["gap_p50_ms"], "noisy": x["noisy"]} for x in recs]),
            "batched": sum(x["batched"] for x in recs),
            "samples": sum(x["samples"] for x in recs),
        }
        if arm != "A":
            for q in ("ttfe_p50_ms", "ttfe_p99_ms", "gap_p50_ms"):
                rows = []
                for r in sorted(ss):
                    a, x = ss[r].get("A"), ss[r].get(arm)
                    if a and x:
                        rows.append({"round": r, "value": x[q] - a[q], "noisy": a["noisy"] or x["noisy"]})
                entry[f"added_{q}"] = pick(rows)
        out["sse"][arm] = entry

    # ---- idle memory
    for rec in doc["idle"]:
        out["idle"][rec["arm"]] = {
            "kib_per_conn": round(rec["bytes_per_conn"] / 1024, 2),
            "conns": rec["conns"],
            "kernel_tcp_kib_per_conn_both_ends": round(rec["kernel_tcp_mem_delta_kib"] / rec["conns"], 2),
        }

    # ---- targets
    T = out["targets"]

    def target(name, arm, value, limit, unit, higher_is_better=False, basis=None):
        if value is None:
            ok, miss = None, None
        elif higher_is_better:
            ok, miss = value >= limit, round(limit - value, 4) if value < limit else 0
        else:
            ok, miss = value <= limit, round(value - limit, 4) if value > limit else 0
        T.append({"target": name, "arm": arm, "value": value, "limit": limit, "unit": unit,
                  "pass": ok, "miss_by": miss, "basis": basis})

    b_ratio = out["throughput"].get("B", {}).get("ratio_vs_A", {}).get("median")
    for arm in C_ARMS:
        if arm not in out["throughput"]:
            continue
        c = out["throughput"][arm]["ratio_vs_A"]
        rel = round(c["median"] / b_ratio, 3) if c["median"] and b_ratio else None
        target("RPS ratio vs direct ≥ nginx's (C/B)", arm, rel, TARGETS["rps_ratio_vs_nginx"], "x of nginx",
               higher_is_better=True, basis=c["basis"])
    for arm in C_ARMS:
        if arm not in out["fixed_rate"]:
            continue
        f = out["fixed_rate"][arm]
        target(f"added p50 at {doc['settings']['rate']} RPS", arm, f["added_p50_ms_vs_A"]["median"],
               TARGETS["added_p50_ms"], "ms", basis=f["added_p50_ms_vs_A"]["basis"])
        target(f"added p99 at {doc['settings']['rate']} RPS", arm, f["added_p99_ms_vs_A"]["median"],
               TARGETS["added_p99_ms"], "ms", basis=f["added_p99_ms_vs_A"]["basis"])
    pl = out.get("pipeline", {})
    if "pipeline" in pl and pl["pipeline"]["rps_ratio"]:
        r = pl["pipeline"]["rps_ratio"]
        target("full pipeline RPS ≥ 0.75x pure proxy's (Cf/Cv)", "Cf", r["median"], TARGETS["full_vs_pure_rps"],
               "x of Cv", higher_is_better=True, basis=r["basis"])
    if "audit" in pl:
        target("audit CPU per request at saturation (Ca - Cv)", "Ca", pl["audit"]["cpu_us_saturation"],
               TARGETS["audit_cpu_us"], "µs")
        target(f"audit CPU per request at {doc['settings']['rate']} RPS (Ca - Cv)", "Ca",
               pl["audit"]["cpu_us_fixed_rate"], TARGETS["audit_cpu_us"], "µs")
    if "Cu" in out["sse"]:
        s = out["sse"]["Cu"]["added_ttfe_p50_ms"]
        target("SSE first event added, p50", "Cu", s["median"], TARGETS["sse_added_p50_ms"], "ms", basis=s["basis"])
    for arm in ("Cu",):
        if arm in out["idle"]:
            target("memory per idle keep-alive connection", "C", out["idle"][arm]["kib_per_conn"],
                   TARGETS["idle_kib_per_conn"], "KiB")

    runs = doc["throughput"] + doc["fixed_rate"] + doc["sse"]
    out["noise"] = {
        "runs": len(runs),
        "noisy_runs": sum(1 for x in runs if x["noisy"]),
        "others_cores_max": max((x["others_cores"] for x in runs), default=0),
        "others_cores_median": round(statistics.median([x["others_cores"] for x in runs]), 3) if runs else 0,
        "steal_cores_median": round(statistics.median([x["steal_cores"] for x in runs]), 3) if runs else 0,
        "steal_cores_max": max((x["steal_cores"] for x in runs), default=0),
        "loadavg_max": max((max(x["loadavg"]) for x in runs), default=0),
    }
    return out


# --------------------------------------------------------------------------
# Markdown


def f(v, digits=3, unit=""):
    if v is None:
        return "n/a"
    return f"{v:.{digits}f}{unit}"


def flag(entry: dict) -> str:
    return "" if entry.get("basis") in (None, "clean") else " †"


def markdown(doc: dict) -> str:
    s = doc["summary"]
    st = doc["settings"]
    g = doc["git"]
    arms = doc["arms"]
    rate = st["rate"]
    L = []
    L.append(f"# Tollgate benchmark: {doc['started'][:10]}, {g['short']}{' (dirty tree)' if g['dirty'] else ''}")
    L.append("")
    mode = "quick" if st["quick"] else "full"
    L.append(
        f"{mode} run: {st['rounds']} rounds x {st['seconds']:g} s per arm ({st['warmup_seconds']:g} s wrk warmup), arms interleaved; "
        f"throughput at c={st['conns']} (wrk -t1), latency at a fixed {rate} RPS over {st['rate_conns']} connections "
        f"(oha --latency-correction); {st['body_bytes']} B JSON-RPC `tools/call` body. Server side on core {st['server_cpu']}, "
        f"load generator on core {st['client_cpu']}. {doc['host']['cpus']} x {doc['host']['cpu_model']}, Linux {doc['host']['kernel']}; "
        f"{doc['tools']['wrk'].split(' [')[0]}, {doc['tools']['oha']}, {doc['tools']['nginx'].replace('nginx version: ', '')}."
    )
    n = s["noise"]
    L.append("")
    L.append(
        f"Noise: {n['noisy_runs']} of {n['runs']} runs noisy (other processes above {st['noisy_cores']:g} core, "
        f"or hypervisor steal above {st.get('noisy_steal', 0.5):g} core); "
        f"others median {n['others_cores_median']:.2f}, max {n['others_cores_max']:.2f} cores; "
        f"steal median {n.get('steal_cores_median', 0):.2f}, max {n.get('steal_cores_max', 0):.2f} cores; loadavg max {n['loadavg_max']:.2f}. "
        "Medians use clean rounds when at least two exist; † marks a median that had fewer than two clean rounds "
        "(computed over all qualifying rounds: treat as rough)."
    )
    L.append("")
    L.append("Arms: " + "; ".join(f"**{k}** {v}" for k, v in arms.items()) + ".")
    L.append("")

    L.append("## Targets")
    L.append("")
    L.append("| Target | Arm | Measured | Limit | Result |")
    L.append("|---|---|---|---|---|")
    for t in s["targets"]:
        cmp_ = "≥" if "≥" in t["target"] else "≤"
        res = "n/a" if t["pass"] is None else ("PASS" if t["pass"] else f"FAIL (by {t['miss_by']:g} {t['unit']})")
        L.append(f"| {t['target']} | {t['arm']} | {f(t['value'], 3)} {t['unit']}{'' if t['basis'] in (None, 'clean') else ' †'} "
                 f"| {cmp_} {t['limit']:g} | {res} |")
    L.append("")

    L.append(f"## Throughput, c={st['conns']} keep-alive (wrk, closed loop)")
    L.append("")
    L.append("| Arm | RPS (median) | RPS / direct (median of rounds) | proxy cost (A/arm - 1) | per-round ratios | CPU µs/req, arm process | CPU µs/req, stub |")
    L.append("|---|---|---|---|---|---|---|")
    for arm, e in s["throughput"].items():
        if arm == "A":
            L.append(f"| A | {f(e['rps']['median'], 0)}{flag(e['rps'])} | 1 | 0 | | {f(e['cpu_us_per_req'], 1)} (stub) | |")
            continue
        r = e["ratio_vs_A"]
        per = ", ".join("–" if v is None else f"{v:.2f}" + ("*" if i + 1 in r["noisy_rounds"] else "") for i, v in enumerate(r["per_round"]))
        L.append(f"| {arm} | {f(e['rps']['median'], 0)}{flag(e['rps'])} | {f(r['median'], 3)}{flag(r)} | {f(e['proxy_cost'], 2)} "
                 f"| {per} | {f(e['cpu_us_per_req'], 1)} | {f(e['stub_cpu_us_per_req'], 1)} |")
    L.append("")
    L.append("\\* noisy round. CPU per request at saturation = the process's utime+stime over all rounds / requests served.")
    a_client = [x.get("client_cores") for x in doc["throughput"] if x["arm"] == "A" and x.get("client_cores") is not None]
    if a_client:
        c = statistics.median(a_client)
        note = (" The load generator was saturated in A, so A's RPS is a floor and every ratio vs A is slightly "
                "optimistic; B and C compare with each other unaffected." if c > 0.9 else "")
        L.append(f"Load generator CPU during A: median {c:.2f} cores.{note}")
    L.append("")

    L.append(f"## Latency at a fixed {rate} RPS (oha, corrected for coordinated omission)")
    L.append("")
    L.append("| Arm | p50 ms | p90 ms | p99 ms | p99.9 ms | added p50 vs A | added p90 vs A | added p99 vs A | added p50 vs B | CPU µs/req |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for arm, e in s["fixed_rate"].items():
        cells = [f"{f(e[q]['median'])}{flag(e[q])}" for q in ("p50_ms", "p90_ms", "p99_ms", "p999_ms")]
        if arm == "A":
            added = ["", "", "", ""]
        else:
            added = [f"{f(e[f'added_{q}_vs_A']['median'])}{flag(e[f'added_{q}_vs_A'])}" for q in ("p50_ms", "p90_ms", "p99_ms")]
            vb = e.get("added_p50_ms_vs_B")
            added.append(f"{f(vb['median'])}{flag(vb)}" if vb else "")
        cpu = f(e["cpu_us_per_req"], 1) + (" (stub)" if arm == "A" else "")
        L.append(f"| {arm} | " + " | ".join(cells + added) + f" | {cpu} |")
    L.append("")
    L.append("Added = arm minus A in the same round, median over rounds. A p99 counts only in rounds where A's own p99 is "
             "below 1 ms (otherwise it measures the other tenant); n/a means no round qualified. "
             "CPU µs/req: utime+stime of the arm's own process (nginx worker or Tollgate; A: the stub) over all rounds / requests.")
    L.append("")

    if s.get("pipeline"):
        L.append("## Full pipeline: what each part adds")
        L.append("")
        pipe = doc.get("pipeline", {})
        if pipe:
            L.append(f"Cf calls route `{pipe.get('route')}` with a bearer token from the development issuer "
                     f"(ES256, {pipe.get('token', {}).get('bytes', '?')} B, one token for the whole run, so every request "
                     f"after the first is a token-cache hit), needs scope `mcp:tools`, is decided against "
                     f"{pipe.get('policies', '?')} Cedar policies (decision cache on, the default; policy tests: "
                     f"{pipe.get('test', '?')}) and writes one audit record (batch durability). Ca has only the audit trail.")
            L.append("")
        L.append(f"| Part | arms | CPU µs/req at saturation | CPU µs/req at {rate} RPS | RPS ratio (median of rounds) "
                 f"| added p50 ms at {rate} RPS | added p90 ms | added p99 ms |")
        L.append("|---|---|---|---|---|---|---|---|")
        for part, e in s["pipeline"].items():
            rr = e["rps_ratio"]
            cells = [f"{f(e[f'added_{q}']['median'])}{flag(e[f'added_{q}'])}" if e.get(f"added_{q}") else "n/a"
                     for q in ("p50_ms", "p90_ms", "p99_ms")]
            L.append(f"| {e['what']} | {e['arm']} − {e['base']} | {f(e['cpu_us_saturation'], 1)} | {f(e['cpu_us_fixed_rate'], 1)} "
                     f"| {f(rr['median'], 3) + flag(rr) if rr else 'n/a'} | " + " | ".join(cells) + " |")
        L.append("")
        L.append("Each latency cell is the median over rounds of (arm − base) in the same round; a p99 counts only in rounds "
                 "where A's own p99 is below 1 ms. CPU: the difference of the two processes' CPU µs/req over all rounds.")
        L.append("")
    if s.get("audit"):
        L.append("## Audit trails")
        L.append("")
        L.append("| Arm | requests sent | call records | records / request | outcomes | dropped (gap lines) | bytes / record "
                 "| writer thread CPU µs / record | writer wakeups / record | files | `audit verify --sealed` |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for arm, a in s["audit"].items():
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(a["outcomes"].items())) or "none"
            L.append(f"| {arm} | {a['requests_sent']} | {a['call_records']} | {f(a['records_per_request'], 4)} | {outcomes} "
                     f"| {a['dropped']} | {f(a['bytes_per_record'], 0)} | {f(a.get('writer_cpu_us_per_record'), 1)} "
                     f"| {f(a.get('writer_wakeups_per_record'), 2)} | {a['files']} | {'ok' if a['verify_ok'] else 'FAILED'} |")
        L.append("")
        L.append("Requests sent = the sanity check, wrk warmups and measured runs (responses counted by wrk) and oha runs. "
                 "wrk does not count requests still in flight when it stops, so records can exceed it by up to "
                 f"{st['conns']} per wrk run. Writer thread: CPU of the `tollgate-audit` thread over the whole run / call records; "
                 "wakeups = its voluntary context switches / call records (about 1: the writer wakes, writes and sleeps again "
                 "for every record, no batching).")
        L.append("")

    if s["sse"]:
        L.append(f"## SSE: time to first event ({st['sse_events']} events, {st['sse_gap_ms']:g} ms apart, Python asyncio upstream)")
        L.append("")
        L.append("| Arm | first event p50 ms | p99 ms | added p50 | added p99 | event 1→2 gap p50 ms | added gap | batched events |")
        L.append("|---|---|---|---|---|---|---|---|")
        for arm, e in s["sse"].items():
            if arm == "A":
                extra = ["", "", f(e["gap_p50_ms"]["median"]), ""]
            else:
                extra = [f"{f(e['added_ttfe_p50_ms']['median'])}{flag(e['added_ttfe_p50_ms'])}",
                         f"{f(e['added_ttfe_p99_ms']['median'])}{flag(e['added_ttfe_p99_ms'])}",
                         f(e["gap_p50_ms"]["median"]),
                         f"{f(e['added_gap_p50_ms']['median'])}{flag(e['added_gap_p50_ms'])}"]
            L.append(f"| {arm} | {f(e['ttfe_p50_ms']['median'])}{flag(e['ttfe_p50_ms'])} | {f(e['ttfe_p99_ms']['median'])} | "
                     + " | ".join(extra) + f" | {e['batched']} of {e['samples']} |")
        L.append("")
        L.append("First event = client send to the first `data:` line read, on one kept-alive connection per arm; "
                 f"the arms take turns in blocks of {st.get('sse_block', 20)} requests within each round. "
                 "\"batched\" counts responses whose first two events arrived in one read (a sign of buffering; should be 0).")
        L.append("")

    L.append("## Memory per idle keep-alive connection")
    L.append("")
    L.append("| Arm | connections | RSS KiB per connection | kernel TCP memory KiB per connection (both ends) |")
    L.append("|---|---|---|---|")
    for rec in doc["idle"]:
        e = s["idle"][rec["arm"]]
        name = "C (Tollgate)" if rec["arm"] == "Cu" else rec["arm"]
        L.append(f"| {name} | {rec['conns']} | {e['kib_per_conn']:.2f} ({rec['rss_before_kib']} → {rec['rss_idle_kib']} KiB) "
                 f"| {e['kernel_tcp_kib_per_conn_both_ends']:.2f} |")
    L.append("")
    L.append("Each connection made one request and stays open; RSS of the serving process (nginx worker or Tollgate), "
             "measured on fresh processes before the load rounds.")
    L.append("")
    base = doc.get("baseline_rss_kib", {})
    if base:
        after = doc.get("rss_after_rounds_kib", {})
        L.append("Idle RSS at start: " + ", ".join(f"{k} {v} KiB" for k, v in base.items())
                 + ("; after the load rounds: " + ", ".join(f"{k} {v['VmRSS']} KiB (peak {v['VmHWM']})" for k, v in after.items()) if after else "")
                 + ".")
        L.append("")
    L.append(f"Raw data: `{doc.get('files', {}).get('json', '(this run)')}`. Method: bench/README.md and PERF.md §3.")
    return "\n".join(L) + "\n"


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    path = Path(sys.argv[1])
    doc = json.loads(path.read_text())
    doc["summary"] = summarize(doc)
    md = markdown(doc)
    if "--write" in sys.argv:
        path.write_text(json.dumps(doc, indent=1) + "\n")
        path.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
