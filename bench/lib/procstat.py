"""Readings from /proc, and the Meter that records a run's CPU and noise.

Owns everything the harness learns about processes and the machine from
/proc: CPU ticks of a process and of its threads, RSS, system CPU and
steal, load average, kernel TCP memory, the children of a process (the
nginx workers), the CPU the run is on (`cpu_info`), and `Meter`, the
context manager around every measured run.
"""

from __future__ import annotations

import os
import platform
import resource
import time
from pathlib import Path

from settings import S, TICK


def cpu_ticks_path(path: str) -> int:
    """utime + stime from a /proc stat file, in clock ticks."""
    with open(path) as f:
        s = f.read()
    fields = s[s.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def cpu_ticks(pid: int) -> int:
    """utime + stime of a whole process (all threads), in clock ticks."""
    return cpu_ticks_path(f"/proc/{pid}/stat")


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


def _cache_sizes() -> dict[str, str]:
    """CPU 0's caches from sysfs: level (L1d, L1i, L2, L3) -> size, with
    "per core" or "shared by N" from the CPUs that share it."""
    out: dict[str, str] = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")):
        try:
            level = (idx / "level").read_text().strip()
            kind = (idx / "type").read_text().strip()
            size = (idx / "size").read_text().strip()
            shared = (idx / "shared_cpu_list").read_text().strip()
        except OSError:
            continue
        name = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        cpus = sum(int(b) - int(a) + 1 if "-" in r else 1
                   for r in shared.split(",") if r for a, _, b in [r.partition("-")])
        if size.endswith("K") and int(size[:-1]) >= 1024 and int(size[:-1]) % 1024 == 0:
            size = f"{int(size[:-1]) // 1024} MiB"
        elif size.endswith("K"):
            size = f"{size[:-1]} KiB"
        out[name] = size + (" per core" if cpus == 1 else f" shared by {cpus} CPUs")
    return out


def cpu_info() -> dict:
    """The CPU a run is on, from /proc/cpuinfo and sysfs: model name,
    family/model/stepping (a virtual machine's model name is often just
    "AMD EPYC"; the numbers tell the generation), clock, logical CPUs,
    sockets, cores and threads per core, caches, and whether it is a guest.
    `summary` is the one line the reports print."""
    procs: list[dict[str, str]] = [{}]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    if procs[-1]:
                        procs.append({})
                    continue
                key, _, value = line.partition(":")
                procs[-1][key.strip()] = value.strip()
    except OSError:
        pass
    procs = [p for p in procs if p]
    first = procs[0] if procs else {}
    num = lambda key: int(first[key]) if first.get(key, "").isdigit() else None  # noqa: E731
    sockets = len({p.get("physical id") for p in procs}) or None
    cores = num("cpu cores")
    siblings = num("siblings")
    threads = siblings // cores if cores and siblings else None
    try:
        mhz = round(float(first.get("cpu MHz", "")))
    except ValueError:
        mhz = None
    guest = "hypervisor" in first.get("flags", "").split()
    info = {
        "model": first.get("model name") or first.get("Model") or platform.processor() or "?",
        "vendor": first.get("vendor_id"),
        "family": num("cpu family"),
        "model_number": num("model"),
        "stepping": num("stepping"),
        "microcode": first.get("microcode"),
        "mhz": mhz,
        "logical_cpus": os.cpu_count(),
        "sockets": sockets,
        "cores_per_socket": cores,
        "threads_per_core": threads,
        "caches": _cache_sizes(),
        "virtual_machine": guest,
    }
    ident = ", ".join(f"{k} {info[v]}" for k, v in (("family", "family"), ("model", "model_number"),
                                                    ("stepping", "stepping")) if info[v] is not None)
    shape = (f" ({sockets} socket{'s' if sockets != 1 else ''} x {cores} cores x {threads} thread{'s' if threads != 1 else ''})"
             if sockets and cores and threads else "")
    caches = ", ".join(f"{k} {v}" for k, v in info["caches"].items() if k in ("L2", "L3"))
    info["summary"] = (f"{info['model']}{f' ({ident})' if ident else ''}, {info['logical_cpus']} logical CPUs{shape}"
                       + (f", {mhz} MHz" if mhz else "") + (f", {caches}" if caches else "")
                       + (", virtual machine" if guest else ""))
    return info


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
