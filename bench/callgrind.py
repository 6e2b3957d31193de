#!/usr/bin/env python3
"""Callgrind gate: instructions per request on Tollgate's request path.

`make callgrind` builds the gateway (cargo profile `callgrind`: release plus
line tables) and runs this script, which:

1. starts the nginx stub natively and, under `valgrind --tool=callgrind
   --instr-atstart=no`, the benchmark's Tollgate processes: the pure proxy
   (bench/conf/tollgate.toml: arms Cu, Cv, Cl), the audit process (Ca) and
   the full pipeline (Cf, with the bench policies and a minted token, as in
   `make bench`), the virtual-server process (Cm: a member's own route, Vc:
   the same call through a virtual server; its members' catalogs come from
   bench/lib/catalog_stub.py, run natively), plus nginx as a proxy (arm B,
   `master_process off`) as a reference that is not gated;
2. for each arm in turn, over one kept-alive connection from a raw-socket
   client: WARMUP requests (instrumentation off), `callgrind_control -i on`,
   exactly N sequential requests, `-i off`, `callgrind_control -d` (one dump
   per arm, so each arm's counts are its own);
3. reads each dump: Ir (instructions executed, every thread of the process)
   per request, and a per-phase breakdown: the inclusive Ir per request of
   the request path's functions (phases, layers, hyper's dispatch, the call
   summary, ...), matched by demangled name (prefix or crate) or by the
   source file a function is defined in (see PHASES). The async phases
   are inlined into `tollgate_server::phases::call` by the optimizer, so a
   callgrind function list does not show them; every executed instruction
   of the gateway binary is mapped to its chain of inlined functions with
   `addr2line -i` (the callgrind profile's line tables), and a phase's cost
   is the Ir of the instructions with that phase in their chain plus the
   calls they make. Also: Ir by crate (innermost inlined function), the top
   functions by self Ir, and I/O calls (recv, writev, epoll_wait, ...) per
   request;
4. writes bench/results/callgrind-<date>-<sha>.json and .md, compares each
   gated arm with bench/callgrind-baseline.json and exits 1 when one costs
   more than TOLERANCE % above its baseline (2 on a setup error).
   CALLGRIND_UPDATE_BASELINE=1 rewrites the baseline from this run instead.

Environment (all optional):
  TOLLGATE_BIN                 the gateway binary (make callgrind sets it)
  CALLGRIND_REQUESTS=2000      measured requests per arm
  CALLGRIND_WARMUP=200         warm-up requests per arm (not measured)
  CALLGRIND_ARMS=Cu,Cv,...     a subset of Cu Cv Cl Ca Cf Cm Vc B
  CALLGRIND_TOLERANCE=3        % above the baseline that fails the gate
  CALLGRIND_UPDATE_BASELINE=1  write the baseline from this run
  CALLGRIND_PORT_BASE=28180    ports (a different range than make bench)
  CALLGRIND_BUILT_FROM=<rev>   the commit TOLLGATE_BIN was built from, when
                               not the working tree (a clean export)
  BENCH_KEEP=1                 keep bench/.work/callgrind-* (dumps, logs)

Only the standard library; valgrind, callgrind_control, nginx and
addr2line (binutils) are the external tools.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "lib"))
import valgrind  # noqa: E402

valgrind.own_ports("callgrind", 28180)  # before the harness's settings are imported

from procs import Procs, render  # noqa: E402
from rawhttp import make_body  # noqa: E402
from settings import ARM_BY_NAME, LIST_BODY, REQUESTS, ROOT, S, TOOLS, WORK, log  # noqa: E402

N = int(os.environ.get("CALLGRIND_REQUESTS", "2000"))
WARMUP = int(os.environ.get("CALLGRIND_WARMUP", "200"))
TOLERANCE = float(os.environ.get("CALLGRIND_TOLERANCE", "3"))
UPDATE = os.environ.get("CALLGRIND_UPDATE_BASELINE", "") not in ("", "0")
BASELINE = BENCH / "callgrind-baseline.json"

# The processes under callgrind: name -> (kind, config template, arms).
PROCESSES = {
    "tollgate": ("tollgate", "tollgate.toml", ("Cu", "Cv", "Cl")),
    "tollgate-audit": ("tollgate", "tollgate-audit.toml", ("Ca",)),
    "tollgate-full": ("tollgate", "tollgate-full.toml", ("Cf",)),
    "tollgate-virtual": ("tollgate", "tollgate-virtual.toml", ("Cm", "Vc")),
    "nginx-proxy": ("nginx", "nginx-proxy.conf", ("B",)),
}
ALL_ARMS = ("Cu", "Cv", "Cl", "Ca", "Cf", "Cm", "Vc", "B")
GATED = ("Cu", "Cv", "Cl", "Ca", "Cf", "Cm", "Vc")  # B (nginx) is a reference: its counts move with the distro's nginx

# The per-phase breakdown, in request order: (label, name rule, files).
# A name rule is (how, patterns): "prefix" = a function's demangled name
# starts with one of them, "crate" = the function is from one of these
# crates, "exact" = the name (without a symbol version) is one of them.
# `files`: substrings of the source file a function is defined in. An
# instruction belongs to a row when one of the functions on its inline stack
# matches the name rule or comes from one of the files (the optimizer
# inlines the async phases into `phases::call`, and an inlined frame only
# carries a short name, so phases are found by their file). A row's cost is
# inclusive: its instructions and everything they call.
SRV = "tollgate-server/src/"
PHASES = [
    ("server connection task (serve.rs: hyper's HTTP/1 server and the service)",
     ("prefix", ["tollgate_server::serve::serve::{{closure}}::{{closure}}"]), []),
    ("  hyper: parse request head", ("prefix", ["<hyper::proto::h1::role::Server as hyper::proto::h1::Http1Transaction>::parse"]), []),
    ("  hyper: encode response head", ("prefix", ["<hyper::proto::h1::role::Server as hyper::proto::h1::Http1Transaction>::encode"]), []),
    ("  layer: request id + span (layer/request.rs)", None, [SRV + "layer/request.rs"]),
    ("  layer: track (layer/track.rs)", None, [SRV + "layer/track.rs"]),
    ("  layer: shed (layer/shed.rs)", None, [SRV + "layer/shed.rs"]),
    ("  layer: body_limit (layer/body_limit.rs)", None, [SRV + "layer/body_limit.rs"]),
    ("  front: FrontService::call (admit, route, phases)",
     ("prefix", ["<tollgate_server::stack::FrontService as tower_service::Service"]), [SRV + "stack.rs"]),
    ("    phase admit (phase/admit.rs)", None, [SRV + "phase/admit.rs"]),
    ("    phases::call (classify … respond)", ("prefix", ["tollgate_server::phases::call"]), []),
    ("      phase classify", None, [SRV + "phase/classify.rs"]),
    ("      phase authenticate", None, [SRV + "phase/authenticate.rs"]),
    ("      phase identify", None, [SRV + "phase/identify.rs"]),
    ("        MCP scan and checks (tollgate-mcp)", ("crate", ["tollgate_mcp"]), ["tollgate-mcp/src/"]),
    ("      server span", ("prefix", ["tollgate_server::phases::server_span"]), []),
    ("      phase authorize", None, [SRV + "phase/authorize.rs"]),
    ("      phase credential", None, [SRV + "phase/credential.rs"]),
    ("      phases durable + forward (phase/forward.rs)", None, [SRV + "phase/forward.rs"]),
    ("        upstream client: checkout", ("prefix", ["tollgate_server::upstream::client::Client::checkout"]), []),
    ("      phases respond + refuse (phase/respond.rs)", None, [SRV + "phase/respond.rs"]),
    ("        list filtering (lists.rs)", None, [SRV + "lists.rs"]),
    ("  response body (metered.rs: MeteredBody, Completion)", None, [SRV + "metered.rs"]),
    ("    call summary (summary.rs: summary::finish)", None, [SRV + "summary.rs"]),
    ("    catalog learning (learn.rs, catalog.rs)", None, [SRV + "learn.rs", SRV + "catalog.rs"]),
    ("upstream connection task (hyper client dispatch)",
     ("prefix", ["tollgate_server::upstream::client::Client::connect::{{closure}}"]), []),
    ("  hyper: encode upstream request head", ("prefix", ["<hyper::proto::h1::role::Client as hyper::proto::h1::Http1Transaction>::encode"]), []),
    ("  hyper: parse upstream response head", ("prefix", ["<hyper::proto::h1::role::Client as hyper::proto::h1::Http1Transaction>::parse"]), []),
    ("token verification (tollgate-auth)", ("crate", ["tollgate_auth"]), ["tollgate-auth/src/"]),
    ("policy (tollgate-policy, cedar)", ("crate", ["tollgate_policy", "cedar_policy", "cedar_policy_core"]),
     ["tollgate-policy/src/", "/cedar-policy"]),
    ("audit (tollgate-audit; writer thread included)", ("crate", ["tollgate_audit"]), ["tollgate-audit/src/"]),
    ("telemetry (tollgate-telemetry, prometheus)", ("crate", ["tollgate_telemetry", "prometheus"]),
     ["tollgate-telemetry/src/", "/prometheus-"]),
    ("tokio: worker's run_task (everything the worker polls)",
     ("prefix", ["tokio::runtime::scheduler::current_thread::Context::run_task"]), []),
    ("libc allocator (malloc, free, realloc, calloc)", ("exact", ["malloc", "free", "realloc", "calloc"]), []),
    ("libc memcpy / memmove / memset", ("prefix", ["__memcpy_", "__memmove_", "__memset_"]), []),
]

# Who calls these (by the innermost inlined function at the call site that
# is not from Rust's standard library):
# the two biggest single items of the request path.
CALLERS_OF = {"memcpy": ("__memcpy_", "__memmove_"), "clock_gettime": ("clock_gettime",),
              "Instant::now / SystemTime::now (Timespec::now)": ("<std::sys::pal::unix::time::Timespec>::now",)}

# Calls into these libc functions are counted per request (the request
# path's traffic with the kernel).
IO_CALLS = ("recv", "recvfrom", "recvmsg", "read", "readv", "write", "writev", "send", "sendto", "sendmsg",
            "epoll_wait", "epoll_ctl", "accept4", "getrandom", "clock_gettime", "fdatasync", "fsync", "syscall")


# ---- processes ---------------------------------------------------------------

def valgrind_argv(name: str, argv: list[str]) -> list[str]:
    return valgrind.under_valgrind(
        ["--tool=callgrind", "--instr-atstart=no", "--dump-instr=yes", "--dump-line=no", "--compress-strings=no",
         "--compress-pos=no", f"--callgrind-out-file={WORK / f'callgrind.{name}.out'}"], argv)


def start(procs: Procs, arms: list[str]) -> dict[str, int]:
    """Start the stub and every process the arms need; name -> PID."""
    valgrind.start_stubs(procs, arms)
    pids = {}
    for name, (kind, template, served) in PROCESSES.items():
        if not set(served) & set(arms):
            continue
        if kind == "nginx":
            conf = render(template, WORK / template)
            conf.write_text(conf.read_text().replace("master_process on;", "master_process off;"))
            argv = [TOOLS["nginx"], "-p", str(WORK), "-c", str(conf)]
        else:
            argv = valgrind.tollgate_argv(valgrind.tollgate_config(name, template))
        pids[name] = procs.start(name, valgrind_argv(name, argv)).pid
    for name in pids:
        valgrind.wait_up(name)
    procs.check()
    return pids


def control(pid: int, *args: str) -> None:
    p = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or "Error" in p.stdout:
        raise RuntimeError(f"callgrind_control {' '.join(args)} {pid}: {p.stdout}{p.stderr}")


def measure_arm(arm: str, pid: int, dump_base: Path, body: bytes) -> dict:
    """Warm up, count N requests, dump; the arm's dump file and timings."""
    client = valgrind.connect(arm, body)
    try:
        client.send(WARMUP)
        before = set(dump_base.parent.glob(dump_base.name + ".*"))
        control(pid, "-i", "on")
        t0 = time.monotonic()
        client.send(N)
        wall = time.monotonic() - t0
        # Work after the last answer (the call summary, learning) is done by
        # the time the client has read it, or right after; let it finish.
        time.sleep(0.1)
        control(pid, "-i", "off")
        control(pid, "-d")
    finally:
        client.close()
    new = sorted(set(dump_base.parent.glob(dump_base.name + ".*")) - before, key=lambda p: p.stat().st_mtime)
    if len(new) != 1:
        raise RuntimeError(f"arm {arm}: expected one new dump next to {dump_base}, found {new}")
    log(f"callgrind {arm}: {N} requests in {wall:.1f} s under callgrind; dump {new[0].name}")
    return {"dump": new[0], "wall_s": round(wall, 2)}


