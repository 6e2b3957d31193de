"""The targets of the hot-path issues and PERF.md, and a run's verdicts.

Owns `TARGETS` (the limits) and `judge`, which reads a summary made by
summary.summarize_runs and returns the list of verdicts that goes into the
result's summary["targets"]: value, limit, pass, how far it missed, the
aim where the issue gives one beyond the limit, and whether its median had
at least two clean rounds.

Where they come from: the first hot-path issue set the RPS ratios against
nginx's (per arm), CPU per request at saturation, added latency at the
fixed rate, the SSE first event, idle memory per connection and
`tools/list` against `tools/call`; PERF.md §4 adds the pipeline's two
(audit CPU, full pipeline against pure proxy); the virtual-server issue
sets the CPU a call through a virtual server adds and the latency of a
virtual server's `tools/list`. The one-pipeline issue (its speed scope)
sets the ratios per body size (verify ≥ 0.85x nginx's on the 1 KiB call
and ≥ 0.75x on the 200 B one, the full pipeline ≥ 0.7x), CPU per request
≤ 15 µs pure and ≤ 21 µs full, a virtual-server call ≤ 2 µs CPU above its
member route, and added p99 ≤ 0.25 ms at 1000 RPS on every arm with audit
(Ca, Cf: the every-C-arm latency target already covers them). A later
target replaces an earlier one where both set a limit on the same figure;
an earlier, higher ratio stays as the aim printed beside the verdict (Cv
0.95, Cf 0.8). Replaced before: every Tollgate arm at ≥ 1.0 x nginx's
ratio; ≤ 33 µs CPU per request at 4000 RPS; ≤ 20 / 28 µs CPU and ≤ 3 µs
for a virtual-server call.
"""

from __future__ import annotations

from summary import C_ARMS, nginx_of

TARGETS = {
    # RPS(arm) / RPS(A) as a multiple of RPS(B) / RPS(A), i.e. RPS(arm) /
    # RPS(B), per round, median; at least. The small-body arms against
    # their own nginx arm (Cvs / Bs). Ca has no limit of its own (the audit
    # CPU target covers what it adds to Cv).
    "rps_vs_nginx": {"Cu": 1.0, "Cv": 0.85, "Cvs": 0.75, "Cf": 0.7},
    "rps_vs_nginx_aim": {"Cu": 1.2, "Cv": 0.95, "Cf": 0.8},
    # CPU µs per request of the Tollgate process at saturation (wrk), at
    # most: the pure proxy (Cu, Cv) and the full pipeline (Cf).
    "cpu_us_saturation": {"Cu": 15.0, "Cv": 15.0, "Cf": 21.0},
    "added_p50_ms": 0.10,  # at the fixed rate (1000 RPS), every C arm
    "added_p99_ms": 0.25,
    "sse_added_p50_ms": 0.10,
    "idle_kib_per_conn": 8.0,
    # (RPS(Cl) / RPS(Al)) / (RPS(Cv) / RPS(A)), per round, median; at least:
    # a tools/list within 10 % of a tools/call (the catalog learns a list
    # once per change, not per answer).
    "list_vs_call": 0.90,
    "audit_cpu_us": 3.0,  # PERF.md §4: audit ≤ 3 µs CPU per request
    "full_vs_pure_rps": 0.75,  # PERF.md §4: the full pipeline keeps ≥ 0.75x of pure-proxy RPS
    # Virtual servers: a tools/call through one costs at most 2 µs CPU more
    # than on the member's own route (Vc − Cm, same process); a tools/list
    # of a 500-tool virtual server answers in at most 0.5 ms p50 at the
    # fixed rate, as the client measures it (loopback included).
    "virtual_call_cpu_us": 2.0,
    "virtual_list_p50_ms": 0.5,
    # Rate limits with Redis on loopback (issue 12): a call under a rule
    # counted in Redis adds at most 0.1 ms p50 at the fixed rate to the same
    # call without limits (Cr − Cv, each its own process), and keeps at
    # least 0.9x of its RPS at saturation.
    "redis_added_p50_ms": 0.10,
    "redis_rps_ratio": 0.90,
}


