#!/usr/bin/env bash
# The audit index benchmark, run by `make bench` after the proxy benchmark:
# a trail of generated records written through the real audit sink (once,
# then reused), indexed from scratch, then a filtered query (one subject,
# one month) and a month's usage by team, each from the index and from the
# files; then the same two questions through the console's JSON API
# (bench/console.sh). Writes bench/results/index-<date>-<shortsha>.md.
#
# Environment:
#   INDEX_BENCH_RECORDS=N  records (default 10,000,000; BENCH_QUICK=1: 1,000,000)
#   INDEX_BENCH_DIR=DIR    where the trail and index go
#                          (default $CARGO_TARGET_DIR/index-bench; about 1 KB a record)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tollgate-target}"
say() { printf '[bench-index] %s\n' "$*" >&2; }

if [[ -n "${INDEX_BENCH_RECORDS:-}" ]]; then
  records="$INDEX_BENCH_RECORDS"
elif [[ "${BENCH_QUICK:-0}" != 0 ]]; then
  records=1000000
else
  records=10000000
fi
export INDEX_BENCH_RECORDS="$records"
dir="${INDEX_BENCH_DIR:-$CARGO_TARGET_DIR/index-bench}"
mkdir -p "$dir"
need_kib=$(( records * 11 / 10 ))
have_kib=$(df -Pk "$dir" | awk 'NR == 2 {print $4}')
if [[ ! -e "$dir/trail-$records/.complete" ]] && (( have_kib < need_kib )); then
  say "error: about $(( need_kib / 1048576 )) GiB needed in $dir, $(( have_kib / 1048576 )) GiB free (set INDEX_BENCH_DIR or INDEX_BENCH_RECORDS)"
  exit 1
fi

rev="$(git -C "$ROOT" rev-parse --short HEAD)"
out="$ROOT/bench/results/index-$(date -u +%F)-$rev.md"
say "$records records in $dir"
{
  echo "# Audit index, $(date -u +%F), $rev"
  echo
  echo "$(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) of memory; best of 3 for the index answers."
  echo
  cargo bench --locked -p tollgate-index --bench index 2>/dev/null
} > "$out.tmp"
"$ROOT/bench/console.sh" "$dir/trail-$records" "$dir/index-$records.sqlite" "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
