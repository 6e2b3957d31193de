"""The SSE client: time to the first event through each SSE arm.

Owns `SseClient` (one kept-alive connection per arm, timing the first
`data:` line and the gap to the second) and `sse_round`, which takes the
samples of one round with the arms interleaved in blocks. The upstream it
talks to (directly or through a proxy) is sse_stub.py.
"""

from __future__ import annotations

import socket
import time

from rawhttp import raw_request
from settings import S
from summary import pct


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
            "ttfe_p50_ms": round(pct(ttfe, 50), 4),
            "ttfe_p90_ms": round(pct(ttfe, 90), 4),
            "ttfe_p99_ms": round(pct(ttfe, 99), 4),
            "gap_p50_ms": round(pct(gaps, 50), 4),
            "batched": batched,
        }
    return out