# ---- reading a dump ------------------------------------------------------------

class Dump:
    """A callgrind dump (written with --dump-instr=yes --compress-strings=no
    --compress-pos=no): self Ir per (object, function, instruction) and the
    calls made at each instruction, with their inclusive Ir."""

    def __init__(self, path: Path):
        self.total = 0
        self.self_ir: dict[tuple[str, str, int], int] = {}
        self.calls: list[tuple[str, str, int, str, int, int]] = []  # ob, fn, addr, callee, count, inclusive
        ob = fn = cfn = ""
        pending = None  # (callee, count) after a calls= line
        with open(path, errors="replace") as f:
            for line in f:
                c = line[:1]
                if c.isdigit() or c == "+" or c == "-" or c == "*" or line.startswith("0x"):
                    parts = line.split()
                    addr = int(parts[0], 16) if parts[0].startswith("0x") else int(parts[0])
                    ir = int(parts[-1]) if len(parts) > 1 else 0
                    if pending:
                        self.calls.append((ob, fn, addr, pending[0], pending[1], ir))
                        pending = None
                    else:
                        key = (ob, fn, addr)
                        self.self_ir[key] = self.self_ir.get(key, 0) + ir
                elif line.startswith("fn="):
                    fn = line[3:].strip()
                elif line.startswith("ob="):
                    ob = line[3:].strip()
                elif line.startswith("cfn="):
                    cfn = line[4:].strip()
                elif line.startswith("calls="):
                    pending = (cfn, int(line[6:].split()[0]))
                elif line.startswith("totals:"):
                    self.total = int(line.split()[1])
                elif line.startswith("positions:") and line.split()[1:] != ["instr"]:
                    raise RuntimeError(f"{path}: unexpected positions {line.strip()} (need --dump-instr=yes --dump-line=no)")
        if not self.total:
            self.total = sum(self.self_ir.values())


