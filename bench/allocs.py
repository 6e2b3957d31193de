#!/usr/bin/env python3
"""Heap allocations per request on Tollgate's request path, under DHAT.

Counts what each request costs the gateway's allocator, per arm: the
number of allocations and the bytes asked for, and where they come from.
No change to the gateway is needed: the binary runs under valgrind's DHAT
(`valgrind --tool=dhat`), which intercepts malloc, calloc, realloc and
friends (Rust's default global allocator is the C library's) and writes,
when the process exits, the allocations made at every call stack.

DHAT cannot be switched on and off in a running process the way callgrind
can, so the count is a difference of two runs of the same process:

1. for each arm: start the arm's Tollgate process under DHAT (the
   benchmark's configs: bench/conf/tollgate.toml for Cu, Cv, Cvs, Cl;
   tollgate-audit.toml for Ca; tollgate-full.toml for Cf and Cfs, with the
   bench policies and a minted token; tollgate-virtual.toml for Cm and
   Vc, its members' catalogs served by bench/lib/catalog_stub.py), send one
   sanity request and WARMUP requests for every arm of that process, each
   over its own kept-alive connection, then N requests of the arm being
   measured, close the connections and stop the process (SIGTERM: DHAT
   writes its file at exit);
2. once per process, the baseline: the same start, sanity requests and
   warm-up, then idle for as long as the arms' N requests took, then stop;
3. allocations per request = (arm run's total - baseline's total) / N, for
   blocks and for bytes: start-up, warm-up, shutdown and the timers of an
   idle process cancel out. The same difference per allocation site (the
   first frame outside the allocator and Rust's standard library) and per
   crate shows where they come from.

The nginx stub (the upstream) runs natively. Writes
bench/results/allocs-<date>-<sha>.json and .md.

Environment (all optional):
  TOLLGATE_BIN              the gateway binary (default: the callgrind
                            profile's, which has line tables for the sites,
                            else the release one, under CARGO_TARGET_DIR or
                            ~/.cache/tollgate-target)
  ALLOCS_REQUESTS=1000      measured requests per arm
  ALLOCS_WARMUP=100         warm-up requests per arm of the process
  ALLOCS_ARMS=Cu,Cv,...     a subset of Cu Cv Cvs Cl Ca Cf Cfs Cm Vc
  ALLOCS_PORT_BASE=28280    ports (a range of their own: make bench and
                            make callgrind can run beside it)
  ALLOCS_BUILT_FROM=<rev>   the commit TOLLGATE_BIN was built from, when
                            not the working tree (a clean export)
  BENCH_KEEP=1              keep bench/.work/allocs-* (DHAT files: open
                            them in /usr/libexec/valgrind/dh_view.html)

Only the standard library; valgrind and nginx are the external tools.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
import valgrind  # noqa: E402

valgrind.own_ports("allocs", 28280)  # before the harness's settings are imported

from procs import Procs  # noqa: E402
from rawhttp import make_body  # noqa: E402
from settings import ARM_BY_NAME, LIST_BODY, REQUESTS, S, TOOLS, WORK, log  # noqa: E402

N = int(os.environ.get("ALLOCS_REQUESTS", "1000"))
WARMUP = int(os.environ.get("ALLOCS_WARMUP", "100"))
NUM_CALLERS = 16  # DHAT's stack depth per allocation (default 12)

# The Tollgate processes: name -> (config template, arms it serves).
PROCESSES = {
    "tollgate": ("tollgate.toml", ("Cu", "Cv", "Cvs", "Cl")),
    "tollgate-audit": ("tollgate-audit.toml", ("Ca",)),
    "tollgate-full": ("tollgate-full.toml", ("Cf", "Cfs")),
    "tollgate-virtual": ("tollgate-virtual.toml", ("Cm", "Vc")),
}
ALL_ARMS = tuple(a for _, served in PROCESSES.values() for a in served)
# Differences worth a line of their own: (arm, base, what).
DIFFS = [
    ("Cv", "Cu", "the body scan of a verify route"),
    ("Cvs", "Cv", "a 200 B body instead of 1 KiB"),
    ("Ca", "Cv", "the audit trail"),
    ("Cf", "Ca", "token, scope and Cedar decision"),
    ("Cf", "Cv", "the full pipeline"),
    ("Cfs", "Cvs", "the full pipeline, 200 B body"),
    ("Vc", "Cm", "a call through a virtual server"),
]
# Frames skipped to find an allocation's site: the allocator, and Rust's
# standard library (a Vec growing, a Box, an Arc, a String, a HashMap).
SKIP = ("malloc", "calloc", "realloc", "memalign", "posix_memalign", "aligned_alloc", "free", "__rust_", "__rdl_",
        "__rg_", "alloc::", "<alloc::", "core::", "<core::", "std::", "<std::", "hashbrown::", "<hashbrown::", "???")


def default_binary() -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "tollgate-target"))
    for profile in ("callgrind", "release"):
        if (target / profile / "tollgate").is_file():
            return str(target / profile / "tollgate")
    return ""


# ---- processes ---------------------------------------------------------------

def dhat_argv(out: Path, argv: list[str]) -> list[str]:
    return valgrind.under_valgrind(["--tool=dhat", f"--dhat-out-file={out}", f"--num-callers={NUM_CALLERS}"], argv)


def stop(procs: Procs, name: str, timeout: float = 180) -> int:
    """SIGTERM one process and wait for it (DHAT writes its file at exit)."""
    for i, (n, p) in enumerate(procs.procs):
        if n == name:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                    raise RuntimeError(f"{name} did not stop within {timeout:.0f} s after SIGTERM")
            del procs.procs[i]
            return p.returncode
    raise RuntimeError(f"no process {name}")


def one_run(procs: Procs, name: str, conf: Path, arms: list[str], bodies: dict[str, bytes], label: str,
            measured: str | None, idle_s: float) -> dict:
    """Start `name` under DHAT, warm every arm, then N requests of
    `measured` (or idle for idle_s when None), stop; the run's DHAT file
    and timings."""
    out = WORK / f"dhat.{name}.{label}.json"
    out.unlink(missing_ok=True)
    t0 = time.monotonic()
    procs.start(f"{name}-{label}", dhat_argv(out, valgrind.tollgate_argv(conf)))
    valgrind.wait_up(name)
    started = time.monotonic() - t0
    clients = {}
    try:
        for arm in arms:
            clients[arm] = valgrind.connect(arm, bodies[ARM_BY_NAME[arm].request])
        for arm in arms:
            clients[arm].send(WARMUP)
        t1 = time.monotonic()
        if measured:
            clients[measured].send(N)
        else:
            time.sleep(idle_s)
        wall = time.monotonic() - t1
        # Work that follows the last answer (the call summary, the audit
        # record, catalog learning) is done in the measured run too.
        time.sleep(0.2)
    finally:
        for c in clients.values():
            c.close()
    time.sleep(0.1)
    procs.check()
    t2 = time.monotonic()
    code = stop(procs, f"{name}-{label}")
    if not out.is_file():
        tail = (WORK / f"{name}-{label}.log").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"{name} ({label}) exited with {code} and wrote no DHAT file:\n{tail}")
    log(f"{name} {label}: start {started:.1f} s, {'%d requests' % N if measured else 'idle'} {wall:.1f} s, "
        f"stop {time.monotonic() - t2:.1f} s")
    return {"file": out, "wall_s": round(wall, 2), "start_s": round(started, 1)}


# ---- reading DHAT files ------------------------------------------------------

def frame_name(frame: str) -> str:
    """A DHAT frame ("0x4A2B: name (file.rs:12)" or "(in /lib/x.so)")
    without its address and location."""
    text = frame.split(": ", 1)[1] if re.match(r"^0x[0-9A-Fa-f]+: ", frame) else frame
    if text.endswith(")") and " (" in text:
        text = text[: text.rindex(" (")]
    return text.strip()


def frame_location(frame: str) -> str:
    m = re.search(r" \(([^()]*)\)$", frame)
    return m.group(1) if m else ""


def crate_of(name: str) -> str:
    n = name.lstrip("<&*")
    if n.startswith("dyn "):
        n = n[4:]
    return n.split("::", 1)[0].split("<", 1)[0] if "::" in n else n


class Profile:
    """A DHAT file: total blocks and bytes allocated over the whole run,
    and the same per allocation site (first frame outside the allocator
    and Rust's standard library, with the frame that called it)."""

    def __init__(self, path: Path):
        doc = json.loads(path.read_text())
        ftbl = doc["ftbl"]
        names = [frame_name(f) for f in ftbl]
        self.blocks = 0
        self.bytes = 0
        self.sites: dict[tuple[str, str], list[int]] = {}
        self.crates: dict[str, list[int]] = {}
        for pp in doc["pps"]:
            blocks, size = pp["tbk"], pp["tb"]
            self.blocks += blocks
            self.bytes += size
            frames = [i for i in pp["fs"] if names[i] and names[i] != "[root]"]
            k = next((j for j, i in enumerate(frames) if not names[i].startswith(SKIP)), None)
            if k is None:
                site, caller = (names[frames[-1]] if frames else "?"), ""
                site_loc = ""
            else:
                site, site_loc = names[frames[k]], frame_location(ftbl[frames[k]])
                caller = next((names[i] for i in frames[k + 1:] if names[i] != site), "")
            key = (site + (f" [{site_loc}]" if site_loc and not site_loc.startswith("in ") else ""), caller)
            e = self.sites.setdefault(key, [0, 0])
            e[0] += blocks
            e[1] += size
            c = self.crates.setdefault(crate_of(site), [0, 0])
            c[0] += blocks
            c[1] += size


def per_request(run: Profile, base: Profile) -> dict:
    """The difference of two profiles, per request: totals, sites, crates."""
    def diff(a: dict, b: dict, top: int) -> list[tuple]:
        keys = set(a) | set(b)
        rows = [(k, (a.get(k, [0, 0])[0] - b.get(k, [0, 0])[0]) / N, (a.get(k, [0, 0])[1] - b.get(k, [0, 0])[1]) / N)
                for k in keys]
        rows = [r for r in rows if abs(r[1]) >= 0.005 or abs(r[2]) >= 0.5]
        return sorted(rows, key=lambda r: (-abs(r[1]), -abs(r[2])))[:top]

    return {
        "allocs_per_request": round((run.blocks - base.blocks) / N, 2),
        "bytes_per_request": round((run.bytes - base.bytes) / N, 1),
        "run": {"blocks": run.blocks, "bytes": run.bytes},
        "baseline": {"blocks": base.blocks, "bytes": base.bytes},
        "sites": [{"site": k[0], "caller": k[1], "allocs_per_request": round(b, 2), "bytes_per_request": round(y, 1)}
                  for k, b, y in diff(run.sites, base.sites, 25)],
        "crates": [{"crate": k, "allocs_per_request": round(b, 2), "bytes_per_request": round(y, 1)}
                   for k, b, y in diff(run.crates, base.crates, 15)],
    }


# ---- report --------------------------------------------------------------------

def markdown(doc: dict) -> str:
    arms = list(doc["arms"])
    L = valgrind.heading(doc, "Allocations per request")
    L.append(f"{doc['requests']} sequential requests per arm over one kept-alive connection, after a sanity request and "
             f"{doc['warmup']} warm-up requests for every arm of the process, under valgrind's DHAT; minus a baseline "
             "run of the same process (same start, warm-up and shutdown, idle for as long as the requests took). "
             "Counted: every malloc, calloc and realloc of the whole process (every thread; a realloc counts as an "
             f"allocation of its new size). Binary: `{doc['binary']['path']}` (profile {doc['binary']['profile']}); "
             f"{doc['valgrind']}. Whole run: {doc['elapsed_s']:.0f} s.")
    L.append("")
    L.append(f"**CPU**: {doc['host']['cpu']['summary']}; Linux {doc['host']['kernel']}.")
    L.append("")
    L += ["## Per request", "", "| Arm | what | body | allocations / request | bytes / request | bytes / allocation |",
          "|---|---|---|---|---|---|"]
    for arm in arms:
        r = doc["arms"][arm]
        per = r["bytes_per_request"] / r["allocs_per_request"] if r["allocs_per_request"] > 0 else None
        L.append(f"| {arm} | {r['what']} | {r['body_bytes']} B | {r['allocs_per_request']:.2f} | {r['bytes_per_request']:,.0f} "
                 f"| {'' if per is None else f'{per:,.0f}'} |")
    L.append("")
    rows = [(a, b, what) for a, b, what in DIFFS if a in doc["arms"] and b in doc["arms"]]
    if rows:
        L += ["| Difference | what | allocations / request | bytes / request |", "|---|---|---|---|"]
        for a, b, what in rows:
            x, y = doc["arms"][a], doc["arms"][b]
            L.append(f"| {a} − {b} | {what} | {x['allocs_per_request'] - y['allocs_per_request']:+.2f} "
                     f"| {x['bytes_per_request'] - y['bytes_per_request']:+,.0f} |")
        L.append("")
    L += ["Baselines (start, sanity requests and warm-up of every arm, idle, shutdown; whole process):", ""]
    for name, p in doc["processes"].items():
        L.append(f"- {name}: {p['baseline']['blocks']:,} allocations, {p['baseline']['bytes']:,} bytes "
                 f"(idle {p['idle_s']:.1f} s; arms {', '.join(p['arms'])})")
    L.append("")
    for arm in arms:
        r = doc["arms"][arm]
        if not r["sites"]:
            continue
        L += [f"## Where {arm}'s allocations come from", "",
              "| allocations / request | bytes / request | site (first frame outside the allocator and std) | called from |",
              "|---|---|---|---|"]
        for s in r["sites"][:12]:
            site = s["site"] if len(s["site"]) <= 120 else s["site"][:117] + "…"
            caller = s["caller"] if len(s["caller"]) <= 80 else s["caller"][:77] + "…"
            L.append(f"| {s['allocs_per_request']:.2f} | {s['bytes_per_request']:,.0f} | `{site}` | {f'`{caller}`' if caller else ''} |")
        L.append("")
        crates = ", ".join(f"{c['crate']} {c['allocs_per_request']:.2f}" for c in r["crates"][:10])
        L.append(f"By crate of the site (allocations / request): {crates}.")
        L.append("")
    L.append("A realloc is counted at the site of the block's first allocation (DHAT keeps a block's allocation "
             "point), so a growing `Vec` or `String` shows where it was created. Differences below 0.005 "
             "allocations per request are left out. Sites are names from the binary's symbols; with line tables (the "
             "`callgrind` profile) frames inlined by the optimizer show too.")
    L.append("")
    L.append(f"Raw data: `{doc['files']['json']}`. Method: bench/README.md, section \"Allocations per request\".")
    return "\n".join(L) + "\n"


# ---- main ------------------------------------------------------------------------

def main() -> int:
    t_start = time.monotonic()
    # The small-body arms exist unless BENCH_SMALL_BODY_BYTES=0.
    arms = valgrind.choose_arms("allocs", [a for a in ALL_ARMS if a in ARM_BY_NAME])
    binary = TOOLS["tollgate"] = TOOLS["tollgate"] or default_binary()
    if not binary or not Path(binary).is_file():
        raise SystemExit("no gateway binary: set TOLLGATE_BIN (or build: cargo build --profile callgrind -p tollgate)")
    valgrind.preflight("allocs", ["valgrind", TOOLS["nginx"]])
    started = dt.datetime.now(dt.timezone.utc)
    doc = valgrind.doc_head("allocs", binary, started, N, WARMUP)
    bodies = {"call": make_body(S["body_bytes"]), "call-small": make_body(max(S["small_body_bytes"], 0)), "list": LIST_BODY}

    procs = Procs()
    signal.signal(signal.SIGTERM, valgrind.on_signal)
    results: dict[str, dict] = {}
    processes: dict[str, dict] = {}
    try:
        valgrind.start_stubs(procs, arms)
        for name, (template, served) in PROCESSES.items():
            mine = [a for a in served if a in arms]
            if not mine:
                continue
            conf = valgrind.tollgate_config(name, template)
            log(f"{name}: {len(mine) + 1} runs under DHAT ({', '.join(mine)}, then the baseline)")
            runs = {arm: one_run(procs, name, conf, mine, bodies, arm, arm, 0) for arm in mine}
            idle = statistics.median(r["wall_s"] for r in runs.values())
            base = one_run(procs, name, conf, mine, bodies, "baseline", None, idle)
            base_profile = Profile(base["file"])
            processes[name] = {"arms": mine, "idle_s": idle, "start_s": base["start_s"],
                               "baseline": {"blocks": base_profile.blocks, "bytes": base_profile.bytes}}
            for arm in mine:
                a = ARM_BY_NAME[arm]
                res = per_request(Profile(runs[arm]["file"]), base_profile)
                results[arm] = {"what": a.desc.split(" (")[0], "process": name, "body_bytes": len(bodies[a.request]),
                                "method": REQUESTS[a.request].method, "wall_s": runs[arm]["wall_s"], **res}
                log(f"{arm}: {res['allocs_per_request']:.2f} allocations, {res['bytes_per_request']:,.0f} bytes per request")
    finally:
        procs.stop_all()

    doc["processes"] = processes
    doc["arms"] = {arm: results[arm] for arm in ALL_ARMS if arm in results}
    doc["elapsed_s"] = round(time.monotonic() - t_start, 1)
    valgrind.write_results("allocs", doc, markdown)
    return 0


if __name__ == "__main__":
    valgrind.run(main)
