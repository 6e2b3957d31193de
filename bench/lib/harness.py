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
  Cf  Tollgate, full pipeline: verify route + bearer JWT (dev issuer, token
      cache) + scope + Cedar decision over 100 policies + audit (batch),
      own process; the load carries `Authorization: Bearer <token>`

Settings come from the environment; see bench/README.md.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402

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
    "warmup_seconds": env_num("BENCH_WARMUP", 1 if QUICK else 2, float),
    "conns": env_num("BENCH_CONNS", 32),
    "rate": env_num("BENCH_RATE", 1000),
    "rate_conns": env_num("BENCH_RATE_CONNS", 16),
    "idle_conns": env_num("BENCH_IDLE_CONNS", 1000 if QUICK else 2000),
    "sse_samples": env_num("BENCH_SSE_SAMPLES", 100 if QUICK else 200),
    "sse_events": 3,
    "sse_gap_ms": 2.0,
    "body_bytes": env_num("BENCH_BODY_BYTES", 1024),
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
    "C_ADMIN": S["port_base"] + 10,
    "CA_ADMIN": S["port_base"] + 11,
    "CF_ADMIN": S["port_base"] + 12,
}

MCP_HEADERS = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "echo"),
]
STUB_BODY = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}'

# The throughput / fixed-rate arms: (name, port, path, description).
ARMS = [
    ("A", PORTS["A"], "/mcp", "direct to the upstream stub"),
    ("B", PORTS["B"], "/mcp/bench", "nginx proxy_pass (keep-alive, proxy_buffering off)"),
    ("Cu", PORTS["C"], "/mcp/bench", 'Tollgate, header_trust = "upstream" (zero-parse)'),
    ("Cv", PORTS["C"], "/mcp/bench-verify", 'Tollgate, header_trust = "verify" (body scan)'),
    ("Ca", PORTS["CA"], "/mcp/bench-audit", "Tollgate, verify + audit trail (batch durability)"),
    ("Cf", PORTS["CF"], "/mcp/bench-full",
     "Tollgate, full pipeline: verify + bearer JWT (cached) + scope + Cedar (100 policies) + audit (batch)"),
]
# Headers one arm sends besides MCP_HEADERS (Cf's bearer token, minted at start).
ARM_HEADERS: dict[str, list[tuple[str, str]]] = {}
# Requests sent to each arm over the whole run (sanity checks, warmups,
# measured runs), to compare with the audit records written.
SENT: dict[str, int] = {}
# The Tollgate processes with an audit trail: arm -> directory (in WORK).
AUDITED = {"Ca": "audit-Ca", "Cf": "audit-Cf"}
FULL_ROUTE = "bench-full"
SSE_ARMS = [
    ("A", PORTS["SSE"], "/mcp", "direct to the SSE stub"),
    ("B", PORTS["B"], "/mcp/sse", "nginx proxy_pass, proxy_buffering off"),
    ("Cu", PORTS["C"], "/mcp/sse", 'Tollgate, header_trust = "upstream"'),
]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# /proc readings


