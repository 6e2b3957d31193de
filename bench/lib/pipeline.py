"""The full pipeline's fixtures and the audit-trail checks.

Owns what the Ca and Cf arms need beyond a bare proxy: the bench policies
(copied into the work directory with the repo's schema, then checked with
`tollgate policy validate` and `tollgate policy test`), Cf's bearer token
(`tollgate token mint`), and, after the gateways stopped, the audit trails:
counting their records against the requests sent, `tollgate audit verify
--sealed`, and the writer thread's CPU per record.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from settings import AUDITED, BENCH, FULL_ROUTE, ROOT, SENT, TOOLS, WORK, log, twins_of
from summary import serving_key


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


def count_records(files: list[Path]) -> dict:
    """Lines per kind, call records per decision outcome and per status,
    and the records that gap lines say were dropped, over the files."""
    kinds: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    statuses: dict[str, int] = {}
    dropped = 0
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
    return {"bytes": size, "kinds": kinds, "outcomes": outcomes, "statuses": statuses, "dropped": dropped}


def audit_trail(arm: str, directory: Path) -> dict:
    """Count the records a stopped gateway wrote, compare them with the
    requests sent to its arm and to the arm's twins (Cfs's calls go to Cf's
    process), and check the chain with `tollgate audit verify`."""
    files = sorted(directory.glob("*.jsonl"))
    n = count_records(files)
    size, kinds, outcomes, dropped = n["bytes"], n["kinds"], n["outcomes"], n["dropped"]
    p = subprocess.run([TOOLS["tollgate"], "audit", "verify", "--sealed", str(directory)],
                       capture_output=True, text=True, timeout=600)
    calls = kinds.get("call", 0)
    sent = sum(SENT.get(a, 0) for a in (arm, *twins_of(arm)))
    rec = {
        "arm": arm,
        "files": len(files),
        "bytes": size,
        "lines": sum(kinds.values()),
        "call_records": calls,
        "kinds": kinds,
        "outcomes": outcomes,
        "statuses": n["statuses"],
        "dropped": dropped,
        "requests_sent": sent,
        "arms_sent": [arm, *twins_of(arm)],
        "records_per_request": round(calls / sent, 4) if sent else None,
        "bytes_per_record": round(size / calls, 1) if calls else None,
        "verify_ok": p.returncode == 0,
        "verify": (p.stdout + p.stderr).strip().splitlines()[:3],
    }
    log(f"audit {arm}: {calls} call records for {sent} requests sent ({rec['records_per_request']}), "
        f"outcomes {outcomes}, dropped {dropped}, {size / 1e6:.1f} MB in {len(files)} file(s); "
        f"verify: {'ok' if rec['verify_ok'] else 'FAILED'}: {rec['verify'][0] if rec['verify'] else ''}")
    return rec


def check_audit_trails(doc: dict) -> None:
    """doc["audit"]: every audited arm's trail, complete and sealed now that
    the gateways stopped, with its writer thread's CPU and wakeups per
    record (from doc["threads"])."""
    for arm, directory in AUDITED.items():
        if (WORK / directory).is_dir():
            rec = audit_trail(arm, WORK / directory)
            writer = doc.get("threads", {}).get(serving_key(arm), {}).get("tollgate-audit")
            if writer and rec["call_records"]:
                rec["writer_cpu_us_per_record"] = round(writer["cpu_s"] * 1e6 / rec["call_records"], 2)
                rec["writer_wakeups_per_record"] = round(writer["voluntary_ctxt_switches"] / rec["call_records"], 3)
                log(f"audit {arm}: writer thread {rec['writer_cpu_us_per_record']} µs CPU per record, "
                    f"{rec['writer_wakeups_per_record']} wakeups per record")
            doc["audit"].append(rec)