def verdict(name, arm, value, limit, unit, higher_is_better=False, basis=None, aim=None) -> dict:
    if value is None:
        ok, miss = None, None
    elif higher_is_better:
        ok, miss = value >= limit, round(limit - value, 4) if value < limit else 0
    else:
        ok, miss = value <= limit, round(value - limit, 4) if value > limit else 0
    out = {"target": name, "arm": arm, "value": value, "limit": limit, "unit": unit,
           "cmp": "≥" if higher_is_better else "≤", "pass": ok, "miss_by": miss, "basis": basis}
    if aim is not None:
        out["aim"] = aim
        out["aim_reached"] = None if value is None else (value >= aim if higher_is_better else value <= aim)
    return out


def judge(out: dict, doc: dict) -> list[dict]:
    """The verdicts for a summary `out` of the result `doc`, in report order."""
    T = []
    rate = doc["settings"]["rate"]
    tp = out["throughput"]
    sizes = doc.get("arm_body_bytes") or {}
    for arm, limit in TARGETS["rps_vs_nginx"].items():
        nginx = nginx_of(arm)
        c = tp.get(arm, {}).get(f"ratio_vs_{nginx}")
        if not c:
            continue
        size = sizes.get(arm, doc["settings"]["body_bytes"])
        T.append(verdict(f"RPS ratio vs direct, as a multiple of nginx's ({arm}/{nginx} per round), {size} B call",
                         arm, c["median"], limit, "x of nginx", higher_is_better=True, basis=c["basis"],
                         aim=TARGETS["rps_vs_nginx_aim"].get(arm)))
    lv = out.get("list_vs_call")
    if lv:
        r = lv["tollgate"]["relative"]
        T.append(verdict("tools/list within 10 % of tools/call: (Cl/Al) / (Cv/A)", "Cl", r["median"],
                         TARGETS["list_vs_call"], "x", higher_is_better=True, basis=r["basis"]))
    for arm, limit in TARGETS["cpu_us_saturation"].items():
        if arm in tp:
            what = "full pipeline" if arm == "Cf" else "pure proxy"
            T.append(verdict(f"CPU per request at saturation ({what})", arm, tp[arm]["cpu_us_per_req"], limit, "µs"))
    for arm in C_ARMS:
        if arm not in out["fixed_rate"]:
            continue
        f = out["fixed_rate"][arm]
        audit = " (with audit)" if arm in ("Ca", "Cf") else ""
        T.append(verdict(f"added p50 at {rate} RPS", arm, f["added_p50_ms_vs_A"]["median"],
                         TARGETS["added_p50_ms"], "ms", basis=f["added_p50_ms_vs_A"]["basis"]))
        T.append(verdict(f"added p99 at {rate} RPS{audit}", arm, f["added_p99_ms_vs_A"]["median"],
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
    vs = out.get("virtual", {})
    if "call" in vs:
        T.append(verdict("virtual server call CPU per request at saturation (Vc - Cm)", "Vc",
                         vs["call"]["cpu_us_saturation"], TARGETS["virtual_call_cpu_us"], "µs"))
        T.append(verdict(f"virtual server call CPU per request at {rate} RPS (Vc - Cm)", "Vc",
                         vs["call"]["cpu_us_fixed_rate"], TARGETS["virtual_call_cpu_us"], "µs"))
    if "list" in vs:
        p50 = vs["list"]["p50_ms"]
        T.append(verdict(f"tools/list of a 500-tool virtual server, p50 at {rate} RPS", "Vl", p50["median"],
                         TARGETS["virtual_list_p50_ms"], "ms", basis=p50["basis"]))
    rl = out.get("redis_limits")
    if rl:
        a = rl.get("added_p50_ms")
        T.append(verdict(f"rate limit in Redis, added p50 at {rate} RPS (Cr - Cv)", "Cr", a["median"] if a else None,
                         TARGETS["redis_added_p50_ms"], "ms", basis=a["basis"] if a else None))
        r = rl.get("rps_ratio")
        T.append(verdict("rate limit in Redis, RPS at saturation (Cr/Cv)", "Cr", r["median"] if r else None,
                         TARGETS["redis_rps_ratio"], "x of Cv", higher_is_better=True, basis=r["basis"] if r else None))
    if "Cu" in out["sse"]:
        s = out["sse"]["Cu"]["added_ttfe_p50_ms"]
        T.append(verdict("SSE first event added, p50", "Cu", s["median"], TARGETS["sse_added_p50_ms"], "ms",
                         basis=s["basis"]))
    if "Cu" in out["idle"]:
        T.append(verdict("memory per idle keep-alive connection", "C", out["idle"]["Cu"]["kib_per_conn"],
                         TARGETS["idle_kib_per_conn"], "KiB"))
    return T
