"""The sections of a result's markdown summary.

Owns the wording and the tables of the .md file: the introduction (run
settings, machine, noise, arms), then one function per section (targets,
throughput, the two body sizes, latency, tools/list against tools/call,
virtual servers, full pipeline, audit trails, SSE, idle memory), each
taking the result (with its summary) and returning its lines. report.py
joins them in order.
"""

from __future__ import annotations

import statistics

from summary import direct_of, has_direct, is_direct


def f(v, digits=3, unit=""):
    if v is None:
        return "n/a"
    return f"{v:.{digits}f}{unit}"


def flag(entry: dict) -> str:
    return "" if entry.get("basis") in (None, "clean") else " †"


def intro(doc: dict) -> list[str]:
    """The title, the run's settings and machine, its noise, the arms."""
    st, g, n = doc["settings"], doc["git"], doc["summary"]["noise"]
    L = [f"# Tollgate benchmark: {doc['started'][:10]}, {g['short']}{' (dirty tree)' if g['dirty'] else ''}", ""]
    mode = "quick" if st["quick"] else "full"
    L.append(
        f"{mode} run: {st['rounds']} rounds x {st['seconds']:g} s per arm ({st['warmup_seconds']:g} s wrk warmup), arms interleaved; "
        f"throughput at c={st['conns']} (wrk -t1), latency at a fixed {st['rate']} RPS over {st['rate_conns']} connections "
        f"(oha --latency-correction{', ' + format(st['rate_seconds'], 'g') + ' s per run' if st.get('rate_seconds') not in (None, st['seconds']) else ''}); "
        f"{st['body_bytes']} B JSON-RPC `tools/call` body"
        + (f" (arms {', '.join(doc['arm_twins'])}: a {st['small_body_bytes']} B one, throughput only)" if doc.get("arm_twins") else "")
        + (f"; arms Al, Bl, Cl: a {doc['list']['request_bytes']} B `tools/list`, answered with {doc['list']['tools']} tools "
           f"in {doc['list']['answer_bytes']} B"
           + ("; arm Vl: the same request, answered by a virtual server of 500 tools" if "Vl" in doc["arms"] else "")
           if doc.get("list") else "")
        + f". Server side on core {st['server_cpu']}, load generator on core {st['client_cpu']}."
        + (f" Load rounds took {doc['load_seconds']['took']:.0f} s (planned {doc['load_seconds']['planned']:.0f} s), "
           f"the whole run {doc['elapsed_s']:.0f} s." if doc.get("load_seconds") and doc.get("elapsed_s") else "")
    )
    L.append("")
    cpu = doc["host"].get("cpu", {}).get("summary") or f"{doc['host']['cpus']} x {doc['host']['cpu_model']}"
    L.append(f"**CPU**: {cpu}. Linux {doc['host']['kernel']}; "
             f"{doc['tools']['wrk'].split(' [')[0]}, {doc['tools']['oha']}, {doc['tools']['nginx'].replace('nginx version: ', '')}.")
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
    L.append("Arms: " + "; ".join(f"**{k}** {v}" for k, v in doc["arms"].items()) + ".")
    L.append("")
    return L


def targets_table(doc: dict) -> list[str]:
    L = ["## Targets", "", "| Target | Arm | Measured | Limit | Result |", "|---|---|---|---|---|"]
    for t in doc["summary"]["targets"]:
        cmp_ = t.get("cmp") or ("≥" if "≥" in t["target"] else "≤")
        res = "n/a" if t["pass"] is None else ("PASS" if t["pass"] else f"MISS (by {t['miss_by']:g} {t['unit']})")
        limit = f"{cmp_} {t['limit']:g}"
        if t.get("aim") is not None:
            limit += f" (aim {t['aim']:g})"
            if t.get("aim_reached") is not None:
                res += ", aim reached" if t["aim_reached"] else ", aim not reached"
        L.append(f"| {t['target']} | {t['arm']} | {f(t['value'], 3)} {t['unit']}{'' if t['basis'] in (None, 'clean') else ' †'} "
                 f"| {limit} | {res} |")
    L.append("")
    return L


