#!/usr/bin/env bash
# The fleet store benchmark (issue 26's targets): three replicas' trails
# generated through the real audit sink, shipped by the real shipper into
# a real PostgreSQL started as the tests start it (tests/src/postgres.rs),
# then one subject's month and a month's spend by team timed on the store
# (crates/tollgate-store/benches/store.rs). Writes
# bench/results/<date>-<rev>-store.md.
#
# Usage: bench/store.sh [N]      N records (default 10,000,000)
#        BENCH_QUICK=1 bench/store.sh   200,000 records, a smoke run
#
# Environment:
#   STORE_BENCH_DIR=DIR  where a replica's files go while it ships
#                        (default $CARGO_TARGET_DIR/store-bench); the
#                        database goes in $TMPDIR (/tmp), where PostgreSQL's
#                        own user can reach it when run as root
# Disk: about 0.75 KB a record of files for one replica at a time, and
# about 1.5 KB a record in PostgreSQL; everything is deleted at the end.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tollgate-target}"
say() { printf '[bench-store] %s\n' "$*" >&2; }

if [[ -n "${1:-}" ]]; then
  records="$1"
elif [[ "${BENCH_QUICK:-0}" != 0 ]]; then
  records=200000
else
  records=10000000
fi
dir="${STORE_BENCH_DIR:-$CARGO_TARGET_DIR/store-bench}"
mkdir -p "$dir"
need_kib=$(( records * 2 ))
have_kib=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $4}')
if (( have_kib < need_kib )); then
  say "error: about $(( need_kib / 1048576 )) GiB needed in $dir, $(( have_kib / 1048576 )) GiB free (pass a smaller N)"
  exit 1
fi
command -v pg_ctl >/dev/null || PATH="$PATH:$(ls -d /usr/lib/postgresql/*/bin | tail -1)"

rev="$(git -C "$ROOT" rev-parse --short HEAD)"
out="$ROOT/bench/results/$(date -u +%F)-$rev-store.md"
say "$records records; files in $dir, the database in ${TMPDIR:-/tmp}"
cargo bench --locked -p tollgate-store --bench store --no-run 2>&1 | tail -1 >&2
{
  echo "# Fleet store, $(date -u +%F), $rev"
  echo
  echo "$(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) of memory,"
  echo "$(postgres --version 2>/dev/null || pg_ctl --version); fsync and synchronous_commit off (as in the tests),"
  echo "shared_buffers 4GB, work_mem 64MB; best of 3 for the questions. The questions are the library"
  echo "calls the CLI makes (\`Store::records\` read to the end and parsed, \`Store::usage\`), in a release build."
  echo
  if ! STORE_BENCH_RECORDS="$records" STORE_BENCH_DIR="$dir" \
    cargo bench --locked -p tollgate-store --bench store 2>"$dir/stderr.log"; then
    tail -40 "$dir/stderr.log" >&2
    rm -rf "$dir"
    exit 1
  fi
} > "$out.tmp"
mv "$out.tmp" "$out"
rm -rf "$dir"
cat "$out"
