#!/usr/bin/env python3
"""Upstream SSE stub for the time-to-first-event benchmark.

A minimal HTTP/1.1 keep-alive server (stdlib asyncio, no framework) that
answers every request with `Content-Type: text/event-stream`, chunked:
the response head, then the first event after `--delay-ms` (0 by default),
then `--events - 1` more events `--gap-ms` apart, then the end chunk. The
request body is read (Content-Length) and ignored.

Usage: sse_stub.py --port PORT [--events 3] [--gap-ms 2] [--delay-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n"
    b"\r\n"
)


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def event(k: int) -> bytes:
    data = json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": k}},
        separators=(",", ":"),
    )
    return chunk(f"id: {k}\nevent: message\ndata: {data}\n\n".encode())


async def serve(args: argparse.Namespace) -> None:
    events = [event(k) for k in range(args.events)]
    delay, gap = args.delay_ms / 1000.0, args.gap_ms / 1000.0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length:
                    await reader.readexactly(length)
                writer.write(HEAD)
                await writer.drain()
                if delay:
                    await asyncio.sleep(delay)
                for k, ev in enumerate(events):
                    if k:
                        await asyncio.sleep(gap)
                    writer.write(ev)
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", args.port, backlog=1024)
    async with server:
        await server.serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--events", type=int, default=3)
    p.add_argument("--gap-ms", type=float, default=2.0)
    p.add_argument("--delay-ms", type=float, default=0.0)
    args = p.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