def throughput_table(doc: dict) -> list[str]:
    L = [f"## Throughput, c={doc['settings']['conns']} keep-alive (wrk, closed loop)", ""]
    L.append("| Arm | RPS (median) | RPS / direct (median of rounds) | proxy cost (direct/arm - 1) | per-round ratios | CPU µs/req, arm process | CPU µs/req, stub |")
    L.append("|---|---|---|---|---|---|---|")
    for arm, e in doc["summary"]["throughput"].items():
        if is_direct(arm):
            L.append(f"| {arm} | {f(e['rps']['median'], 0)}{flag(e['rps'])} | 1 | 0 | | {f(e['cpu_us_per_req'], 1)} (stub) | |")
            continue
        if not has_direct(arm):
            L.append(f"| {arm} | {f(e['rps']['median'], 0)}{flag(e['rps'])} | – | – | | {f(e['cpu_us_per_req'], 1)} | |")
            continue
        r = e[f"ratio_vs_{direct_of(arm)}"]
        per = ", ".join("–" if v is None else f"{v:.2f}" + ("*" if i + 1 in r["noisy_rounds"] else "") for i, v in enumerate(r["per_round"]))
        L.append(f"| {arm} | {f(e['rps']['median'], 0)}{flag(e['rps'])} | {f(r['median'], 3)}{flag(r)} | {f(e['proxy_cost'], 2)} "
                 f"| {per} | {f(e['cpu_us_per_req'], 1)} | {f(e['stub_cpu_us_per_req'], 1)} |")
    L.append("")
    L.append("\\* noisy round. Direct = A, or Al for the `tools/list` arms (Bl, Cl)"
             + (", or As for the small-body arms" if doc.get("arm_twins") else "")
             + ("; none for Vl, answered by the gateway" if "Vl" in doc["arms"] else "") + ". "
             "CPU per request at saturation = the process's utime+stime over all rounds / requests served.")
    a_client = [x.get("client_cores") for x in doc["throughput"] if x["arm"] == "A" and x.get("client_cores") is not None]
    if a_client:
        c = statistics.median(a_client)
        note = (" The load generator was saturated in A, so A's RPS is a floor and every ratio vs A is slightly "
                "optimistic; B and C compare with each other unaffected." if c > 0.9 else "")
        L.append(f"Load generator CPU during A: median {c:.2f} cores.{note}")
    L.append("")
    return L


def body_size_table(doc: dict) -> list[str]:
    """The arms with a small-body twin at both body sizes: RPS / direct,
    RPS / nginx (the targets' ratio) and CPU per request."""
    b = doc["summary"].get("body_sizes")
    if not b:
        return []
    st = doc["settings"]
    L = ["## Body size: the same call with a small body", ""]
    L.append(f"Each twin arm sends the `tools/call` with a {st.get('small_body_bytes')} B body instead of "
             f"{st['body_bytes']} B, to the same route and process, right after its twin in every round (throughput "
             "only). Ratios are medians over rounds of per-round ratios against the direct and nginx arms of the same "
             "body size; *× nginx* is the targets' figure, RPS(arm) / RPS(nginx).")
    L.append("")
    L.append("| Arm | body | RPS (median) | RPS / direct | × nginx | CPU µs/req at saturation |")
    L.append("|---|---|---|---|---|---|")
    for large, row in b.items():
        for key in ("large", "small"):
            e = row[key]
            rd, rn = e["ratio_vs_direct"], e["ratio_vs_nginx"]
            L.append(f"| {e['arm']} | {e['body_bytes']} B | {f(e['rps']['median'], 0)}{flag(e['rps'])} "
                     f"| {f(rd['median']) + flag(rd) if rd else ('1' if is_direct(e['arm']) else '')} "
                     f"| {f(rn['median']) + flag(rn) if rn else ('1' if e['arm'] in ('B', 'Bs') else '')} "
                     f"| {f(e['cpu_us_per_req'], 1)} |")
    L.append("")
    tp = doc["summary"]["throughput"]
    pure = [(tp.get(full, {}).get(f"ratio_vs_{base}"), full, base) for full, base in (("Cf", "Cv"), ("Cfs", "Cvs"))]
    if all(r for r, _, _ in pure):
        L.append("Full pipeline against the verify proxy, RPS per round: "
                 + "; ".join(f"{full} / {base} {f(r['median'])}{flag(r)}" for r, full, base in pure) + ".")
        L.append("")
    return L


