#!/usr/bin/env python3
"""Tollgate benchmark harness: PERF.md §3 on a noisy 2-core machine.

Started by bench/run.sh (which installs the tools, builds the gateway and
pins this process to the client core). It starts every server-side process
on the server core, runs the arms interleaved for several rounds, records
every run with its noise, and writes bench/results/<date>-<sha>.json and
.md. Only the standard library is used; the load comes from wrk (closed
loop, throughput) and oha (fixed rate with latency correction).

Arms:
  A   direct to the upstream stub (nginx `return 200`, 1 worker)
  B   nginx proxy_pass, upstream keep-alive, proxy_buffering off (1 worker)
  Cu  Tollgate, header_trust = "upstream" (zero-parse path), 1 worker thread
  Cv  Tollgate, header_trust = "verify" (bounded body scan), same process
  Ca  Tollgate, verify route + audit trail (batch durability), own process
  Cf  Tollgate, full pipeline: verify + bearer JWT (dev issuer, token
      cache) + scope + Cedar decision over 100 policies + audit (batch),
      own process; the load carries `Authorization: Bearer <token>`
  Al  tools/list direct to the stub (a 4 KiB answer of 12 tools)
  Bl  tools/list through nginx
  Cl  tools/list through Tollgate, verify route without policies, same
      process as Cu/Cv (the catalog learns the answer once per change)
  Cm  Tollgate, the member of a virtual server on its own route (verify,
      catalog synced), own process
  Vc  Cm's call through a virtual server over Cm's route, same process
  Vl  tools/list on a virtual server of 500 tools (answered from the
      catalog; the catalog stub serves the members' syncs), same process
  Cr  Cv's call under a rate limit (one rule, never reached) counted in
      Redis (Debian's redis-server on loopback, no persistence), own
      process
  As, Bs, Cvs, Cfs  A, B, Cv and Cf with a 200 B `tools/call` body
      (BENCH_SMALL_BODY_BYTES): each runs right after its twin, throughput
      only, so that the ratio to nginx is measured at both body sizes
Every arm sends a 1 KiB `tools/call` except Al, Bl, Cl and Vl (`tools/list`)
and the small-body twins.

Settings come from the environment; see bench/README.md.

This module owns the run's order (the phases in `main`) and the result
file; the parts live beside it: settings.py (environment, ports, arms),
procstat.py (/proc readings, Meter), procs.py (processes, configs),
load.py (wrk, oha), rawhttp.py (raw requests, sanity checks, idle
memory), sse_client.py (SSE first event), pipeline.py (policies, token,
audit trails) and report.py (summary and markdown).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402
from load import run_oha, run_wrk, wrk_lua  # noqa: E402
from pipeline import check_audit_trails, mint_token, prepare_policies  # noqa: E402
from procs import Procs, approve_all, port_free, render, wait_port, wait_ready  # noqa: E402
from procstat import Meter, children_of, cpu_info, proc_status, thread_cpu  # noqa: E402
from rawhttp import idle_memory, make_body, sanity_check  # noqa: E402
from settings import (  # noqa: E402
    ARM_BY_NAME, ARM_HEADERS, ARMS, CATALOGS, FULL_ROUTE, LIB, LIST_BODY, PORTS, REQUESTS, RESULTS, ROOT, S, SSE_ARMS,
    TICK, TOOLS, VIRTUAL_EXPOSED, WORK, arm_headers, count_sent, log, planned_load_seconds, stub_list_body,
)
from sse_client import SseClient, sse_round  # noqa: E402


def tool_version(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except OSError:
        return "?"
    text = (p.stdout + p.stderr).strip().splitlines()
    return text[0].strip() if text else "?"


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def new_doc(started: dt.datetime, sha: str, short: str, dirty: bool, bodies: dict[str, bytes]) -> dict:
    """The result document before any measurement: the run, host, tools
    and settings, and empty lists for the phases to fill."""
    cpu = cpu_info()
    return {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "git": {"sha": sha, "short": short, "dirty": dirty},
        "host": {
            "cpus": os.cpu_count(),
            "cpu_model": cpu["model"],
            "cpu": cpu,
            "kernel": platform.release(),
            "clk_tck": TICK,
        },
        "tools": {
            "wrk": tool_version([TOOLS["wrk"], "-v"]),
            "oha": tool_version([TOOLS["oha"], "--version"]),
            "nginx": tool_version([TOOLS["nginx"], "-v"]),
            "python": platform.python_version(),
        },
        "settings": S,
        "arms": {a.name: a.desc for a in ARMS},
        "arm_methods": {a.name: REQUESTS[a.request].method for a in ARMS},
        # Bytes of each arm's request body, and the twin arms (another body
        # on their twin's route and process).
        "arm_body_bytes": {a.name: len(bodies[a.request]) for a in ARMS},
        "arm_twins": {a.name: a.twin for a in ARMS if a.twin},
        "list": {"request_bytes": len(LIST_BODY), "answer_bytes": len(stub_list_body()),
                 "tools": stub_list_body().count('"inputSchema"')},
        "virtual": {"exposed_tools": VIRTUAL_EXPOSED, "page_size": 100},
        "throughput": [],
        "fixed_rate": [],
        "idle": [],
        "sse": [],
        "audit": [],
    }


def serve(procs: Procs, name: str, config: Path) -> subprocess.Popen:
    return procs.start(name, [TOOLS["tollgate"], "serve", "--config", str(config), "--log", "warn"])


def start_servers(procs: Procs, doc: dict) -> dict[str, subprocess.Popen]:
    """Start the server side, all on the server core, and wait until every
    port listens and every Tollgate is ready. Also prepares the bench
    policies and mints Cf's token (doc["pipeline"], ARM_HEADERS["Cf"])."""
    log(f"work dir {WORK}; ports {PORTS}; server core {S['server_cpu']}, client core {S['client_cpu']}")
    stub = procs.start("nginx-stub", [TOOLS["nginx"], "-p", str(WORK), "-c", str(render("nginx-stub.conf", WORK / "nginx-stub.conf"))])
    sse = procs.start("sse-stub", [sys.executable, str(LIB / "sse_stub.py"), "--port", str(PORTS["SSE"]),
                                   "--events", str(S["sse_events"]), "--gap-ms", str(S["sse_gap_ms"])])
    wait_port(PORTS["A"])
    wait_port(PORTS["SSE"])
    proxy = procs.start("nginx-proxy", [TOOLS["nginx"], "-p", str(WORK), "-c", str(render("nginx-proxy.conf", WORK / "nginx-proxy.conf"))])
    gw = serve(procs, "tollgate", render("tollgate.toml", WORK / "tollgate.toml"))
    # Ca and Cf: audit, policy and token issuers are settings of the
    # whole process, so each has its own.
    gwa = serve(procs, "tollgate-audit", render("tollgate-audit.toml", WORK / "tollgate-audit.toml"))
    doc["pipeline"] = prepare_policies()
    full_conf = render("tollgate-full.toml", WORK / "tollgate-full.toml")
    token = mint_token(full_conf)
    doc["pipeline"].update({"route": FULL_ROUTE, "token": {"sub": "bench", "team": "bench", "scope": "mcp:tools",
                                                           "issuer": "dev issuer (ES256)", "bytes": len(token)}})
    ARM_HEADERS["Cf"] = [("Authorization", f"Bearer {token}")]
    gwf = serve(procs, "tollgate-full", full_conf)
    # Cm, Vc, Vl: the members' catalogs come from the catalog stub (Cm's
    # through the nginx stub), synced once when the gateway starts.
    catalog = procs.start("catalog-stub", [sys.executable, str(LIB / "catalog_stub.py"), "--port", str(PORTS["CATALOG"]),
                                           *(a for path, src in CATALOGS.items() for a in ("--serve", f"{path}={src}"))])
    wait_port(PORTS["CATALOG"])
    virtual_conf = render("tollgate-virtual.toml", WORK / "tollgate-virtual.toml")
    gwv = serve(procs, "tollgate-virtual", virtual_conf)
    # Cr: the rate limit's counter in a redis-server on loopback, without
    # persistence; the gateway connects to it when it starts.
    redis = procs.start("redis", [TOOLS["redis"], "--bind", "127.0.0.1", "--port", str(PORTS["REDIS"]),
                                  "--save", "", "--appendonly", "no", "--protected-mode", "no",
                                  "--dir", str(WORK)])
    wait_port(PORTS["REDIS"])
    gwr = serve(procs, "tollgate-redis", render("tollgate-redis.toml", WORK / "tollgate-redis.toml"))
    wait_port(PORTS["B"])
    for key in ("C", "CA", "CF", "CV", "CR"):
        wait_port(PORTS[key])
        wait_ready(PORTS[f"{key}_ADMIN"])
    # Vl's member is governed: its list is the approved catalog.
    approve_all(TOOLS["tollgate"], virtual_conf, "bench-catalog", PORTS["CV_ADMIN"], VIRTUAL_EXPOSED)
    procs.check()
    return {"stub": stub, "sse": sse, "proxy": proxy, "gw": gw, "gwa": gwa, "gwf": gwf, "gwv": gwv, "catalog": catalog,
            "redis": redis, "gwr": gwr}