def cpu_ticks(pid: int) -> int:
    """utime + stime of a whole process (all threads), in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def thread_cpu(pid: int) -> dict[str, dict]:
    """Per thread name (tokio workers, the audit writer, ...): CPU seconds
    (utime+stime), voluntary and involuntary context switches, summed over
    the threads of that name, since the process started."""
    out: dict[str, dict] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        base = f"/proc/{pid}/task/{tid}"
        try:
            comm = open(f"{base}/comm").read().strip()
            ticks = cpu_ticks_path(f"{base}/stat")
            sw = {}
            with open(f"{base}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
                        sw[key] = int(value)
        except OSError:
            continue
        e = out.setdefault(comm, {"threads": 0, "cpu_s": 0.0, "voluntary_ctxt_switches": 0, "nonvoluntary_ctxt_switches": 0})
        e["threads"] += 1
        e["cpu_s"] = round(e["cpu_s"] + ticks / TICK, 2)
        for k, v in sw.items():
            e[k] += v
    return out


def cpu_ticks_path(path: str) -> int:
    with open(path) as f:
        s = f.read()
    fields = s[s.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(value.split()[0])
    return out


def sys_cpu() -> dict[str, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    # user nice system idle iowait irq softirq steal. Without
    # IRQ_TIME_ACCOUNTING the kernel charges irq/softirq ticks to the
    # interrupted task too, so they count as busy here.
    return {"busy": v[0] + v[1] + v[2] + v[5] + v[6], "steal": v[7]}


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def sockstat_tcp_mem_kib() -> int:
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                parts = line.split()
                return int(parts[parts.index("mem") + 1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    return 0


def children_of(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                s = f.read()
        except OSError:
            continue
        if int(s[s.rindex(")") + 2 :].split()[1]) == pid:
            kids.append(int(entry))
    return kids


class Meter:
    """CPU of the server-side processes, the client and everything else
    over one run. `others` is the CPU that none of our processes used (in
    cores): another tenant, a build. `steal` is time the hypervisor gave
    our vCPUs to other guests. A run is noisy when others exceeds
    BENCH_NOISY_CORES (0.5 core) or steal exceeds BENCH_NOISY_STEAL (0.1
    core): on this VM even 0.2 core of steal multiplies latencies."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids

    def __enter__(self):
        self.t0 = time.monotonic()
        self.ticks0 = {k: cpu_ticks(p) for k, p in self.pids.items()}
        self.sys0 = sys_cpu()
        self.load0 = loadavg()
        self.kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.self0 = resource.getrusage(resource.RUSAGE_SELF)
        return self

    def __exit__(self, *exc):
        wall = time.monotonic() - self.t0
        ticks = {k: cpu_ticks(p) - self.ticks0[k] for k, p in self.pids.items()}
        sys1 = sys_cpu()
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        me = resource.getrusage(resource.RUSAGE_SELF)
        client = (kids.ru_utime - self.kids0.ru_utime) + (kids.ru_stime - self.kids0.ru_stime)
        client += (me.ru_utime - self.self0.ru_utime) + (me.ru_stime - self.self0.ru_stime)
        server = sum(ticks.values()) / TICK
        busy = (sys1["busy"] - self.sys0["busy"]) / TICK
        others = max(0.0, busy - server - client) / wall
        steal = (sys1["steal"] - self.sys0["steal"]) / TICK / wall
        self.result = {
            "wall_s": round(wall, 3),
            "cpu_ticks": ticks,
            "client_cpu_s": round(client, 3),
            "client_cores": round(client / wall, 3),
            "others_cores": round(others, 3),
            "steal_cores": round(steal, 3),
            "loadavg": [self.load0, loadavg()],
            "noisy": others > S["noisy_cores"] or steal > S["noisy_steal"],
        }
        return False


# --------------------------------------------------------------------------
# Processes


class Procs:
    """Every long-running process the harness starts, stopped in reverse
    order on exit. Their PIDs also go to WORK/pids so bench/run.sh can kill
    them if this process dies without cleaning up."""

    def __init__(self):
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        logf = open(WORK / f"{name}.log", "wb")
        p = subprocess.Popen(
            ["taskset", "-c", S["server_cpu"], *argv],
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append((name, p))
        with open(WORK / "pids", "a") as f:
            f.write(f"{p.pid}\n")
        return p

    def check(self) -> None:
        for name, p in self.procs:
            if p.poll() is not None:
                tail = (WORK / f"{name}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{name} exited with {p.returncode}:\n{tail}")

    def stop_all(self) -> None:
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()


def wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def port_free(port: int) -> bool:
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_ready(port: int, timeout: float = 20.0) -> None:
    """Until the admin listener's /readyz answers 200 (keys, policies and
    the audit trail are loaded)."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
                head = s.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
            if " 200 " in head + " ":
                return
            last = head
        except OSError as e:
            last = str(e)
        time.sleep(0.1)
    raise RuntimeError(f"127.0.0.1:{port}/readyz not ready after {timeout}s ({last})")


def render(template: str, out: Path, extra: dict[str, str] | None = None) -> Path:
    text = (BENCH / "conf" / template).read_text()
    values = {"WORK": str(WORK), "STUB_BODY": STUB_BODY, **{f"PORT_{k}": str(v) for k, v in PORTS.items()}}
    values.update(extra or {})
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    left = re.search(r"@[A-Z_]+@", code)
    if left:
        raise RuntimeError(f"{template}: placeholder {left.group(0)} has no value")
    out.write_text(text)
    return out


# --------------------------------------------------------------------------
# Raw HTTP/1.1 over sockets (idle connections, SSE, sanity checks)


def make_body(size: int) -> bytes:
    doc = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"text": ""},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        },
    }
    empty = len(json.dumps(doc, separators=(",", ":")))
    filler = "The quick brown fox jumps over the lazy dog. "
    text = (filler * (size // len(filler) + 1))[: max(0, size - empty)]
    doc["params"]["arguments"]["text"] = text
    return json.dumps(doc, separators=(",", ":")).encode()


def raw_request(port: int, path: str, body: bytes, extra: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in MCP_HEADERS + (extra or [])]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("connection closed before the response head")
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("connection closed in the body")
            rest += data
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("connection closed in the body")
            rest += data
    return status, headers, rest


def dechunk(data: bytes) -> bytes:
    out, rest = b"", data
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        n = int(size_line.split(b";")[0], 16)
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2 :]
    return out


def sanity_check(name: str, port: int, path: str, body: bytes, sse: bool = False,
                 extra: list[tuple[str, str]] | None = None) -> None:
    """One request: 200 with the right content type and, for JSON, a
    JSON-RPC result (a policy denial is a 200 with a JSON-RPC error)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw_request(port, path, body, extra))
        status, headers, payload = read_response(s)
    ctype = headers.get("content-type", "")
    want = "text/event-stream" if sse else "application/json"
    if status != 200 or not ctype.startswith(want):
        raise RuntimeError(f"arm {name} ({port}{path}) answered {status} {ctype}: {payload[:400]!r}")
    if not sse:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            payload = dechunk(payload)
        try:
            doc = json.loads(payload)
        except ValueError as e:
            raise RuntimeError(f"arm {name} ({port}{path}): the answer is not JSON ({e}): {payload[:400]!r}") from None
        if not isinstance(doc, dict) or "result" not in doc or "error" in doc:
            raise RuntimeError(f"arm {name} ({port}{path}) answered 200 without a JSON-RPC result: {payload[:400]!r}")


