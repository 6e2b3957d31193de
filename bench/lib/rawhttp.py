"""Raw HTTP/1.1 over sockets: the request body, sanity checks, idle memory.

Owns the benchmark's request (`make_body`, `raw_request`), reading a
response off a socket, the one-request sanity check of every arm before
the load starts, the idle keep-alive connection test (`idle_memory`),
which needs many sockets held open rather than a load tool, and
`KeepAlive`, one connection sending an arm's request over and over (the
callgrind and allocation counts). The SSE client built on the same
requests is in sse_client.py.
"""

from __future__ import annotations

import json
import socket
import time

from procstat import proc_status, sockstat_tcp_mem_kib
from settings import MCP_HEADERS, log


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


def raw_request(port: int, path: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> bytes:
    """A POST of body with these headers (default: the tools/call ones)."""
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in (MCP_HEADERS if headers is None else headers)]
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


class KeepAlive:
    """One kept-alive connection sending one arm's request, sequentially,
    each answer read in full and required to be a 200."""

    def __init__(self, arm: str, port: int, path: str, body: bytes, headers: list[tuple[str, str]]):
        self.arm = arm
        self.req = raw_request(port, path, body, headers)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, n: int) -> None:
        s, req = self.sock, self.req
        for _ in range(n):
            s.sendall(req)
            status, headers, payload = read_response(s)
            if status != 200:
                raise RuntimeError(f"arm {self.arm} answered {status}: {payload[:300]!r}")
            if headers.get("connection", "").lower() == "close":
                raise RuntimeError(f"arm {self.arm} closed the kept-alive connection")

    def close(self) -> None:
        self.sock.close()


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
                 headers: list[tuple[str, str]] | None = None, result_key: str | None = None) -> None:
    """One request: 200 with the right content type and, for JSON, a
    JSON-RPC result (a policy denial is a 200 with a JSON-RPC error), with
    a `result_key` list in it when given (`tools` for a tools/list)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw_request(port, path, body, headers))
        status, answer, payload = read_response(s)
    ctype = answer.get("content-type", "")
    want = "text/event-stream" if sse else "application/json"
    if status != 200 or not ctype.startswith(want):
        raise RuntimeError(f"arm {name} ({port}{path}) answered {status} {ctype}: {payload[:400]!r}")
    if not sse:
        if answer.get("transfer-encoding", "").lower() == "chunked":
            payload = dechunk(payload)
        try:
            doc = json.loads(payload)
        except ValueError as e:
            raise RuntimeError(f"arm {name} ({port}{path}): the answer is not JSON ({e}): {payload[:400]!r}") from None
        if not isinstance(doc, dict) or "result" not in doc or "error" in doc:
            raise RuntimeError(f"arm {name} ({port}{path}) answered 200 without a JSON-RPC result: {payload[:400]!r}")
        if result_key and not (isinstance(doc["result"], dict) and isinstance(doc["result"].get(result_key), list)
                               and doc["result"][result_key]):
            raise RuntimeError(f"arm {name} ({port}{path}): the result has no `{result_key}` list: {payload[:400]!r}")


def idle_memory(name: str, port: int, path: str, pid: int, body: bytes, n: int,
                headers: list[tuple[str, str]] | None = None) -> dict:
    """Open n keep-alive connections, one request each, hold them idle, and
    report the RSS delta of the serving process per connection."""
    req = raw_request(port, path, body, headers)
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
