"""What bench/callgrind.py and bench/allocs.py share: the benchmark's
Tollgate processes under a valgrind tool, driven by a raw-socket client.

Both scripts reuse the harness's configs and fixtures on a port range and
a work directory of their own, run the nginx stub (and, for Cm and Vc, the
catalog stub) natively, and write bench/results/<tool>-<date>-<sha>.json
and .md. In the order a script uses them:

- `own_ports`: the script's ports (<TOOL>_PORT_BASE) and work directory
  (bench/.work/<tool>-<pid>). The harness's settings read both when they
  are first imported, so call it before importing settings or anything
  that does; for that reason the functions below import the harness's
  modules when they are called, not at the top of this module;
- `choose_arms`, `preflight`: the arms asked for (<TOOL>_ARMS), the
  external tools, free ports, this process on the client core;
- `doc_head`: the start of the result document (commit, binary, valgrind,
  host, request counts; <TOOL>_BUILT_FROM), and `heading`, the first line
  of its markdown;
- `start_stubs`, `tollgate_config`, `tollgate_argv`, `under_valgrind`,
  `wait_up`: the processes of an arm;
- `connect`: an arm's sanity request and its kept-alive connection;
- `write_results`: the JSON and markdown files, and the work directory
  removed unless BENCH_KEEP;
- `on_signal`, `run`: SIGTERM as an interrupt, and the scripts' `__main__`
  (130 when interrupted, 2 on a setup error).

Only the standard library.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

BENCH = Path(__file__).resolve().parent.parent
RESULTS = BENCH / "results"

# How each Tollgate process of the benchmark (and nginx as a proxy) is
# known to be up: the port it listens on, and the admin port whose
# /readyz must answer 200.
LISTEN = {"tollgate": "C", "tollgate-audit": "CA", "tollgate-full": "CF", "tollgate-virtual": "CV", "nginx-proxy": "B"}
READY = {"tollgate": "C_ADMIN", "tollgate-audit": "CA_ADMIN", "tollgate-full": "CF_ADMIN", "tollgate-virtual": "CV_ADMIN"}


def own_ports(tool: str, default_base: int) -> None:
    """Before the harness's settings are imported: the tool's own ports
    (<TOOL>_PORT_BASE, else default_base) and work dir."""
    os.environ["BENCH_PORT_BASE"] = os.environ.get(f"{tool.upper()}_PORT_BASE", str(default_base))
    os.environ.setdefault("BENCH_WORK", str(BENCH / ".work" / f"{tool}-{os.getpid()}"))


def choose_arms(tool: str, known) -> list[str]:
    """The arms in <TOOL>_ARMS (default: all of `known`), each one known."""
    arms = [a.strip() for a in os.environ.get(f"{tool.upper()}_ARMS", ",".join(known)).split(",") if a.strip()]
    unknown = [a for a in arms if a not in known]
    if unknown:
        raise SystemExit(f"unknown arms {unknown}; choose from {known}")
    return arms


def preflight(tool: str, tools: list[str]) -> None:
    """Before anything starts: the external tools are there, every port is
    free, this process runs on the client core, the work and results
    directories exist."""
    from procs import port_free
    from settings import PORTS, S, WORK

    for t in tools:
        if not shutil.which(t):
            raise SystemExit(f"{t} not found (apt-get install valgrind nginx-light)")
    busy = [f"{k}={p}" for k, p in PORTS.items() if not port_free(p)]
    if busy:
        raise SystemExit(f"ports in use: {', '.join(busy)}; set {tool.upper()}_PORT_BASE to a free range")
    if len(os.sched_getaffinity(0)) > 1 and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {int(S["client_cpu"])})
    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)


def git(*args: str) -> str:
    from settings import ROOT

    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def heading(doc: dict, title: str) -> list[str]:
    """The markdown's first line: title, date, commit (dirty or not)."""
    g = doc["git"]
    return [f"# {title}: {doc['started'][:10]}, {g['short']}{' (dirty tree)' if g['dirty'] else ''}", ""]


def doc_head(tool: str, binary: str, started, requests: int, warmup: int) -> dict:
    """The result document's first fields: the commit the binary is built
    from (<TOOL>_BUILT_FROM, else HEAD), the binary and its cargo profile,
    valgrind's version, the host, the request counts."""
    from procstat import cpu_info

    rev = os.environ.get(f"{tool.upper()}_BUILT_FROM", "").strip()
    sha, short = git("rev-parse", rev or "HEAD") or "unknown", git("rev-parse", "--short", rev or "HEAD") or "unknown"
    # Dirty = uncommitted changes to what the binary is built from.
    dirty = not rev and bool(git("status", "--porcelain", "--untracked-files=no", "--", "crates", "Cargo.toml", "Cargo.lock"))
    profile = Path(binary).resolve().parent.name
    profile = profile if profile in ("release", "callgrind", "debug") else "unknown (binary outside the target directory)"
    return {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "git": {"sha": sha, "short": short, "dirty": dirty},
        "binary": {"path": str(Path(binary).resolve()).replace(str(Path.home()), "~", 1), "profile": profile},
        "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip(),
        "host": {"cpu": cpu_info(), "kernel": os.uname().release},
        "requests": requests,
        "warmup": warmup,
    }