# --------------------------------------------------------------------------
# Load generators

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk_lua(body_path: Path, name: str = "post", extra: list[tuple[str, str]] | None = None) -> Path:
    lua = WORK / f"{name}.lua"
    head = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in MCP_HEADERS + (extra or []))
    lua.write_text(
        f'local f = assert(io.open("{body_path}", "rb"))\n'
        "wrk.body = f:read(\"*a\")\nf:close()\n"
        'wrk.method = "POST"\n'
        f"{head}\n"
    )
    return lua


def run_wrk(url: str, seconds: float, lua: Path) -> dict:
    argv = [
        "taskset", "-c", S["client_cpu"], TOOLS["wrk"], "-t1", f"-c{S['conns']}",
        f"-d{max(1, round(seconds))}s", "--latency", "-s", str(lua), url,
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sockerr = re.search(r"Socket errors:.*", out)
    pct = {}
    for p, v, u in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
        pct[f"p{p}_ms"] = round(float(v) * UNITS[u], 4)
    if not rps or not total:
        raise RuntimeError(f"cannot parse wrk output:\n{out}")
    return {
        "rps": float(rps.group(1)),
        "requests": int(total.group(1)),
        "errors": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sockerr.group(0) if sockerr else None,
        **pct,
    }


def run_oha(url: str, seconds: float, body_path: Path, extra: list[tuple[str, str]] | None = None) -> dict:
    argv = [
        "taskset", "-c", S["client_cpu"], TOOLS["oha"], "-z", f"{seconds}s",
        "-w", "-q", str(S["rate"]), "--latency-correction", "-c", str(S["rate_conns"]),
        "--no-tui", "--output-format", "json", "-m", "POST", "-D", str(body_path),
    ]
    for k, v in MCP_HEADERS + (extra or []):
        argv += ["-H", f"{k}: {v}"]
    argv.append(url)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"cannot parse oha output ({e}):\n{proc.stdout[:2000]}\n{proc.stderr[:2000]}") from e
    lat = doc.get("latencyPercentiles", {})
    codes = {str(k): int(v) for k, v in (doc.get("statusCodeDistribution") or {}).items()}
    # Requests cut at the deadline are not failures of the arm.
    errors = {str(k): int(v) for k, v in (doc.get("errorDistribution") or {}).items() if "deadline" not in str(k)}
    ms = lambda key: round(float(lat[key]) * 1e3, 4) if lat.get(key) is not None else None  # noqa: E731
    return {
        "rps": round(float(doc["summary"]["requestsPerSec"]), 1),
        "requests": sum(codes.values()),
        "status": codes,
        "errors": errors,
        "p50_ms": ms("p50"),
        "p90_ms": ms("p90"),
        "p99_ms": ms("p99"),
        "p999_ms": ms("p99.9"),
    }