Frame = tuple[str, str]  # (function name, source file)


def symbolize(binary: str, addrs: set[int]) -> dict[int, list[Frame]]:
    """addr -> the stack of functions at that instruction, innermost first
    (inlined frames, then the function itself), each with its source file,
    from `addr2line -i`. Empty when addr2line or line tables are missing."""
    if not addrs or not shutil.which("addr2line"):
        return {}
    p = subprocess.run(["addr2line", "-e", binary, "-a", "-f", "-i", "-C", "-p"],
                       input="".join(f"{a:#x}\n" for a in sorted(addrs)), capture_output=True, text=True, timeout=600)
    out: dict[int, list[Frame]] = {}
    cur = None
    for line in p.stdout.splitlines():
        if line.startswith("0x"):
            head, _, rest = line.partition(": ")
            cur = int(head, 16)
            out[cur] = []
        elif line.startswith(" (inlined by) ") and cur is not None:
            rest = line[len(" (inlined by) "):]
        else:
            continue
        name, _, loc = rest.rpartition(" at ")
        file = loc.rsplit(":", 1)[0]
        out[cur].append((name.strip() if name.strip() != "??" else "", "" if file.startswith("??") else file))
    if not any(f for chain in out.values() for _, f in chain):
        return {}  # no line tables
    return out


