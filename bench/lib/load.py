"""The load generators: wrk (closed loop) and oha (fixed rate).

Owns the command lines of both tools, pinned to the client core, the wrk
Lua script that sends an arm's request body and headers, and the parsing of
their output into the per-run records of the result.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from settings import S, TOOLS, WORK

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk_lua(body_path: Path, name: str, headers: list[tuple[str, str]]) -> Path:
    """A wrk script that POSTs the body in body_path with these headers."""
    lua = WORK / f"{name}.lua"
    head = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in headers)
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
    return parse_wrk(out)


def parse_wrk(out: str) -> dict:
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


def run_oha(url: str, seconds: float, body_path: Path, headers: list[tuple[str, str]]) -> dict:
    argv = [
        "taskset", "-c", S["client_cpu"], TOOLS["oha"], "-z", f"{seconds}s",
        "-w", "-q", str(S["rate"]), "--latency-correction", "-c", str(S["rate_conns"]),
        "--no-tui", "--output-format", "json", "-m", "POST", "-D", str(body_path),
    ]
    for k, v in headers:
        argv += ["-H", f"{k}: {v}"]
    argv.append(url)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"cannot parse oha output ({e}):\n{proc.stdout[:2000]}\n{proc.stderr[:2000]}") from e
    return parse_oha(doc)


def parse_oha(doc: dict) -> dict:
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