def server_pids(p: dict[str, subprocess.Popen]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """(the process serving each arm, the processes metered around every
    run, the processes whose RSS is recorded), by PID: for nginx, its one
    worker."""
    time.sleep(0.3)
    stub_worker = children_of(p["stub"].pid)
    proxy_worker = children_of(p["proxy"].pid)
    if len(stub_worker) != 1 or len(proxy_worker) != 1:
        raise RuntimeError(f"expected one nginx worker each, got {stub_worker} and {proxy_worker}")
    gw, gwa, gwf, gwv, gwr = p["gw"].pid, p["gwa"].pid, p["gwf"].pid, p["gwv"].pid, p["gwr"].pid
    serving = {"A": stub_worker[0], "B": proxy_worker[0], "Cu": gw, "Cv": gw, "Ca": gwa, "Cf": gwf,
               "Al": stub_worker[0], "Bl": proxy_worker[0], "Cl": gw, "Cm": gwv, "Vc": gwv, "Vl": gwv, "Cr": gwr}
    serving.update({a.name: serving[a.twin] for a in ARMS if a.twin})
    meter_pids = {"stub": stub_worker[0], "nginx": proxy_worker[0], "tollgate": gw, "sse": p["sse"].pid,
                  "tollgate_audit": gwa, "tollgate_full": gwf, "tollgate_virtual": gwv, "catalog_stub": p["catalog"].pid,
                  "tollgate_redis": gwr, "redis": p["redis"].pid}
    rss_pids = {"stub": stub_worker[0], "nginx": proxy_worker[0], "tollgate": gw,
                "tollgate_audit": gwa, "tollgate_full": gwf, "tollgate_virtual": gwv, "tollgate_redis": gwr}
    return serving, meter_pids, rss_pids


def check_arms(bodies: dict[str, bytes]) -> None:
    """One request through every arm and every SSE arm before any load."""
    for arm in ARMS:
        sanity_check(arm.name, arm.port, arm.path, bodies[arm.request], headers=arm_headers(arm),
                     result_key=REQUESTS[arm.request].result_key)
        count_sent(arm.name, 1)
    for name, port, path, _ in SSE_ARMS:
        sanity_check(f"sse-{name}", port, path, bodies["call"], sse=True)


def noise_note(m: Meter) -> str:
    return f"  others {m.result['others_cores']:.2f} steal {m.result['steal_cores']:.2f}{'  NOISY' if m.result['noisy'] else ''}"


def throughput_round(doc: dict, r: int, meter_pids: dict[str, int], luas: dict[str, Path]) -> None:
    """One round of wrk at saturation, every arm, each after its warmup
    (a twin arm's is its twin's run just before)."""
    for arm in ARMS:
        name, url = arm.name, f"http://127.0.0.1:{arm.port}{arm.path}"
        if S["warmup_seconds"] > 0 and not arm.twin:
            count_sent(name, run_wrk(url, S["warmup_seconds"], luas[name])["requests"])
        with Meter(meter_pids) as m:
            res = run_wrk(url, S["seconds"], luas[name])
        count_sent(name, res["requests"])
        doc["throughput"].append({"arm": name, "round": r, **res, **m.result})
        log(f"round {r}/{S['rounds']} c={S['conns']} {name:>2}: {res['rps']:>9.0f} rps"
            f"{noise_note(m)}"
            f"{'  ERRORS ' + str(res['errors']) if res['errors'] else ''}")


def fixed_rate_round(doc: dict, r: int, meter_pids: dict[str, int], body_paths: dict[str, Path]) -> None:
    """One round of oha at the fixed rate, every arm but the twins."""
    for arm in ARMS:
        if arm.twin:
            continue
        name, url = arm.name, f"http://127.0.0.1:{arm.port}{arm.path}"
        with Meter(meter_pids) as m:
            res = run_oha(url, S["rate_seconds"], body_paths[arm.request], arm_headers(arm))
        count_sent(name, res["requests"])
        doc["fixed_rate"].append({"arm": name, "round": r, **res, **m.result})
        bad = sum(v for k, v in res["status"].items() if k != "200") + sum(res["errors"].values())
        log(f"round {r}/{S['rounds']} q={S['rate']} {name:>2}: p50 {res['p50_ms']:.3f} ms  p99 {res['p99_ms']:.3f} ms"
            f"{noise_note(m)}"
            f"{'  ERRORS ' + str(bad) if bad else ''}")


def load_rounds(doc: dict, procs: Procs, meter_pids: dict[str, int], rss_pids: dict[str, int],
                luas: dict[str, Path], body_paths: dict[str, Path]) -> None:
    """Interleaved rounds: throughput then fixed rate, every arm."""
    for r in range(1, S["rounds"] + 1):
        throughput_round(doc, r, meter_pids, luas)
        fixed_rate_round(doc, r, meter_pids, body_paths)
        procs.check()
        for key, pid in rss_pids.items():
            doc.setdefault("rss_after_rounds_kib", {})[key] = proc_status(pid)


def sse_rounds(doc: dict, procs: Procs, meter_pids: dict[str, int], body: bytes) -> None:
    """SSE time to first event, arms interleaved in blocks within each round."""
    clients = {name: SseClient(port, path, body) for name, port, path, _ in SSE_ARMS}
    try:
        for r in range(1, S["rounds"] + 1):
            with Meter(meter_pids) as m:
                res = sse_round(clients, S["sse_samples"])
            for name, one in res.items():
                doc["sse"].append({"arm": name, "round": r, **one, **m.result})
            log(f"round {r}/{S['rounds']} SSE first event p50: "
                + ", ".join(f"{k} {v['ttfe_p50_ms']:.3f} ms" for k, v in res.items())
                + f"  batched {sum(v['batched'] for v in res.values())}"
                + f"  steal {m.result['steal_cores']:.2f}{'  NOISY' if m.result['noisy'] else ''}")
    finally:
        for c in clients.values():
            c.close()
    procs.check()


def measure(doc: dict, procs: Procs, bodies: dict[str, bytes], body_paths: dict[str, Path]) -> None:
    """Every phase that needs the server side running, in order."""
    p = start_servers(procs, doc)
    # After start_servers: Cf's headers include the token minted there.
    luas = {a.name: wrk_lua(body_paths[a.request], f"post-{a.name}", arm_headers(a)) for a in ARMS}
    serving, meter_pids, rss_pids = server_pids(p)
    doc["baseline_rss_kib"] = {k: proc_status(pid)["VmRSS"] for k, pid in rss_pids.items()}
    check_arms(bodies)
    log(f"all arms answer 200; idle RSS: {doc['baseline_rss_kib']} KiB")

    # Memory per idle keep-alive connection (fresh processes, before load).
    for name in ("A", "B", "Cu"):
        a = ARM_BY_NAME[name]
        doc["idle"].append(idle_memory(name, a.port, a.path, serving[name], bodies[a.request], S["idle_conns"],
                                       arm_headers(a)))
        procs.check()

    t0 = time.monotonic()
    log(f"load rounds: {len(ARMS)} arms x {S['rounds']} rounds, about {planned_load_seconds():.0f} s")
    load_rounds(doc, procs, meter_pids, rss_pids, luas, body_paths)
    doc["load_seconds"] = {"planned": round(planned_load_seconds(), 1), "took": round(time.monotonic() - t0, 1)}
    sse_rounds(doc, procs, meter_pids, bodies["call"])
    # CPU per thread of each Tollgate process over the whole run: shows
    # the audit writer thread apart from the request path.
    doc["threads"] = {k: thread_cpu(pid) for k, pid in rss_pids.items() if k.startswith("tollgate")}


def shown(path: Path) -> str:
    """A result path as recorded and printed: relative to the repo, or
    absolute when BENCH_RESULTS is outside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def write_results(doc: dict, started: dt.datetime, short: str) -> None:
    """Summarize, write RESULTS/<date>-<short>[-N].json and .md, print the markdown."""
    doc["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    doc["elapsed_s"] = round((dt.datetime.now(dt.timezone.utc) - started).total_seconds(), 1)
    doc["summary"] = report.summarize(doc)
    json_path = report.free_path(RESULTS, f"{started.strftime('%Y-%m-%d')}-{short}")
    md_path = json_path.with_suffix(".md")
    doc["files"] = {"json": shown(json_path), "markdown": shown(md_path)}
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    md = report.markdown(doc)
    md_path.write_text(md)
    print(md)
    print(f"\nwritten: {shown(json_path)} and {shown(md_path)}")


def on_signal(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not TOOLS["tollgate"] or not Path(TOOLS["tollgate"]).is_file():
        raise SystemExit("TOLLGATE_BIN is not set to the release binary (run bench/run.sh)")
    busy = [f"{k}={p}" for k, p in PORTS.items() if not port_free(p)]
    if busy:
        raise SystemExit(f"ports in use: {', '.join(busy)}; set BENCH_PORT_BASE to a free range")

    started = dt.datetime.now(dt.timezone.utc)
    # BENCH_BUILT_FROM: the commit TOLLGATE_BIN was built from (a clean
    # export), when the working tree has changes the binary does not; the
    # tree then only counts as dirty for changes to the bench itself.
    rev = os.environ.get("BENCH_BUILT_FROM", "").strip()
    sha = git("rev-parse", rev or "HEAD") or "unknown"
    short = git("rev-parse", "--short", rev or "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", *(("--", "bench") if rev else ())))
    bodies = {"call": make_body(S["body_bytes"]), "list": LIST_BODY}
    if S["small_body_bytes"] > 0:
        bodies["call-small"] = make_body(S["small_body_bytes"])
    body_paths = {kind: WORK / f"body-{kind}.json" for kind in bodies}
    for kind, body in bodies.items():
        body_paths[kind].write_bytes(body)
    doc = new_doc(started, sha, short, dirty, bodies)
    log(f"CPU: {doc['host']['cpu']['summary']}")

    procs = Procs()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        measure(doc, procs, bodies, body_paths)
    finally:
        procs.stop_all()

    # The audit trails are complete and sealed now that the gateways stopped.
    check_audit_trails(doc)
    write_results(doc, started, short)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); every process started was stopped")
        sys.exit(130)
