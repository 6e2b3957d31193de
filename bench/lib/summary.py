"""The summary of a result's measurements: medians over rounds.

Owns the statistics (`pct`, `pick`: the median of per-round values over
clean rounds), which arm each arm is compared with (`direct_of`,
`nginx_of`: the `tools/list` arms Bl and Cl with Al and Bl, the small-body
arms Bs, Cvs and Cfs with As and Bs, Vl with none, every other arm with A
and B) and `summarize_runs`, which turns the raw runs of a result into
per-arm throughput, latency, SSE and idle-memory summaries, the pipeline's
parts (one arm minus another), `tools/list` against `tools/call`, the two
body sizes, the virtual servers and the noise of the run. The
verdicts against the targets are in targets.py; report.py puts both
together.

Every headline number is a median over rounds of a per-round comparison
(PERF.md §3). Rounds in which a run was noisy are left out when at least
two clean rounds remain; otherwise all rounds are used and the value is
flagged.
"""

from __future__ import annotations

import statistics

C_ARMS = ("Cu", "Cv", "Ca", "Cf")
# The tools/list arms: direct, nginx, Tollgate (route without policies).
LIST_ARMS = ("Al", "Bl", "Cl")
# The small-body twins of A, B, Cv and Cf (a 200 B `tools/call`): direct,
# nginx, Tollgate verify, Tollgate full pipeline. Throughput only.
SMALL_ARMS = ("As", "Bs", "Cvs", "Cfs")
# Arms the gateway answers itself: no direct or nginx arm does the same
# (a virtual server's tools/list comes from its catalog).
OWN_ANSWER_ARMS = ("Vl",)
# Every Tollgate arm with an upstream answer, compared with its direct arm
# and its nginx arm.
GATEWAY_ARMS = C_ARMS + ("Cl", "Cm", "Vc", "Cr", "Cvs", "Cfs")
# Arms compared with besides the direct and nginx arms: Ca (audit) and Cf
# (full pipeline) against the pure verify proxy Cv, and Cf against Ca; the
# direct tools/list against the direct tools/call (how much heavier the
# list answer is for the stub), Cl against Cv (the same process).
# A call through a virtual server (Vc) against the same call on its
# member's own route (Cm). A call counted by a rate limit in Redis (Cr)
# against the same call without limits (Cv). The small-body full pipeline
# (Cfs) against the small-body verify proxy (Cvs).
EXTRA_BASES = {"Ca": ("Cv",), "Cf": ("Cv", "Ca"), "Al": ("A",), "Cl": ("Cv",), "Vc": ("Cm",),
               "Cr": ("Cv",), "Cfs": ("Cvs",)}
# The pipeline's parts, as differences of arms: (name, arm, base, what).
PARTS = [
    ("audit", "Ca", "Cv", "audit trail (batch)"),
    ("auth_policy", "Cf", "Ca", "token + scope + Cedar"),
    ("pipeline", "Cf", "Cv", "full pipeline"),
]
TICK = 100  # USER_HZ, the unit of utime/stime in /proc (the run records its own)


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
    return {"A": "stub", "B": "nginx", "Ca": "tollgate_audit", "Cf": "tollgate_full",
            "Al": "stub", "Bl": "nginx", "Cm": "tollgate_virtual", "Vc": "tollgate_virtual",
            "Vl": "tollgate_virtual", "Cr": "tollgate_redis",
            "As": "stub", "Bs": "nginx", "Cfs": "tollgate_full"}.get(arm, "tollgate")


def direct_of(arm: str) -> str | None:
    """The direct arm of the same request: Al for tools/list arms, As for
    the small-body arms, none for the arms the gateway answers itself, else
    A."""
    if arm in OWN_ANSWER_ARMS:
        return None
    return "Al" if arm in LIST_ARMS else "As" if arm in SMALL_ARMS else "A"


def nginx_of(arm: str) -> str:
    """The nginx arm of the same request: Bl for tools/list arms, Bs for
    the small-body arms, else B."""
    return "Bl" if arm in LIST_ARMS else "Bs" if arm in SMALL_ARMS else "B"


def is_direct(arm: str) -> bool:
    return arm == direct_of(arm)


def has_direct(arm: str) -> bool:
    """Whether the arm is compared with a direct arm (it is not one)."""
    return direct_of(arm) not in (None, arm)


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


def minus(a, b, digits=2):
    return round(a - b, digits) if a is not None and b is not None else None


def series(recs: list[dict], key: str) -> list[dict]:
    """One arm's value of `key` per round, for pick()."""
    return [{"round": x["round"], "value": x[key], "noisy": x["noisy"]} for x in recs]