def strip_version(name: str) -> str:
    return name.split("@", 1)[0]


def name_matches(rule: tuple[str, list[str]] | None, name: str) -> bool:
    if not rule or not name:
        return False
    how, pats = rule
    if how == "prefix":
        return name.startswith(tuple(pats))
    if how == "crate":
        return "::" in name and crate_of(name, "") in pats
    return strip_version(name) in pats


def crate_of(name: str, file: str) -> str:
    """The crate a frame's code comes from: by its source file (workspace
    crate, registry crate, or Rust's library), else by its name; C and
    assembly linked into the binary (aws-lc, ring) by the symbol's first word."""
    m = re.search(r"/crates/([^/]+)/src/", file) or re.search(r"/registry/src/[^/]+/([^/]+?)-\d+\.\d+[^/]*/", file) \
        or re.search(r"/library/([^/]+)/src/", file)
    if m:
        return m.group(1).replace("-", "_")
    n = name.lstrip("<&*")
    if n.startswith("dyn "):
        n = n[4:]
    if "::" in n:
        return n.split("::", 1)[0].split("<", 1)[0]
    return f"{n.split('_', 1)[0]}_* (C/asm)"


def short_file(file: str) -> str:
    for pat in (r"/crates/(.+)$", r"/registry/src/[^/]+/(.+)$", r"/library/(.+)$"):
        m = re.search(pat, file)
        if m:
            return m.group(1)
    return Path(file).name