def latency_table(doc: dict) -> list[str]:
    rate = doc["settings"]["rate"]
    L = [f"## Latency at a fixed {rate} RPS (oha, corrected for coordinated omission)", ""]
    L.append("| Arm | p50 ms | p90 ms | p99 ms | p99.9 ms | added p50 vs direct | added p90 vs direct | added p99 vs direct "
             "| added p50 vs nginx | CPU µs/req |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for arm, e in doc["summary"]["fixed_rate"].items():
        cells = [f"{f(e[q]['median'])}{flag(e[q])}" for q in ("p50_ms", "p90_ms", "p99_ms", "p999_ms")]
        if not has_direct(arm):
            added = ["", "", "", ""]
        else:
            d = direct_of(arm)
            added = [f"{f(e[f'added_{q}_vs_{d}']['median'])}{flag(e[f'added_{q}_vs_{d}'])}" for q in ("p50_ms", "p90_ms", "p99_ms")]
            vb = e.get("added_p50_ms_vs_B" if d == "A" else "added_p50_ms_vs_Bl")
            added.append(f"{f(vb['median'])}{flag(vb)}" if vb else "")
        cpu = f(e["cpu_us_per_req"], 1) + (" (stub)" if is_direct(arm) else "")
        L.append(f"| {arm} | " + " | ".join(cells + added) + f" | {cpu} |")
    L.append("")
    L.append("Added = arm minus its direct arm (A; Al for Bl and Cl) in the same round, median over rounds; vs nginx = "
             "Tollgate minus B (Bl for Cl). A p99 counts only in rounds where the direct arm's own p99 is "
             "below 1 ms (otherwise it measures the other tenant); n/a means no round qualified. "
             "CPU µs/req: utime+stime of the arm's own process (nginx worker or Tollgate; A: the stub) over all rounds / requests.")
    L.append("")
    return L


def list_table(doc: dict) -> list[str]:
    """tools/list against tools/call, through Tollgate and through nginx."""
    lv = doc["summary"].get("list_vs_call")
    if not lv:
        return []
    L = ["## tools/list against tools/call", ""]
    L.append("Cl sends a `tools/list` on a verify route without policies (same process as Cu/Cv), answered by the stub "
             "with 12 tools; the gateway passes the answer unfiltered and its catalog learns the tools once per change "
             "(an identical answer is fingerprinted, not parsed again). Each ratio is the median over rounds of the "
             "per-round value; *list / call* is (list ratio) / (call ratio) in the same round: 1.0 means a list costs "
             "the proxy no more, relative to its upstream, than a call.")
    L.append("")
    L.append("| Proxy | list: RPS / direct (Cl/Al, Bl/Al) | call: RPS / direct (Cv/A, B/A) | list / call | CPU µs/req list | CPU µs/req call |")
    L.append("|---|---|---|---|---|---|")
    for key, name in (("tollgate", "Tollgate (Cl vs Cv)"), ("nginx", "nginx (Bl vs B)")):
        e = lv.get(key)
        if not e:
            continue
        L.append(f"| {name} | {f(e['list']['median'])}{flag(e['list'])} | {f(e['call']['median'])}{flag(e['call'])} "
                 f"| {f(e['relative']['median'])}{flag(e['relative'])} | {f(e['cpu_us_list'], 1)} | {f(e['cpu_us_call'], 1)} |")
    L.append("")
    s = lv.get("stub_list_vs_call")
    L.append(f"The stub itself: Al / A = {f(s['median'] if s else None)} in RPS, CPU {f(lv['stub_cpu_us_list'], 1)} µs/req "
             f"for the list against {f(lv['stub_cpu_us_call'], 1)} µs/req for the call (saturation).")
    L.append("")
    return L


def virtual_table(doc: dict) -> list[str]:
    """A call through a virtual server against its member's route, and a
    virtual server's tools/list."""
    v, rate = doc["summary"].get("virtual"), doc["settings"]["rate"]
    if not v:
        return []
    L = ["## Virtual servers", ""]
    call = v.get("call")
    if call:
        L.append("Vc sends Cm's `tools/call` to a virtual server whose one member is Cm's route (names unprefixed, so "
                 "the request is the same bytes and nothing is renamed); both in one process, the member's catalog "
                 "synced at start. Vc − Cm is what the virtual server adds: reading and scanning the body to find the "
                 "exposed name, looking it up in the exposed catalog, and a new request for the member route (taking "
                 "the caller's head, with the scanned message and the arrival), whose phases then run as on Cm "
                 "without scanning the body again.")
        L.append("")
        L.append(f"| Arm | CPU µs/req at saturation | CPU µs/req at {rate} RPS |")
        L.append("|---|---|---|")
        for arm, c in call["cpu_us"].items():
            L.append(f"| {arm} | {f(c['saturation'], 1)} | {f(c['fixed_rate'], 1)} |")
        rr = call["rps_ratio"]
        cells = [f"{f(call[f'added_{q}']['median'])}{flag(call[f'added_{q}'])}" if call.get(f"added_{q}") else "n/a"
                 for q in ("p50_ms", "p90_ms", "p99_ms")]
        L.append(f"| **Vc − Cm** | **{f(call['cpu_us_saturation'], 1)}** | **{f(call['cpu_us_fixed_rate'], 1)}** |")
        L.append("")
        L.append(f"RPS Vc / Cm (median of rounds): {f(rr['median'], 3) + flag(rr) if rr else 'n/a'}; added latency at "
                 f"{rate} RPS, Vc − Cm: p50 {cells[0]} ms, p90 {cells[1]} ms, p99 {cells[2]} ms. Cv (another process, "
                 "no catalog synced) is shown for reference.")
        L.append("")
    lst = v.get("list")
    if lst:
        tools = doc.get("virtual", {}).get("exposed_tools", {}).get("bench-virtual-500", 500)
        page = doc.get("virtual", {}).get("page_size", 100)
        L.append(f"Vl: `tools/list` on a virtual server of {tools} tools, answered by the gateway from the exposed "
                 f"catalog (first page, {page} tools, pre-serialized entries); no policies in this process, so nothing "
                 "is filtered per caller.")
        L.append("")
        L.append(f"| p50 ms at {rate} RPS | p90 ms | p99 ms | RPS at saturation | CPU µs/req at saturation | CPU µs/req at {rate} RPS |")
        L.append("|---|---|---|---|---|---|")
        L.append(f"| {f(lst['p50_ms']['median'])}{flag(lst['p50_ms'])} | {f(lst['p90_ms']['median'])}{flag(lst['p90_ms'])} "
                 f"| {f(lst['p99_ms']['median'])}{flag(lst['p99_ms'])} | {f(lst['rps']['median'], 0)}{flag(lst['rps'])} "
                 f"| {f(lst['cpu_us_saturation'], 1)} | {f(lst['cpu_us_fixed_rate'], 1)} |")
        L.append("")
        L.append("Latencies as the client measures them over loopback (oha, corrected for coordinated omission), "
                 "not a difference from a direct arm: no upstream answers this list.")
        L.append("")
    return L


def redis_limits_table(doc: dict) -> list[str]:
    """A call under a rate limit counted in Redis against the same call
    without limits."""
    r, rate = doc["summary"].get("redis_limits"), doc["settings"]["rate"]
    if not r:
        return []
    L = ["## Rate limits with Redis", ""]
    L.append("Cr sends Cv's `tools/call` to a verify route like Cv's, in a process of its own with one "
             "`[[limits.rules]]` rule matching the call (per = \"global\", a rate it never reaches) and "
             "`[limits.redis]` pointing at a redis-server on loopback (no persistence, on the server core). "
             "Cr − Cv is what the limit adds: one decision in Redis per call.")
    L.append("")
    L.append(f"| Arm | CPU µs/req at saturation | CPU µs/req at {rate} RPS |")
    L.append("|---|---|---|")
    for arm, c in r["cpu_us"].items():
        L.append(f"| {arm} | {f(c['saturation'], 1)} | {f(c['fixed_rate'], 1)} |")
    L.append(f"| **Cr − Cv** | **{f(r['cpu_us_saturation'], 1)}** | **{f(r['cpu_us_fixed_rate'], 1)}** |")
    L.append("")
    rr = r["rps_ratio"]
    cells = [f"{f(r[f'added_{q}']['median'])}{flag(r[f'added_{q}'])}" if r.get(f"added_{q}") else "n/a"
             for q in ("p50_ms", "p90_ms", "p99_ms")]
    L.append(f"RPS Cr / Cv at saturation (median of rounds): {f(rr['median'], 3) + flag(rr) if rr else 'n/a'}; "
             f"added latency at {rate} RPS, Cr − Cv: p50 {cells[0]} ms, p90 {cells[1]} ms, p99 {cells[2]} ms. "
             "The CPU of redis-server itself is not in the gateway's figures (it shares the server core).")
    L.append("")
    return L


def pipeline_table(doc: dict) -> list[str]:
    s, rate = doc["summary"], doc["settings"]["rate"]
    if not s.get("pipeline"):
        return []
    L = ["## Full pipeline: what each part adds", ""]
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
    return L


def audit_table(doc: dict) -> list[str]:
    s = doc["summary"]
    if not s.get("audit"):
        return []
    L = ["## Audit trails", ""]
    L.append("| Arm | requests sent | call records | records / request | outcomes | dropped (gap lines) | bytes / record "
             "| writer thread CPU µs / record | writer wakeups / record | files | `audit verify --sealed` |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for arm, a in s["audit"].items():
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(a["outcomes"].items())) or "none"
        L.append(f"| {' + '.join(a.get('arms_sent', [arm]))} | {a['requests_sent']} | {a['call_records']} | {f(a['records_per_request'], 4)} | {outcomes} "
                 f"| {a['dropped']} | {f(a['bytes_per_record'], 0)} | {f(a.get('writer_cpu_us_per_record'), 1)} "
                 f"| {f(a.get('writer_wakeups_per_record'), 2)} | {a['files']} | {'ok' if a['verify_ok'] else 'FAILED'} |")
    L.append("")
    L.append("Requests sent = the sanity check, wrk warmups and measured runs (responses counted by wrk) and oha runs. "
             "wrk does not count requests still in flight when it stops, so records can exceed it by up to "
             f"{doc['settings']['conns']} per wrk run. Writer thread: CPU of the `tollgate-audit` thread over the whole run / call records; "
             "wakeups = its voluntary context switches / call records (1 would mean a wake-up, a `write` and a hash pass "
             "per record; well below 1, the writer drains batches).")
    L.append("")
    return L


def sse_table(doc: dict) -> list[str]:
    s, st = doc["summary"], doc["settings"]
    if not s["sse"]:
        return []
    L = [f"## SSE: time to first event ({st['sse_events']} events, {st['sse_gap_ms']:g} ms apart, Python asyncio upstream)", ""]
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
    return L


def idle_table(doc: dict) -> list[str]:
    s = doc["summary"]
    L = ["## Memory per idle keep-alive connection", ""]
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
    return L