# ---- processes ---------------------------------------------------------------

def start_stubs(procs, arms: list[str]) -> None:
    """The nginx stub (the upstream) and, when Cm or Vc is measured, the
    catalog stub for the members' syncs, both native."""
    from procs import render, wait_port
    from settings import CATALOGS, LIB, PORTS, TOOLS, WORK

    stub = render("nginx-stub.conf", WORK / "nginx-stub.conf")
    procs.start("nginx-stub", [TOOLS["nginx"], "-p", str(WORK), "-c", str(stub)])
    wait_port(PORTS["A"])
    if {"Cm", "Vc"} & set(arms):
        # The members' catalogs, synced once when the gateway starts.
        procs.start("catalog-stub", [sys.executable, str(LIB / "catalog_stub.py"), "--port", str(PORTS["CATALOG"]),
                                     *(a for path, src in CATALOGS.items() for a in ("--serve", f"{path}={src}"))])
        wait_port(PORTS["CATALOG"])


def tollgate_config(name: str, template: str) -> Path:
    """A Tollgate process's config rendered into the work dir; for the full
    pipeline, the bench policies validated and tested and Cf's token minted."""
    from pipeline import mint_token, prepare_policies
    from procs import render
    from settings import ARM_HEADERS, WORK

    conf = render(template, WORK / template)
    if name == "tollgate-full":
        prepare_policies()
        ARM_HEADERS["Cf"] = [("Authorization", f"Bearer {mint_token(conf)}")]
    return conf


def tollgate_argv(conf: Path) -> list[str]:
    from settings import TOOLS

    return [TOOLS["tollgate"], "serve", "--config", str(conf), "--log", "warn"]


def under_valgrind(tool_options: list[str], argv: list[str]) -> list[str]:
    return ["nice", "-n", "10", "valgrind", *tool_options, *argv]


def wait_up(name: str) -> None:
    """Wait (up to 180 s each: valgrind starts slowly) until the process
    listens, its /readyz answers and, for the virtual-server process, both
    virtual servers expose their tools (the governed member's approved)."""
    from procs import approve_all, wait_port, wait_ready
    from settings import PORTS, TOOLS, VIRTUAL_EXPOSED, WORK

    wait_port(PORTS[LISTEN[name]], timeout=180)
    if name in READY:
        wait_ready(PORTS[READY[name]], timeout=180)
    if name == "tollgate-virtual":
        conf = WORK / "tollgate-virtual.toml"
        approve_all(TOOLS["tollgate"], conf, "bench-catalog", PORTS["CV_ADMIN"], VIRTUAL_EXPOSED, timeout=180)


def connect(arm: str, body: bytes):
    """One sanity request for the arm (the harness's checks), then its
    kept-alive connection (rawhttp.KeepAlive)."""
    from rawhttp import KeepAlive, sanity_check
    from settings import ARM_BY_NAME, REQUESTS, arm_headers

    a = ARM_BY_NAME[arm]
    sanity_check(arm, a.port, a.path, body, headers=arm_headers(a), result_key=REQUESTS[a.request].result_key)
    return KeepAlive(arm, a.port, a.path, body, arm_headers(a))


# ---- results and main --------------------------------------------------------

def write_results(tool: str, doc: dict, markdown: Callable[[dict], str]) -> None:
    """RESULTS/<tool>-<date>-<short>[-N].json and .md, the markdown printed;
    the work dir removed unless BENCH_KEEP."""
    from report import free_path
    from settings import ROOT, WORK, log

    json_path = free_path(RESULTS, f"{tool}-{doc['started'][:10]}-{doc['git']['short']}")
    doc["files"] = {"json": str(json_path.relative_to(ROOT)), "markdown": str(json_path.with_suffix(".md").relative_to(ROOT))}
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    md = markdown(doc)
    json_path.with_suffix(".md").write_text(md)
    print(md)
    print(f"written: {doc['files']['json']} and {doc['files']['markdown']}")
    if os.environ.get("BENCH_KEEP", "0") in ("", "0"):
        shutil.rmtree(WORK, ignore_errors=True)
    else:
        log(f"kept {WORK}")


def on_signal(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(main: Callable[[], int]) -> NoReturn:
    """A script's `__main__`: main's exit code; 130 when interrupted (every
    process it started is stopped by then), 2 on a setup error."""
    from settings import log

    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); every process started was stopped")
        sys.exit(130)
    except (RuntimeError, OSError) as e:
        log(f"error: {e}")
        sys.exit(2)