def ratio_rows(rounds: dict, arm: str, base: str) -> list[dict]:
    """arm's RPS / base's RPS, per round in which both ran."""
    rows = []
    for r in sorted(rounds):
        b, x = rounds[r].get(base), rounds[r].get(arm)
        if b and x:
            rows.append({"round": r, "value": x["rps"] / b["rps"], "noisy": b["noisy"] or x["noisy"]})
    return rows


def relative_rows(rounds: dict, num: tuple[str, str], den: tuple[str, str]) -> list[dict]:
    """(RPS num[0] / num[1]) / (RPS den[0] / den[1]), per round in which all
    four ran: one ratio against another, both from the same round."""
    rows = []
    for r in sorted(rounds):
        recs = [rounds[r].get(a) for a in (*num, *den)]
        if all(recs):
            a, b, c, d = recs
            rows.append({"round": r, "value": (a["rps"] / b["rps"]) / (c["rps"] / d["rps"]),
                         "noisy": any(x["noisy"] for x in recs)})
    return rows


def added_rows(rounds: dict, arm: str, base: str, q: str) -> list[dict]:
    """arm's `q` minus base's, per round in which both ran. PERF.md §3: a
    fixed-rate p99 (`p99_ms`) counts only when the direct arm's own p99 (A,
    or Al for the tools/list arms) that round is below 1 ms."""
    rows = []
    direct = direct_of(arm)
    for r in sorted(rounds):
        b, x = rounds[r].get(base), rounds[r].get(arm)
        if not (b and x):
            continue
        value = x[q] - b[q]
        floor = rounds[r].get(direct) or rounds[r].get("A")
        if q == "p99_ms" and floor and floor["p99_ms"] >= 1.0:
            value = None
        rows.append({"round": r, "value": value, "noisy": b["noisy"] or x["noisy"]})
    return rows


def throughput_entry(tp: dict, arm: str) -> dict:
    """Throughput of one arm: RPS, ratio vs its direct arm (A or Al; for
    Tollgate arms also vs its nginx arm, B or Bl, and vs EXTRA_BASES), CPU
    per request."""
    recs = [tp[r][arm] for r in sorted(tp) if arm in tp[r]]
    entry = {
        "rps": pick(series(recs, "rps")),
        "cpu_us_per_req": cpu_us(recs, serving_key(arm)),
        "errors": sum(x["errors"] for x in recs),
    }
    bases = list(EXTRA_BASES.get(arm, ()))
    if has_direct(arm):
        direct = direct_of(arm)
        entry["direct"] = direct
        entry[f"ratio_vs_{direct}"] = pick(ratio_rows(tp, arm, direct))
        m = entry[f"ratio_vs_{direct}"]["median"]
        entry["proxy_cost"] = round(1 / m - 1, 3) if m else None
        entry["stub_cpu_us_per_req"] = cpu_us(recs, "stub")
        if arm in GATEWAY_ARMS:
            bases.insert(0, nginx_of(arm))
    for base in bases:
        entry[f"ratio_vs_{base}"] = pick(ratio_rows(tp, arm, base))
    return entry


def fixed_rate_entry(fr: dict, arm: str) -> dict:
    """Fixed-rate latency of one arm: percentiles, added latency vs its
    direct arm (and vs its nginx arm and EXTRA_BASES for Tollgate arms),
    CPU per request."""
    recs = [fr[r][arm] for r in sorted(fr) if arm in fr[r]]
    entry = {
        "cpu_us_per_req": cpu_us(recs, serving_key(arm)),
        "errors": sum(1 for x in recs if bad(x)),
    }
    for q in ("p50_ms", "p90_ms", "p99_ms", "p999_ms"):
        entry[q] = pick(series(recs, q))
    if has_direct(arm):
        entry["stub_cpu_us_per_req"] = cpu_us(recs, "stub")
        direct = direct_of(arm)
        entry["direct"] = direct
        bases = (direct, nginx_of(arm)) + EXTRA_BASES.get(arm, ()) if arm in GATEWAY_ARMS else (direct,)
        for base in bases:
            for q in ("p50_ms", "p90_ms", "p99_ms"):
                entry[f"added_{q}_vs_{base}"] = pick(added_rows(fr, arm, base, q))
    return entry


