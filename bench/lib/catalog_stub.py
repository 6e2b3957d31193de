#!/usr/bin/env python3
"""Upstream catalog stub for the virtual-server arms: answers a catalog sync.

Serves, on each configured path, a fixed list of tools in MCP 2026-07-28:
`server/discover` (announcing 2026-07-28 and the `tools` capability) and
`tools/list` (every tool on one page), each answer carrying the request's
JSON-RPC id; any other method gets a JSON-RPC error -32601. Only the
gateway's catalog sync at start talks to it (a virtual server answers its
lists from the catalog, and calls go to the nginx stub), so this is the
standard library's threaded HTTP server, not a fast one.

Usage: catalog_stub.py --port PORT --serve PATH=FILE[:N] [--serve ...]

FILE is either a `tools/list` answer (`{"result": {"tools": [...]}}`, like
bench/conf/stub-tools-list.json) or the search fixture
(`{"servers": [{"server": S, "tools": [...]}]}`, tests/fixtures/search/
tools.json), whose tools are named `{S}_{name}`, as a virtual server over
those servers would expose them. `:N` serves only the first N tools.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODERN = "2026-07-28"


def load_tools(spec: str) -> list[dict]:
    """The tools of FILE[:N]."""
    file, _, count = spec.rpartition(":")
    if not file or not count.isdigit():
        file, count = spec, ""
    doc = json.loads(Path(file).read_text())
    if "servers" in doc:
        tools = [{**t, "name": f"{s['server']}_{t['name']}"} for s in doc["servers"] for t in s["tools"]]
    else:
        tools = doc["result"]["tools"]
    if count:
        if len(tools) < int(count):
            raise SystemExit(f"{file} has {len(tools)} tools, fewer than {count}")
        tools = tools[: int(count)]
    return tools


def answer(message: dict, tools: list[dict]) -> dict:
    method, rid = message.get("method"), message.get("id")
    if method == "server/discover":
        result = {"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "bench-catalog-stub", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": tools}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def handler(catalogs: dict[str, list[dict]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            tools = catalogs.get(self.path.split("?", 1)[0])
            if tools is None:
                self.reply(404, b"")
                return
            try:
                message = json.loads(body)
            except ValueError:
                self.reply(400, b"")
                return
            if "id" not in message:  # a notification
                self.reply(202, b"")
                return
            self.reply(200, json.dumps(answer(message, tools), separators=(",", ":")).encode())

        def do_DELETE(self) -> None:  # noqa: N802
            self.reply(405, b"")

        def reply(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            if payload:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_args) -> None:
            pass

    return Handler


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--serve", action="append", required=True, metavar="PATH=FILE[:N]")
    args = p.parse_args()
    catalogs = {}
    for spec in args.serve:
        path, _, source = spec.partition("=")
        catalogs[path] = load_tools(source)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(catalogs))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