def breakdown(dump: Dump, binary: str, chains: dict[int, list[Frame]], n: int, rust: bool = True) -> dict:
    """Per-phase inclusive Ir, Ir by crate, top functions by self Ir and
    I/O calls, all per request."""
    binname = os.path.realpath(binary)
    ours: dict[str, bool] = {}
    by_frame: dict[Frame, frozenset[int]] = {}
    by_chain: dict[tuple[Frame, ...], frozenset[int]] = {}

    def is_ours(ob: str) -> bool:
        if ob not in ours:
            ours[ob] = os.path.realpath(ob) == binname
        return ours[ob]

    def chain(ob: str, fn: str, addr: int) -> tuple[Frame, ...]:
        inline = chains.get(addr, []) if is_ours(ob) else []
        if inline and inline[-1][0] == fn:
            return tuple(inline)
        return tuple(inline) + ((fn, inline[-1][1] if inline else ""),)

    def rows_of_frame(frame: Frame) -> frozenset[int]:
        if frame not in by_frame:
            name, file = frame
            by_frame[frame] = frozenset(
                i for i, (_, rule, files) in enumerate(PHASES)
                if name_matches(rule, name) or (file and any(f in file for f in files)))
        return by_frame[frame]

    def rows_of(c: tuple[Frame, ...]) -> frozenset[int]:
        if c not in by_chain:
            by_chain[c] = frozenset().union(*(rows_of_frame(f) for f in c))
        return by_chain[c]

    own = [0] * len(PHASES)
    own_in: list[dict[str, int]] = [{} for _ in PHASES]  # row -> function -> own Ir inside it
    crates: dict[str, int] = {}
    top: dict[str, int] = {}
    home: dict[str, frozenset[int]] = {}  # function -> rows its own (outermost) frame belongs to
    for (ob, fn, addr), ir in dump.self_ir.items():
        c = chain(ob, fn, addr)
        for i in rows_of(c):
            own[i] += ir
            own_in[i][fn] = own_in[i].get(fn, 0) + ir
        home[fn] = home.get(fn, frozenset()) | rows_of_frame(c[-1])
        name, file = c[0]
        if rust and is_ours(ob):
            key, label = crate_of(name, file), f"{name} [{short_file(file)}]" if file else name
        else:
            key, label = Path(ob).name, name
        crates[key] = crates.get(key, 0) + ir
        top[label] = top.get(label, 0) + ir
    # Inclusive = own + the inclusive cost of every call out of a row's code
    # to a function outside the row. A row whose functions are called back
    # from inside such a call (a serde visitor from serde_json, a closure from
    # an iterator's collect) would count them twice: functions that can only
    # be reached through the row's own outside calls are "nested", and their
    # part is left out of the sum (it is inside the outside call's cost).
    out_in: list[dict[str, int]] = [{} for _ in PHASES]  # row -> calling function -> inclusive of its calls out
    arcs: list[tuple[str, str, frozenset[int]]] = []  # (caller, callee, rows whose calls out this arc is)
    io: dict[str, int] = {}
    who: dict[str, dict[str, list[int]]] = {k: {} for k in CALLERS_OF}
    for ob, fn, addr, callee, count, incl in dump.calls:
        c = chain(ob, fn, addr)
        for k, prefixes in CALLERS_OF.items():
            if callee.startswith(prefixes):
                name, file = next((f for f in c if f[1] and "/library/" not in f[1]), c[0])
                label = f"{name} [{short_file(file)}]" if file else name
                e = who[k].setdefault(label, [0, 0])
                e[0] += count
                e[1] += incl
        out_rows = rows_of(c) - home.get(callee, rows_of_frame((callee, "")))
        arcs.append((fn, callee, out_rows))
        for i in out_rows:
            out_in[i][fn] = out_in[i].get(fn, 0) + incl
        name = strip_version(callee)
        if name in IO_CALLS:
            io[name] = io.get(name, 0) + count
    called = {callee for _, callee, _ in arcs}
    roots = {fn for fn, _, _ in arcs if fn not in called} | {fn for (_, fn, _) in dump.self_ir if fn not in called}
    cost, nested = [], []
    for i in range(len(PHASES)):
        inside = set(own_in[i]) | set(out_in[i])
        graph: dict[str, list[str]] = {}
        for caller, callee, out_rows in arcs:
            if i not in out_rows:
                graph.setdefault(caller, []).append(callee)
        free, todo = set(roots), list(roots)  # reachable without the row's calls out
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in free:
                    free.add(nxt)
                    todo.append(nxt)
        inner = sorted(inside - free)
        cost.append(sum(v for f, v in own_in[i].items() if f not in inner)
                    + sum(v for f, v in out_in[i].items() if f not in inner))
        nested.append(inner)
    return {
        "inline_aware": bool(chains),
        "phases": [{"label": label, "ir_per_request": round(cost[i] / n, 1),
                    "own_ir_per_request": round(own[i] / n, 1), "reentered": bool(nested[i]),
                    **({"nested": nested[i][:5]} if nested[i] else {})}
                   for i, (label, _, _) in enumerate(PHASES)],
        "crates": {k: round(v / n, 1) for k, v in sorted(crates.items(), key=lambda kv: -kv[1]) if v / n >= 50},
        "top_self": [{"function": k, "ir_per_request": round(v / n, 1)}
                     for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:25]],
        "io_calls_per_request": {k: round(v / n, 3) for k, v in sorted(io.items())},
        "callers": {k: [{"caller": c, "calls_per_request": round(v[0] / n, 2), "ir_per_request": round(v[1] / n, 1)}
                        for c, v in sorted(w.items(), key=lambda kv: -kv[1][1])[:8]] for k, w in who.items()},
    }


