"""Settings of a benchmark run, read once from the environment.

Owns the paths (the bench directory, the work and results directories),
the settings dict `S` recorded in every result, the tool paths, the ports,
the arms, the MCP requests they send (`REQUESTS`: a `tools/call` or a
`tools/list`, each with its headers) and the upstream stub's answers, the
run-wide counters that other modules update (`ARM_HEADERS`, `SENT`), and
`log()`. Every other harness module imports from here; this module imports
none of them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

LIB = Path(__file__).resolve().parent
BENCH = LIB.parent
ROOT = BENCH.parent
TICK = os.sysconf("SC_CLK_TCK")


def env_num(name: str, default: float, kind=int):
    raw = os.environ.get(name, "").strip()
    return kind(raw) if raw else kind(default)


QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
S = {
    "quick": QUICK,
    "rounds": env_num("BENCH_ROUNDS", 2 if QUICK else 5),
    "seconds": env_num("BENCH_SECONDS", 2 if QUICK else 5, float),
    # Length of each fixed-rate (oha) run: the measured run's length, but
    # 1.5 s in quick mode (unless BENCH_SECONDS is set), which pays for the
    # small-body arms' throughput runs.
    "rate_seconds": env_num("BENCH_RATE_SECONDS", 1.5 if QUICK and not os.environ.get("BENCH_SECONDS", "").strip()
                            else env_num("BENCH_SECONDS", 2 if QUICK else 5, float), float),
    "warmup_seconds": env_num("BENCH_WARMUP", 1 if QUICK else 2, float),
    "conns": env_num("BENCH_CONNS", 32),
    "rate": env_num("BENCH_RATE", 1000),
    "rate_conns": env_num("BENCH_RATE_CONNS", 16),
    "idle_conns": env_num("BENCH_IDLE_CONNS", 1000 if QUICK else 2000),
    "sse_samples": env_num("BENCH_SSE_SAMPLES", 100 if QUICK else 200),
    "sse_events": 3,
    "sse_gap_ms": 2.0,
    "body_bytes": env_num("BENCH_BODY_BYTES", 1024),
    # The small tools/call body of the twin arms (As, Bs, Cvs, Cfs); 0 leaves them out.
    "small_body_bytes": env_num("BENCH_SMALL_BODY_BYTES", 200),
    "noisy_cores": env_num("BENCH_NOISY_CORES", 0.5, float),
    "noisy_steal": env_num("BENCH_NOISY_STEAL", 0.1, float),
    "sse_block": 20,
    "client_cpu": os.environ.get("BENCH_CLIENT_CPU", "0"),
    "server_cpu": os.environ.get("BENCH_SERVER_CPU", "1"),
    "port_base": env_num("BENCH_PORT_BASE", 28080),
}
TOOLS = {
    "tollgate": os.environ.get("TOLLGATE_BIN", ""),
    "wrk": os.environ.get("WRK_BIN", "wrk"),
    "oha": os.environ.get("OHA_BIN", "oha"),
    "nginx": os.environ.get("NGINX_BIN", "nginx"),
    "redis": os.environ.get("REDIS_BIN", "redis-server"),
}
WORK = Path(os.environ.get("BENCH_WORK", BENCH / ".work" / f"run-{os.getpid()}"))
RESULTS = Path(os.environ.get("BENCH_RESULTS", BENCH / "results"))

PORTS = {
    "C": S["port_base"],
    "A": S["port_base"] + 1,
    "B": S["port_base"] + 2,
    "SSE": S["port_base"] + 3,
    "CA": S["port_base"] + 4,
    "CF": S["port_base"] + 5,
    "CV": S["port_base"] + 6,
    "CATALOG": S["port_base"] + 7,
    "CR": S["port_base"] + 8,
    "REDIS": S["port_base"] + 9,
    "C_ADMIN": S["port_base"] + 10,
    "CA_ADMIN": S["port_base"] + 11,
    "CF_ADMIN": S["port_base"] + 12,
    "CV_ADMIN": S["port_base"] + 13,
    "CR_ADMIN": S["port_base"] + 14,
}

MCP_HEADERS = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "echo"),
]
# A tools/list carries no Mcp-Name.
LIST_HEADERS = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/list"),
]
# A modern (2026-07-28) tools/list request: the version in `_meta`, no cursor.
LIST_BODY = json.dumps({
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/list",
    "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
}, separators=(",", ":")).encode()


class Request(NamedTuple):
    """An MCP request an arm sends: its JSON-RPC method, its headers (the
    body is built by rawhttp.make_body for `tools/call`, LIST_BODY for
    `tools/list`) and the key of the answer's `result` the sanity check
    expects."""
    method: str
    headers: list[tuple[str, str]]
    result_key: str | None


REQUESTS = {
    "call": Request("tools/call", MCP_HEADERS, None),
    # The same call with a small body (S["small_body_bytes"]): agents send
    # many short calls, and a proxy's fixed cost per request weighs more there.
    "call-small": Request("tools/call", MCP_HEADERS, None),
    "list": Request("tools/list", LIST_HEADERS, "tools"),
}

STUB_BODY = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}'


def stub_list_body() -> str:
    """The stub's tools/list answer (bench/conf/stub-tools-list.json, 12
    tools with descriptions, input schemas and annotations, about 4 KiB
    compact), as one line for nginx's `return 200 '...'`: a `'`, `\\` or
    `$` would end the string or start a variable there, so none may occur."""
    doc = json.loads((BENCH / "conf" / "stub-tools-list.json").read_text())
    text = json.dumps(doc, separators=(",", ":"))
    bad = sorted({c for c in text if c in "'\\$"})
    if bad:
        raise RuntimeError(f"stub-tools-list.json: characters nginx's return cannot carry: {bad}")
    return text


class Arm(NamedTuple):
    """A throughput / fixed-rate arm: where it sends, and which request.

    A twin arm (`twin` set) sends another body to its twin's route, process
    and headers. It runs right after its twin in each round, throughput
    only: no warmup of its own (its twin's run just warmed the same process
    and route) and no fixed-rate run (the latency targets are on the 1 KiB
    call)."""
    name: str
    port: int
    path: str
    desc: str
    request: str = "call"  # a key of REQUESTS
    twin: str | None = None


SMALL = S["small_body_bytes"]


def small_twin(name: str, twin: str, port: int, path: str, what: str) -> list[Arm]:
    """The small-body twin of an arm, unless BENCH_SMALL_BODY_BYTES=0."""
    if SMALL <= 0:
        return []
    return [Arm(name, port, path, f"{what}, {SMALL} B `tools/call` body (twin of {twin}: throughput only)",
                "call-small", twin)]


ARMS = [
    Arm("A", PORTS["A"], "/mcp", "direct to the upstream stub"),
    *small_twin("As", "A", PORTS["A"], "/mcp", "direct to the upstream stub"),
    Arm("B", PORTS["B"], "/mcp/bench", "nginx proxy_pass (keep-alive, proxy_buffering off)"),
    *small_twin("Bs", "B", PORTS["B"], "/mcp/bench", "nginx proxy_pass"),
    Arm("Cu", PORTS["C"], "/mcp/bench", 'Tollgate, header_trust = "upstream" (zero-parse)'),
    Arm("Cv", PORTS["C"], "/mcp/bench-verify", 'Tollgate, header_trust = "verify" (body scan)'),
    *small_twin("Cvs", "Cv", PORTS["C"], "/mcp/bench-verify", 'Tollgate, header_trust = "verify"'),
    Arm("Ca", PORTS["CA"], "/mcp/bench-audit", "Tollgate, verify + audit trail (batch durability)"),
    Arm("Cf", PORTS["CF"], "/mcp/bench-full",
        "Tollgate, full pipeline: verify + bearer JWT (cached) + scope + Cedar (100 policies) + audit (batch)"),
    *small_twin("Cfs", "Cf", PORTS["CF"], "/mcp/bench-full", "Tollgate, full pipeline"),
    Arm("Al", PORTS["A"], "/mcp-list", "tools/list direct to the upstream stub (12 tools, 4 KiB answer)", "list"),
    Arm("Bl", PORTS["B"], "/mcp/bench-list", "tools/list through nginx proxy_pass", "list"),
    Arm("Cl", PORTS["C"], "/mcp/bench-list",
        'tools/list through Tollgate, header_trust = "verify", route without policies (same process as Cu/Cv)', "list"),
    Arm("Cm", PORTS["CV"], "/mcp/bench-member",
        "Tollgate, a virtual server's member on its own route: verify, catalog synced (own process)"),
    Arm("Vc", PORTS["CV"], "/mcp/bench-virtual", "Tollgate, Cm's call through a virtual server over Cm's route (same process)"),
    Arm("Vl", PORTS["CV"], "/mcp/bench-virtual-500",
        "tools/list on a virtual server of 500 tools, answered from the catalog (first page: 100 tools)", "list"),
    Arm("Cr", PORTS["CR"], "/mcp/bench-limited",
        "Tollgate, Cv's call with a rate limit counted in Redis on loopback (own process)"),
]
ARM_BY_NAME = {a.name: a for a in ARMS}
# Headers one arm sends besides its request's (Cf's bearer token, minted at start).
ARM_HEADERS: dict[str, list[tuple[str, str]]] = {}
# Requests sent to each arm over the whole run (sanity checks, warmups,
# measured runs), to compare with the audit records written.
SENT: dict[str, int] = {}
# The Tollgate processes with an audit trail: arm -> directory (in WORK).
AUDITED = {"Ca": "audit-Ca", "Cf": "audit-Cf"}
FULL_ROUTE = "bench-full"
# The virtual servers of tollgate-virtual.toml and the tools each must
# expose once its member has synced, before any request is sent.
VIRTUAL_EXPOSED = {"bench-virtual": 12, "bench-virtual-500": 500}
# What the catalog stub serves (bench/lib/catalog_stub.py --serve): the
# member of bench-virtual (through the nginx stub's /mcp-member) and the
# 500 tools of bench-virtual-500.
CATALOGS = {
    "/mcp-member": str(BENCH / "conf" / "stub-tools-list.json"),
    "/mcp-catalog": f"{ROOT / 'tests' / 'fixtures' / 'search' / 'tools.json'}:500",
}
SSE_ARMS = [
    ("A", PORTS["SSE"], "/mcp", "direct to the SSE stub"),
    ("B", PORTS["B"], "/mcp/sse", "nginx proxy_pass, proxy_buffering off"),
    ("Cu", PORTS["C"], "/mcp/sse", 'Tollgate, header_trust = "upstream"'),
]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def arm_headers(arm: Arm) -> list[tuple[str, str]]:
    """Every header an arm's requests carry besides Host and Content-Length
    (a twin arm carries its twin's: Cfs sends Cf's token)."""
    return REQUESTS[arm.request].headers + ARM_HEADERS.get(arm.name, ARM_HEADERS.get(arm.twin or "", []))


def twins_of(name: str) -> list[str]:
    """The twin arms of an arm (Cf -> [Cfs])."""
    return [a.name for a in ARMS if a.twin == name]


def planned_load_seconds() -> float:
    """How long the load rounds take, from the settings: per round, every
    arm's wrk run (with its warmup unless a twin) and every fixed-rate run
    (not for twins), plus about 0.1 s to start each tool."""
    per_round = 0.0
    for a in ARMS:
        per_round += S["seconds"] + 0.1
        if not a.twin:
            per_round += S["rate_seconds"] + 0.1
            if S["warmup_seconds"] > 0:
                per_round += max(1, round(S["warmup_seconds"])) + 0.1
    return per_round * S["rounds"]


def count_sent(arm: str, requests: int) -> None:
    """Add requests sent to an arm to SENT."""
    SENT[arm] = SENT.get(arm, 0) + requests
