"""The server-side processes: starting, watching and stopping them.

Owns `Procs` (every long-running process the harness starts, pinned to the
server core), the port checks (`port_free`, `wait_port`, a Tollgate's
`/readyz` in `wait_ready`) and `render`, which fills the @PLACEHOLDERS@ of
a bench/conf template into the work directory. `wait_exposed` waits for a
Tollgate's virtual servers to expose their members' synced tools.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path

from settings import BENCH, PORTS, S, STUB_BODY, WORK, stub_list_body


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


def readyz_detail(port: int) -> dict:
    """A Tollgate's `/readyz?detail` document (the admin listener)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(f"GET /readyz?detail HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        raise RuntimeError(f"127.0.0.1:{port}/readyz?detail: a chunked answer, not expected")
    return json.loads(body)


def wait_exposed(port: int, expected: dict[str, int], timeout: float = 30.0) -> None:
    """Until each virtual server named in `expected` exposes that many
    tools (its members' catalogs synced), per `/readyz?detail` on the admin
    `port`. A virtual server lists from its members' catalogs, and the first
    sync runs in the background after start."""
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        try:
            virtuals = readyz_detail(port).get("virtual_servers", {})
            seen = {name: virtuals.get(name, {}).get("exposed", {}).get("tool") for name in expected}
            if seen == expected:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"virtual servers on admin port {port} expose {seen} tools, not {expected}, "
                       f"after {timeout}s (did the members' catalog sync fail? see the gateway's log)")


def approve_all(tollgate: str, config: Path, server: str, admin_port: int, expected: dict[str, int],
                timeout: float = 30.0) -> None:
    """Approve every definition of `server` (`tollgate catalog approve
    --all`) once its first sync has run, until the virtual servers named in
    `expected` expose that many tools: a virtual server answers lists from
    a governed member's approved entries."""
    deadline = time.monotonic() + timeout
    while True:
        subprocess.run([tollgate, "catalog", "approve", "--config", str(config), "--server", server, "--all",
                        "--by", "bench@example.com"], capture_output=True, check=False)
        try:
            wait_exposed(admin_port, expected, timeout=2.0)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise


def render(template: str, out: Path, extra: dict[str, str] | None = None) -> Path:
    text = (BENCH / "conf" / template).read_text()
    values = {"WORK": str(WORK), "STUB_BODY": STUB_BODY, **{f"PORT_{k}": str(v) for k, v in PORTS.items()}}
    if "@STUB_LIST_BODY@" in text:
        values["STUB_LIST_BODY"] = stub_list_body()
    values.update(extra or {})
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    left = re.search(r"@[A-Z_]+@", code)
    if left:
        raise RuntimeError(f"{template}: placeholder {left.group(0)} has no value")
    out.write_text(text)
    return out