def pipeline_parts(out: dict) -> dict:
    """The pipeline's parts: CPU and latency of one arm minus another."""
    t, f = out["throughput"], out["fixed_rate"]
    parts = {}
    for part, arm, base, what in PARTS:
        if arm not in t or base not in t:
            continue
        parts[part] = {
            "arm": arm,
            "base": base,
            "what": what,
            "cpu_us_saturation": minus(t[arm]["cpu_us_per_req"], t[base]["cpu_us_per_req"]),
            "cpu_us_fixed_rate": minus(f[arm]["cpu_us_per_req"], f[base]["cpu_us_per_req"]),
            "rps_ratio": t[arm].get(f"ratio_vs_{base}"),
            **{f"added_{q}": f[arm].get(f"added_{q}_vs_{base}") for q in ("p50_ms", "p90_ms", "p99_ms")},
        }
    return parts


def list_vs_call(out: dict, tp: dict) -> dict | None:
    """tools/list against tools/call: each one's RPS ratio through Tollgate
    (Cl / Al, Cv / A) and through nginx (Bl / Al, B / A), and the ratio of
    the two ratios, per round. A list answer that costs the gateway no more
    than a call's scores 1.0."""
    t = out["throughput"]
    if not all(a in t for a in ("A", "Al", "Cv", "Cl")):
        return None
    res = {
        "tollgate": {"list": t["Cl"]["ratio_vs_Al"], "call": t["Cv"]["ratio_vs_A"],
                     "relative": pick(relative_rows(tp, ("Cl", "Al"), ("Cv", "A"))),
                     "cpu_us_list": t["Cl"]["cpu_us_per_req"], "cpu_us_call": t["Cv"]["cpu_us_per_req"]},
        "stub_list_vs_call": t["Al"].get("ratio_vs_A"),
        "stub_cpu_us_list": t["Al"]["cpu_us_per_req"], "stub_cpu_us_call": t["A"]["cpu_us_per_req"],
    }
    if "Bl" in t and "B" in t:
        res["nginx"] = {"list": t["Bl"]["ratio_vs_Al"], "call": t["B"]["ratio_vs_A"],
                        "relative": pick(relative_rows(tp, ("Bl", "Al"), ("B", "A"))),
                        "cpu_us_list": t["Bl"]["cpu_us_per_req"], "cpu_us_call": t["B"]["cpu_us_per_req"]}
    return res


def virtual_servers(out: dict) -> dict | None:
    """A call through a virtual server against the same call on its
    member's route (Vc − Cm: CPU per request, RPS ratio, added latency),
    and a virtual server's own tools/list (Vl: latency, RPS, CPU)."""
    t, f = out["throughput"], out["fixed_rate"]
    res: dict = {}
    if "Vc" in t and "Cm" in t:
        res["call"] = {
            "cpu_us": {arm: {"saturation": t[arm]["cpu_us_per_req"], "fixed_rate": f[arm]["cpu_us_per_req"]}
                       for arm in ("Cm", "Vc", "Cv") if arm in t},
            "cpu_us_saturation": minus(t["Vc"]["cpu_us_per_req"], t["Cm"]["cpu_us_per_req"]),
            "cpu_us_fixed_rate": minus(f["Vc"]["cpu_us_per_req"], f["Cm"]["cpu_us_per_req"]),
            "rps_ratio": t["Vc"].get("ratio_vs_Cm"),
            **{f"added_{q}": f["Vc"].get(f"added_{q}_vs_Cm") for q in ("p50_ms", "p90_ms", "p99_ms")},
        }
    if "Vl" in t:
        res["list"] = {
            "rps": t["Vl"]["rps"],
            "cpu_us_saturation": t["Vl"]["cpu_us_per_req"],
            "cpu_us_fixed_rate": f["Vl"]["cpu_us_per_req"],
            **{q: f["Vl"][q] for q in ("p50_ms", "p90_ms", "p99_ms")},
        }
    return res or None


def body_sizes(out: dict, doc: dict) -> dict | None:
    """Each arm that has a small-body twin, at both body sizes: RPS, RPS /
    direct, RPS / nginx (the targets' ratio), CPU per request at
    saturation; and nginx's own RPS / direct at both sizes."""
    t = out["throughput"]
    twins = doc.get("arm_twins") or {}
    sizes = doc.get("arm_body_bytes") or {}
    rows = {}
    for small, large in twins.items():
        if small not in t or large not in t:
            continue
        row = {}
        for size_key, arm in (("large", large), ("small", small)):
            e = t[arm]
            direct = direct_of(arm)
            row[size_key] = {
                "arm": arm,
                "body_bytes": sizes.get(arm),
                "rps": e["rps"],
                "ratio_vs_direct": e.get(f"ratio_vs_{direct}") if direct != arm else None,
                "ratio_vs_nginx": e.get(f"ratio_vs_{nginx_of(arm)}") if arm in GATEWAY_ARMS else None,
                "cpu_us_per_req": e["cpu_us_per_req"],
            }
        rows[large] = row
    return rows or None