# --------------------------------------------------------------------------
# Phases


def idle_memory(name: str, port: int, path: str, pid: int, body: bytes, n: int) -> dict:
    """Open n keep-alive connections, one request each, hold them idle, and
    report the RSS delta of the serving process per connection."""
    req = raw_request(port, path, body)
    time.sleep(0.3)
    before = proc_status(pid)["VmRSS"]
    kbefore = sockstat_tcp_mem_kib()
    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(req)
            status, _, _ = read_response(s)
            if status != 200:
                raise RuntimeError(f"idle-connection setup: {name} answered {status}")
            socks.append(s)
        time.sleep(1.0)
        st = proc_status(pid)
        kafter = sockstat_tcp_mem_kib()
    finally:
        for s in socks:
            s.close()
    time.sleep(0.5)
    closed = proc_status(pid)["VmRSS"]
    per = (st["VmRSS"] - before) * 1024 / n
    rec = {
        "arm": name,
        "conns": n,
        "rss_before_kib": before,
        "rss_idle_kib": st["VmRSS"],
        "rss_after_close_kib": closed,
        "bytes_per_conn": round(per, 1),
        "kernel_tcp_mem_delta_kib": kafter - kbefore,
    }
    log(f"idle {name}: {n} conns, RSS {before} -> {st['VmRSS']} KiB = {per / 1024:.2f} KiB/conn "
        f"(kernel TCP mem, both ends: +{kafter - kbefore} KiB)")
    return rec


class SseClient:
    """One kept-alive connection to an SSE arm. `sample()` sends a request
    and returns (time to the first `data:` line, arrival gap between events
    1 and 2, whether both arrived in one read), in ms."""

    def __init__(self, port: int, path: str, body: bytes):
        self.where = f"{port}{path}"
        self.req = raw_request(port, path, body)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(5):  # warmup, and check the answer once
            buf = self._exchange()[3]
            head = buf.split(b"\r\n\r\n")[0].lower()
            if not buf.startswith(b"HTTP/1.1 200") or b"text/event-stream" not in head:
                raise RuntimeError(f"SSE arm {self.where}: unexpected answer {buf[:300]!r}")

    def _exchange(self):
        pc = time.perf_counter_ns
        s = self.sock
        t0 = pc()
        s.sendall(self.req)
        buf, t1, t2 = b"", None, None
        while True:
            data = s.recv(65536)
            now = pc()
            if not data:
                raise ConnectionError(f"SSE connection to {self.where} closed")
            buf += data
            n = buf.count(b"data:")
            if t1 is None and n >= 1:
                t1 = now
                if n >= 2:
                    t2 = now
            elif t2 is None and n >= 2:
                t2 = now
            if buf.endswith(b"\r\n0\r\n\r\n"):
                break
        return t0, t1, t2, buf

    def sample(self) -> tuple[float, float, bool]:
        t0, t1, t2, buf = self._exchange()
        if t1 is None or buf.count(b"data:") != S["sse_events"]:
            raise RuntimeError(f"SSE arm {self.where}: expected {S['sse_events']} events, got {buf[:600]!r}")
        return (t1 - t0) / 1e6, ((t2 - t1) / 1e6 if t2 is not None else 0.0), t2 == t1

    def close(self) -> None:
        self.sock.close()


def sse_round(clients: dict[str, SseClient], samples: int) -> dict[str, dict]:
    """`samples` first-event timings per arm, taken in blocks of
    S["sse_block"] that cycle through the arms, so that a burst of noise
    hits every arm alike."""
    got = {name: ([], [], 0) for name in clients}
    taken = 0
    while taken < samples:
        k = min(S["sse_block"], samples - taken)
        for name, client in clients.items():
            ttfe, gaps, batched = got[name]
            for _ in range(k):
                t, g, b = client.sample()
                ttfe.append(t)
                gaps.append(g)
                batched += b
            got[name] = (ttfe, gaps, batched)
        taken += k
    out = {}
    for name, (ttfe, gaps, batched) in got.items():
        out[name] = {
            "samples": len(ttfe),
            "ttfe_p50_ms": round(report.pct(ttfe, 50), 4),
            "ttfe_p90_ms": round(report.pct(ttfe, 90), 4),
            "ttfe_p99_ms": round(report.pct(ttfe, 99), 4),
            "gap_p50_ms": round(report.pct(gaps, 50), 4),
            "batched": batched,
        }
    return out


# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# The full pipeline: policies, token, audit trail


def prepare_policies() -> dict:
    """WORK/policies: bench/conf/policies (policies and their tests) with
    the repo's current schema, validated and tested with the gateway's own
    commands before anything starts."""
    src, dst = BENCH / "conf" / "policies", WORK / "policies"
    (dst / "tests").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "policies" / "schema.cedarschema", dst / "schema.cedarschema")
    for f in src.glob("*.cedar"):
        shutil.copy(f, dst / f.name)
    for f in (src / "tests").glob("*.toml"):
        shutil.copy(f, dst / "tests" / f.name)
    out = {}
    for cmd in ("validate", "test"):
        p = subprocess.run([TOOLS["tollgate"], "policy", cmd, "--policies", str(dst)],
                           capture_output=True, text=True, timeout=60)
        text = (p.stdout + p.stderr).strip()
        if p.returncode != 0:
            raise RuntimeError(f"tollgate policy {cmd} failed on the bench policies:\n{text}")
        out[cmd] = text.splitlines()[-1] if text else ""
    policies = sum(f.read_text().count("@id(") for f in dst.glob("*.cedar"))
    log(f"bench policies: {policies} policies; validate: {out['validate']}; test: {out['test']}")
    return {"policies": policies, "validate": out["validate"], "test": out["test"]}