# ---- result, baseline, report ----------------------------------------------------

def compare(doc: dict) -> dict:
    """The gate: each gated arm's Ir/request against the baseline."""
    if not BASELINE.exists():
        return {"baseline": None, "arms": {}, "pass": True, "note": f"no baseline at {BASELINE.name}"}
    base = json.loads(BASELINE.read_text())
    out = {"baseline": {k: base.get(k) for k in ("commit", "taken", "profile", "line_tables", "requests")}, "arms": {},
           "tolerance_pct": TOLERANCE}
    ok = True
    for arm, rec in doc["arms"].items():
        if arm not in GATED:
            continue
        b = base.get("arms", {}).get(arm)
        if b is None:
            out["arms"][arm] = {"now": rec["ir_per_request"], "baseline": None, "change_pct": None, "pass": None}
            continue
        change = (rec["ir_per_request"] / b - 1) * 100
        passed = change <= TOLERANCE
        ok &= passed
        out["arms"][arm] = {"now": rec["ir_per_request"], "baseline": b, "change_pct": round(change, 2), "pass": passed}
    if base.get("requests") not in (None, doc["requests"]):
        out["note"] = (f"the baseline was taken with {base['requests']} requests per arm, this run sent "
                       f"{doc['requests']}: fixed costs spread differently")
    out["pass"] = ok
    return out


def fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def markdown(doc: dict) -> str:
    arms = list(doc["arms"])
    L = valgrind.heading(doc, "Callgrind gate")
    L.append(f"{doc['requests']} sequential requests per arm over one kept-alive connection after {doc['warmup']} "
             f"warm-up requests; Ir = instructions executed by the whole process (every thread) while "
             f"instrumentation was on, divided by the requests. Binary: `{doc['binary']['path']}` "
             f"(profile {doc['binary']['profile']}); {doc['valgrind']}. Whole run: {doc['elapsed_s']:.0f} s.")
    L.append("")
    if doc.get("host", {}).get("cpu"):
        L.append(f"**CPU**: {doc['host']['cpu']['summary']}; Linux {doc['host']['kernel']}. Instruction counts do not "
                 "depend on the CPU's speed, but they can on its model (the C library picks `memcpy` and friends by "
                 "the CPU's features).")
        L.append("")
    gate = doc["gate"]
    L += ["## Instructions per request", "",
          "| Arm | what | Ir / request | baseline | change | gate |", "|---|---|---|---|---|---|"]
    for arm in arms:
        r = doc["arms"][arm]
        c = gate["arms"].get(arm)
        if arm not in GATED:
            cells = ["", "", "reference (not gated)"]
        elif c is None:
            cells = ["", "", "no baseline"]
        elif c["baseline"] is None:
            cells = ["none", "", "no baseline"]
        else:
            cells = [fmt(c["baseline"]), f"{c['change_pct']:+.2f} %", "PASS" if c["pass"] else f"FAIL (> +{TOLERANCE:g} %)"]
        L.append(f"| {arm} | {r['what']} | {fmt(r['ir_per_request'])} | " + " | ".join(cells) + " |")
    L.append("")
    if "Cm" in doc["arms"] and "Vc" in doc["arms"]:
        cm, vc = doc["arms"]["Cm"]["ir_per_request"], doc["arms"]["Vc"]["ir_per_request"]
        L.append(f"A call through a virtual server (Vc) against the same call on its member's route (Cm): "
                 f"{vc - cm:+,.0f} Ir per request ({(vc / cm - 1) * 100:+.1f} %).")
        L.append("")
    if gate.get("baseline"):
        b = gate["baseline"]
        L.append(f"Baseline: `bench/callgrind-baseline.json`, commit {str(b.get('commit'))[:12]}, taken {b.get('taken')}."
                 + (f" Note: {gate['note']}." if gate.get("note") else ""))
    else:
        L.append(gate.get("note", ""))
    L.append("")
    bd = doc["breakdown"]
    L += ["## Per phase (inclusive Ir per request)", ""]
    if not all(bd[a]["inline_aware"] for a in arms if a != "B"):
        L.append("No line tables in this binary: the inlined async phases are counted inside `phases::call` only "
                 "(build with `--profile callgrind` for the split).")
        L.append("")
    L.append("| Function | " + " | ".join(arms) + " |")
    L.append("|---|" + "---|" * len(arms))

    def cell(r: dict) -> str:
        if not r["own_ir_per_request"] and not r["ir_per_request"]:
            return ""
        incl = ("≈" if r["reentered"] else "") + fmt(r["ir_per_request"])
        return f"{incl} ({fmt(r['own_ir_per_request'])})"

    for i, (label, _, _) in enumerate(PHASES):
        rows = [bd[a]["phases"][i] for a in arms]
        if not any(r["own_ir_per_request"] or r["ir_per_request"] for r in rows):
            continue
        L.append(f"| {label.replace('  ', '&nbsp;&nbsp;')} | " + " | ".join(cell(r) for r in rows) + " |")
    L.append("")
    L.append("Each cell: inclusive Ir per request (own code in parentheses). Inclusive = the instructions of the "
             "row's functions, inlined or not, and everything they call; own = their instructions only (with what "
             "the optimizer inlined into them from other crates). Indented rows run inside the row above; a layer's "
             "inclusive cost contains the layers and phases it wraps (its future polls theirs). Rows match demangled "
             "names or source files (bench/callgrind.py `PHASES`); the allocator and memcpy rows are libc's. "
             "≈: some of the row's functions are called back from inside its own calls out (a serde visitor from "
             "serde_json, a closure from an iterator's collect); they are counted once, inside that call (the JSON "
             "lists them). Work after the answer (call summary, audit record, catalog learning) is included: the whole "
             "process is counted.")
    L.append("")
    L += ["## I/O calls per request", "", "| Call | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    names = sorted({k for a in arms for k in bd[a]["io_calls_per_request"]})
    for k in names:
        L.append(f"| `{k}` | " + " | ".join(f"{bd[a]['io_calls_per_request'].get(k, 0):.2f}" for a in arms) + " |")
    L.append("")
    L += ["## Ir per request by crate (self cost of the innermost inlined function)", ""]
    crates = sorted({k for a in arms for k in bd[a]["crates"]},
                    key=lambda k: -max(bd[a]["crates"].get(k, 0) for a in arms))
    L += ["| Crate / object | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    for k in crates[:20]:
        L.append(f"| {k} | " + " | ".join(fmt(bd[a]["crates"].get(k)) if bd[a]["crates"].get(k) else "" for a in arms) + " |")
    L.append("")
    for k in CALLERS_OF:
        arm = "Cv" if "Cv" in arms else arms[0]
        rows = bd[arm].get("callers", {}).get(k, [])
        if rows:
            L += [f"## Who calls {k}, {arm}", "", "| calls / request | Ir / request | call site |", "|---|---|---|"]
            for r in rows[:6]:
                L.append(f"| {r['calls_per_request']:.2f} | {fmt(r['ir_per_request'])} | `{r['caller'][:140]}` |")
            L.append("")
    for arm in [a for a in ("Cv", "Cf") if a in arms]:
        L += [f"## Top functions by self Ir, {arm}", "", "| Ir / request | function |", "|---|---|"]
        for t in bd[arm]["top_self"][:15]:
            name = t["function"] if len(t["function"]) <= 140 else t["function"][:137] + "…"
            L.append(f"| {fmt(t['ir_per_request'])} | `{name}` |")
        L.append("")
    L.append(f"Raw data: `{doc['files']['json']}`. Method: bench/README.md, section \"Callgrind gate\".")
    return "\n".join(L) + "\n"


def write_baseline(doc: dict) -> None:
    base = {
        "commit": doc["git"]["sha"],
        "dirty": doc["git"]["dirty"],
        "taken": doc["started"][:10],
        "profile": doc["binary"]["profile"],
        "line_tables": doc["binary"]["line_tables"],
        "requests": doc["requests"],
        "tolerance_pct": TOLERANCE,
        "note": "Ir per request per arm from `make callgrind`; CALLGRIND_UPDATE_BASELINE=1 make callgrind rewrites it",
        "arms": {arm: rec["ir_per_request"] for arm, rec in doc["arms"].items() if arm in GATED},
    }
    BASELINE.write_text(json.dumps(base, indent=1) + "\n")
    log(f"baseline written: {BASELINE.relative_to(ROOT)}")


def main() -> int:
    t_start = time.monotonic()
    arms = valgrind.choose_arms("callgrind", ALL_ARMS)
    binary = TOOLS["tollgate"]
    if not binary or not Path(binary).is_file():
        raise SystemExit("TOLLGATE_BIN is not set to a gateway binary (run `make callgrind`)")
    valgrind.preflight("callgrind", ["valgrind", "callgrind_control", TOOLS["nginx"]])
    started = dt.datetime.now(dt.timezone.utc)
    doc = valgrind.doc_head("callgrind", binary, started, N, WARMUP)
    bodies = {"call": make_body(S["body_bytes"]), "list": LIST_BODY}

    procs = Procs()
    signal.signal(signal.SIGTERM, valgrind.on_signal)
    runs = {}
    try:
        log(f"starting the stub and {len(arms)} arm(s) under callgrind (work dir {WORK})")
        pids = start(procs, arms)
        for name, (_, _, served) in PROCESSES.items():
            for arm in served:
                if arm in arms:
                    runs[arm] = measure_arm(arm, pids[name], WORK / f"callgrind.{name}.out",
                                            bodies[ARM_BY_NAME[arm].request])
                    runs[arm]["process"] = name
        procs.check()
    finally:
        procs.stop_all()

    log("reading the dumps")
    dumps = {arm: Dump(r["dump"]) for arm, r in runs.items()}
    real = os.path.realpath(binary)
    addrs = {addr for arm, d in dumps.items() if arm != "B" for (ob, _, addr) in d.self_ir if os.path.realpath(ob) == real}
    addrs |= {addr for arm, d in dumps.items() if arm != "B" for (ob, _, addr, *_r) in d.calls if os.path.realpath(ob) == real}
    t0 = time.monotonic()
    chains = symbolize(binary, addrs)
    log(f"addr2line: {len(addrs)} instructions, {sum(1 for c in chains.values() if len(c) > 1)} inside inlined code "
        f"({time.monotonic() - t0:.1f} s)")
    doc["binary"]["line_tables"] = bool(chains)
    doc["arms"] = {}
    doc["breakdown"] = {}
    for arm in arms:
        d = dumps[arm]
        a = ARM_BY_NAME[arm]
        doc["arms"][arm] = {
            "what": a.desc.split(" (")[0] if arm != "B" else "nginx proxy_pass (reference)",
            "method": REQUESTS[a.request].method,
            "process": runs[arm]["process"],
            "ir_total": d.total,
            "ir_per_request": round(d.total / N, 1),
            "wall_s": runs[arm]["wall_s"],
        }
        if arm == "B":
            doc["breakdown"][arm] = breakdown(d, shutil.which(TOOLS["nginx"]) or TOOLS["nginx"], {}, N, rust=False)
        else:
            doc["breakdown"][arm] = breakdown(d, binary, chains, N)
        log(f"{arm}: {d.total / N:,.0f} Ir/request")
    doc["gate"] = compare(doc)
    doc["elapsed_s"] = round(time.monotonic() - t_start, 1)
    valgrind.write_results("callgrind", doc, markdown)
    if UPDATE:
        write_baseline(doc)
        return 0
    g = doc["gate"]
    if not g["pass"]:
        worse = [f"{a} {c['change_pct']:+.2f} %" for a, c in g["arms"].items() if c["pass"] is False]
        log(f"FAIL: instructions per request rose more than {TOLERANCE:g} % above the baseline: {', '.join(worse)}")
        return 1
    better = [f"{a} {c['change_pct']:+.2f} %" for a, c in g["arms"].items() if c["change_pct"] is not None and c["change_pct"] < -TOLERANCE]
    if better:
        log(f"cheaper than the baseline: {', '.join(better)}; record it with CALLGRIND_UPDATE_BASELINE=1 make callgrind")
    log("PASS" if g.get("baseline") else "no baseline yet: CALLGRIND_UPDATE_BASELINE=1 make callgrind records one")
    return 0


if __name__ == "__main__":
    valgrind.run(main)
