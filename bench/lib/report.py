#!/usr/bin/env python3
"""Summary and markdown for a benchmark result (bench/results/*.json).

Used by harness.py at the end of a run; also runnable on its own to
re-render a result: `python3 bench/lib/report.py bench/results/X.json`
prints the markdown (add `--write` to rewrite the .md beside it).

Every headline number is a median over rounds of a per-round comparison
(PERF.md §3). Rounds in which a run was noisy (other processes used more
than BENCH_NOISY_CORES during it) are left out when at least two clean
rounds remain; otherwise all rounds are used and the value is flagged.
"""
# This module owns the two entry points, `summarize` and `markdown`, and the
# command line (which prints the docstring above as its usage); the
# measurements are summarized in summary.py, judged against the targets in
# targets.py and written out by tables.py.

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tables  # noqa: E402
import targets  # noqa: E402
from summary import pct, serving_key, summarize_runs  # noqa: E402,F401  (pct, serving_key: for callers)

SECTIONS = (
    tables.intro,
    tables.targets_table,
    tables.throughput_table,
    tables.body_size_table,
    tables.latency_table,
    tables.list_table,
    tables.virtual_table,
    tables.redis_limits_table,
    tables.pipeline_table,
    tables.audit_table,
    tables.sse_table,
    tables.idle_table,
)


def summarize(doc: dict) -> dict:
    """The summary of a result: per-arm medians, the pipeline's parts, the
    noise, and the verdicts against the targets."""
    out = summarize_runs(doc)
    out["targets"] = targets.judge(out, doc)
    return out


def free_path(results: Path, stem: str) -> Path:
    """results/<stem>.json, or <stem>-2.json, -3, ... when taken: a second
    run of the same commit on the same day keeps the first one's files."""
    path = results / f"{stem}.json"
    n = 2
    while path.exists():
        path = results / f"{stem}-{n}.json"
        n += 1
    return path


def markdown(doc: dict) -> str:
    """The .md of a result whose doc["summary"] is set."""
    L = []
    for section in SECTIONS:
        L += section(doc)
    L.append(f"Raw data: `{doc.get('files', {}).get('json', '(this run)')}`. Method: bench/README.md and PERF.md §3.")
    return "\n".join(L) + "\n"


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    path = Path(sys.argv[1])
    doc = json.loads(path.read_text())
    doc["summary"] = summarize(doc)
    md = markdown(doc)
    if "--write" in sys.argv:
        path.write_text(json.dumps(doc, indent=1) + "\n")
        path.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