def mint_token(config: Path) -> str:
    argv = [TOOLS["tollgate"], "token", "mint", "--config", str(config), "--sub", "bench", "--team", "bench",
            "--scope", "mcp:tools", "--server", FULL_ROUTE, "--ttl", "12h"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    token = p.stdout.strip()
    if p.returncode != 0 or token.count(".") != 2:
        raise RuntimeError(f"tollgate token mint failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return token


def audit_trail(arm: str, directory: Path) -> dict:
    """Count the records a stopped gateway wrote, compare them with the
    requests sent to its arm, and check the chain with `tollgate audit
    verify`."""
    kinds: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    statuses: dict[str, int] = {}
    dropped = 0
    files = sorted(directory.glob("*.jsonl"))
    size = 0
    for path in files:
        size += path.stat().st_size
        with open(path, "rb") as f:
            for line in f:
                rec = json.loads(line)
                kind = rec.get("kind", "?")
                kinds[kind] = kinds.get(kind, 0) + 1
                if kind == "call":
                    o = (rec.get("decision") or {}).get("outcome", "?")
                    outcomes[o] = outcomes.get(o, 0) + 1
                    st = str(rec.get("status", "?"))
                    statuses[st] = statuses.get(st, 0) + 1
                elif kind == "gap":
                    dropped += int(rec.get("dropped", 0))
    p = subprocess.run([TOOLS["tollgate"], "audit", "verify", "--sealed", str(directory)],
                       capture_output=True, text=True, timeout=600)
    calls = kinds.get("call", 0)
    sent = SENT.get(arm, 0)
    rec = {
        "arm": arm,
        "files": len(files),
        "bytes": size,
        "lines": sum(kinds.values()),
        "call_records": calls,
        "kinds": kinds,
        "outcomes": outcomes,
        "statuses": statuses,
        "dropped": dropped,
        "requests_sent": sent,
        "records_per_request": round(calls / sent, 4) if sent else None,
        "bytes_per_record": round(size / calls, 1) if calls else None,
        "verify_ok": p.returncode == 0,
        "verify": (p.stdout + p.stderr).strip().splitlines()[:3],
    }
    log(f"audit {arm}: {calls} call records for {sent} requests sent ({rec['records_per_request']}), "
        f"outcomes {outcomes}, dropped {dropped}, {size / 1e6:.1f} MB in {len(files)} file(s); "
        f"verify: {'ok' if rec['verify_ok'] else 'FAILED'}: {rec['verify'][0] if rec['verify'] else ''}")
    return rec


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


def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not TOOLS["tollgate"] or not Path(TOOLS["tollgate"]).is_file():
        raise SystemExit("TOLLGATE_BIN is not set to the release binary (run bench/run.sh)")
    busy = [f"{k}={p}" for k, p in PORTS.items() if not port_free(p)]
    if busy:
        raise SystemExit(f"ports in use: {', '.join(busy)}; set BENCH_PORT_BASE to a free range")

    started = dt.datetime.now(dt.timezone.utc)
    sha = git("rev-parse", "HEAD") or "unknown"
    short = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    body = make_body(S["body_bytes"])
    body_path = WORK / "body.json"
    body_path.write_bytes(body)
    lua = wrk_lua(body_path)

    doc = {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "git": {"sha": sha, "short": short, "dirty": dirty},
        "host": {
            "cpus": os.cpu_count(),
            "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
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
        "arms": {name: desc for name, _, _, desc in ARMS},
        "throughput": [],
        "fixed_rate": [],
        "idle": [],
        "sse": [],
        "audit": [],
    }

    procs = Procs()

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        # ---- start the server side, all on the server core
        log(f"work dir {WORK}; ports {PORTS}; server core {S['server_cpu']}, client core {S['client_cpu']}")
        stub = procs.start("nginx-stub", [TOOLS["nginx"], "-p", str(WORK), "-c", str(render("nginx-stub.conf", WORK / "nginx-stub.conf"))])
        sse = procs.start("sse-stub", [sys.executable, str(LIB / "sse_stub.py"), "--port", str(PORTS["SSE"]),
                                       "--events", str(S["sse_events"]), "--gap-ms", str(S["sse_gap_ms"])])
        wait_port(PORTS["A"])
        wait_port(PORTS["SSE"])
        proxy = procs.start("nginx-proxy", [TOOLS["nginx"], "-p", str(WORK), "-c", str(render("nginx-proxy.conf", WORK / "nginx-proxy.conf"))])
        gw = procs.start("tollgate", [TOOLS["tollgate"], "serve", "--config", str(render("tollgate.toml", WORK / "tollgate.toml")), "--log", "warn"])
        # Ca and Cf: audit, policy and token issuers are settings of the
        # whole process, so each has its own.
        gwa = procs.start("tollgate-audit", [TOOLS["tollgate"], "serve", "--config",
                                             str(render("tollgate-audit.toml", WORK / "tollgate-audit.toml")), "--log", "warn"])
        doc["pipeline"] = prepare_policies()
        full_conf = render("tollgate-full.toml", WORK / "tollgate-full.toml")
        token = mint_token(full_conf)
        doc["pipeline"].update({"route": FULL_ROUTE, "token": {"sub": "bench", "team": "bench", "scope": "mcp:tools",
                                                               "issuer": "dev issuer (ES256)", "bytes": len(token)}})
        ARM_HEADERS["Cf"] = [("Authorization", f"Bearer {token}")]
        gwf = procs.start("tollgate-full", [TOOLS["tollgate"], "serve", "--config", str(full_conf), "--log", "warn"])
        wait_port(PORTS["B"])
        for key in ("C", "CA", "CF"):
            wait_port(PORTS[key])
            wait_ready(PORTS[f"{key}_ADMIN"])
        procs.check()
        luas = {name: wrk_lua(body_path, f"post-{name}", ARM_HEADERS[name]) if name in ARM_HEADERS else lua
                for name, _, _, _ in ARMS}
        time.sleep(0.3)
        stub_worker = children_of(stub.pid)
        proxy_worker = children_of(proxy.pid)
        if len(stub_worker) != 1 or len(proxy_worker) != 1:
            raise RuntimeError(f"expected one nginx worker each, got {stub_worker} and {proxy_worker}")
        serving = {"A": stub_worker[0], "B": proxy_worker[0], "Cu": gw.pid, "Cv": gw.pid, "Ca": gwa.pid, "Cf": gwf.pid}
        meter_pids = {"stub": stub_worker[0], "nginx": proxy_worker[0], "tollgate": gw.pid, "sse": sse.pid,
                      "tollgate_audit": gwa.pid, "tollgate_full": gwf.pid}
        rss_pids = {"stub": stub_worker[0], "nginx": proxy_worker[0], "tollgate": gw.pid,
                    "tollgate_audit": gwa.pid, "tollgate_full": gwf.pid}
        doc["baseline_rss_kib"] = {k: proc_status(p)["VmRSS"] for k, p in rss_pids.items()}
        for name, port, path, _ in ARMS:
            sanity_check(name, port, path, body, extra=ARM_HEADERS.get(name))
            SENT[name] = SENT.get(name, 0) + 1
        for name, port, path, _ in SSE_ARMS:
            sanity_check(f"sse-{name}", port, path, body, sse=True)
        log(f"all arms answer 200; idle RSS: {doc['baseline_rss_kib']} KiB")

        # ---- memory per idle keep-alive connection (fresh processes, before load)
        for name, port, path, _ in ARMS[:3]:
            doc["idle"].append(idle_memory(name, port, path, serving[name], body, S["idle_conns"]))
            procs.check()

        # ---- interleaved rounds: throughput then fixed rate, every arm
        secs = S["seconds"]
        for r in range(1, S["rounds"] + 1):
            for name, port, path, _ in ARMS:
                url = f"http://127.0.0.1:{port}{path}"
                if S["warmup_seconds"] > 0:
                    SENT[name] = SENT.get(name, 0) + run_wrk(url, S["warmup_seconds"], luas[name])["requests"]
                with Meter(meter_pids) as m:
                    res = run_wrk(url, secs, luas[name])
                SENT[name] = SENT.get(name, 0) + res["requests"]
                rec = {"arm": name, "round": r, **res, **m.result}
                doc["throughput"].append(rec)
                log(f"round {r}/{S['rounds']} c={S['conns']} {name:>2}: {res['rps']:>9.0f} rps"
                    f"  others {m.result['others_cores']:.2f} steal {m.result['steal_cores']:.2f}{'  NOISY' if m.result['noisy'] else ''}"
                    f"{'  ERRORS ' + str(res['errors']) if res['errors'] else ''}")
            for name, port, path, _ in ARMS:
                url = f"http://127.0.0.1:{port}{path}"
                with Meter(meter_pids) as m:
                    res = run_oha(url, secs, body_path, ARM_HEADERS.get(name))
                SENT[name] = SENT.get(name, 0) + res["requests"]
                rec = {"arm": name, "round": r, **res, **m.result}
                doc["fixed_rate"].append(rec)
                bad = sum(v for k, v in res["status"].items() if k != "200") + sum(res["errors"].values())
                log(f"round {r}/{S['rounds']} q={S['rate']} {name:>2}: p50 {res['p50_ms']:.3f} ms  p99 {res['p99_ms']:.3f} ms"
                    f"  others {m.result['others_cores']:.2f} steal {m.result['steal_cores']:.2f}{'  NOISY' if m.result['noisy'] else ''}"
                    f"{'  ERRORS ' + str(bad) if bad else ''}")
            procs.check()
            for key, pid in rss_pids.items():
                doc.setdefault("rss_after_rounds_kib", {})[key] = proc_status(pid)

        # ---- SSE time to first event, arms interleaved in blocks within each round
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
        # CPU per thread of each Tollgate process over the whole run: shows
        # the audit writer thread apart from the request path.
        doc["threads"] = {k: thread_cpu(p) for k, p in rss_pids.items() if k.startswith("tollgate")}
    finally:
        procs.stop_all()

    # ---- the audit trails, complete and sealed now that the gateways stopped
    for arm, directory in AUDITED.items():
        if (WORK / directory).is_dir():
            rec = audit_trail(arm, WORK / directory)
            writer = doc.get("threads", {}).get(report.serving_key(arm), {}).get("tollgate-audit")
            if writer and rec["call_records"]:
                rec["writer_cpu_us_per_record"] = round(writer["cpu_s"] * 1e6 / rec["call_records"], 2)
                rec["writer_wakeups_per_record"] = round(writer["voluntary_ctxt_switches"] / rec["call_records"], 3)
                log(f"audit {arm}: writer thread {rec['writer_cpu_us_per_record']} µs CPU per record, "
                    f"{rec['writer_wakeups_per_record']} wakeups per record")
            doc["audit"].append(rec)

    doc["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    doc["summary"] = report.summarize(doc)
    stem = f"{started.strftime('%Y-%m-%d')}-{short}"
    json_path = RESULTS / f"{stem}.json"
    n = 2
    while json_path.exists():
        json_path = RESULTS / f"{stem}-{n}.json"
        n += 1
    md_path = json_path.with_suffix(".md")
    doc["files"] = {"json": str(json_path.relative_to(ROOT)), "markdown": str(md_path.relative_to(ROOT))}
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    md = report.markdown(doc)
    md_path.write_text(md)
    print(md)
    print(f"\nwritten: {json_path.relative_to(ROOT)} and {md_path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); every process started was stopped")
        sys.exit(130)