def redis_limits(out: dict) -> dict | None:
    """A call under a rate limit counted in Redis against the same call
    without limits (Cr − Cv: added latency at the fixed rate, RPS ratio,
    CPU per request of the gateway process)."""
    t, f = out["throughput"], out["fixed_rate"]
    if "Cr" not in t or "Cv" not in t:
        return None
    return {
        "cpu_us": {arm: {"saturation": t[arm]["cpu_us_per_req"], "fixed_rate": f[arm]["cpu_us_per_req"]}
                   for arm in ("Cv", "Cr")},
        "cpu_us_saturation": minus(t["Cr"]["cpu_us_per_req"], t["Cv"]["cpu_us_per_req"]),
        "cpu_us_fixed_rate": minus(f["Cr"]["cpu_us_per_req"], f["Cv"]["cpu_us_per_req"]),
        "rps_ratio": t["Cr"].get("ratio_vs_Cv"),
        **{f"added_{q}": f["Cr"].get(f"added_{q}_vs_Cv") for q in ("p50_ms", "p90_ms", "p99_ms")},
    }


def sse_entry(ss: dict, arm: str) -> dict:
    """SSE time to first event of one arm, and what it adds to A's."""
    recs = [ss[r][arm] for r in sorted(ss) if arm in ss[r]]
    entry = {
        "ttfe_p50_ms": pick(series(recs, "ttfe_p50_ms")),
        "ttfe_p99_ms": pick(series(recs, "ttfe_p99_ms")),
        "gap_p50_ms": pick(series(recs, "gap_p50_ms")),
        "batched": sum(x["batched"] for x in recs),
        "samples": sum(x["samples"] for x in recs),
    }
    if arm != "A":
        for q in ("ttfe_p50_ms", "ttfe_p99_ms", "gap_p50_ms"):
            entry[f"added_{q}"] = pick(added_rows(ss, arm, "A", q))
    return entry


def noise(doc: dict) -> dict:
    runs = doc["throughput"] + doc["fixed_rate"] + doc["sse"]
    return {
        "runs": len(runs),
        "noisy_runs": sum(1 for x in runs if x["noisy"]),
        "others_cores_max": max((x["others_cores"] for x in runs), default=0),
        "others_cores_median": round(statistics.median([x["others_cores"] for x in runs]), 3) if runs else 0,
        "steal_cores_median": round(statistics.median([x["steal_cores"] for x in runs]), 3) if runs else 0,
        "steal_cores_max": max((x["steal_cores"] for x in runs), default=0),
        "loadavg_max": max((max(x["loadavg"]) for x in runs), default=0),
    }


def summarize_runs(doc: dict) -> dict:
    """Everything in a result's summary except the target verdicts: the
    "targets" list is left empty for targets.judge."""
    global TICK
    TICK = doc.get("host", {}).get("clk_tck", TICK)
    arms = list(doc["arms"])
    out: dict = {"throughput": {}, "fixed_rate": {}, "sse": {}, "idle": {}, "targets": []}
    tp = by_round(doc["throughput"])
    for arm in arms:
        out["throughput"][arm] = throughput_entry(tp, arm)
    fr = by_round(doc["fixed_rate"])
    for arm in arms:
        # The small-body twins have no fixed-rate runs.
        if any(arm in rnd for rnd in fr.values()):
            out["fixed_rate"][arm] = fixed_rate_entry(fr, arm)
    parts = pipeline_parts(out)
    if parts:
        out["pipeline"] = parts
    sizes = body_sizes(out, doc)
    if sizes:
        out["body_sizes"] = sizes
    lists = list_vs_call(out, tp)
    if lists:
        out["list_vs_call"] = lists
    virtual = virtual_servers(out)
    if virtual:
        out["virtual"] = virtual
    redis = redis_limits(out)
    if redis:
        out["redis_limits"] = redis
    # Audit trails: records written for the requests sent.
    for rec in doc.get("audit", []):
        out.setdefault("audit", {})[rec["arm"]] = rec
    ss = by_round(doc["sse"])
    sse_arms = sorted({x["arm"] for x in doc["sse"]}, key=lambda a: "A B Cu Cv".split().index(a))
    for arm in sse_arms:
        out["sse"][arm] = sse_entry(ss, arm)
    for rec in doc["idle"]:
        out["idle"][rec["arm"]] = {
            "kib_per_conn": round(rec["bytes_per_conn"] / 1024, 2),
            "conns": rec["conns"],
            "kernel_tcp_kib_per_conn_both_ends": round(rec["kernel_tcp_mem_delta_kib"] / rec["conns"], 2),
        }
    out["noise"] = noise(doc)
    return out
