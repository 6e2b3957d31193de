#!/usr/bin/env bash
# The console's JSON API on the audit index benchmark's trail, run by
# bench/index.sh: a release `tollgate serve` with the console on and its
# audit directory at the trail, asked over HTTP with a bearer token the
# questions a reviewer and an analyst ask — one subject's month of calls
# (the first 1,000) and a month's spend by team with its series — best of
# three, timed by curl. Appends a Markdown table to the file named by $2.
#
# Usage: bench/console.sh TRAIL_DIR INDEX_FILE RESULTS_FILE
# The index file (built by the index benchmark) is lent to the trail as
# its index.sqlite for the run and given back afterwards.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tollgate-target}"
trail="$1" index="$2" out="$3"
say() { printf '[bench-console] %s\n' "$*" >&2; }

[[ "${BENCH_SKIP_BUILD:-0}" != 0 ]] || cargo build --release --locked -p tollgate >&2
bin="$CARGO_TARGET_DIR/release/tollgate"
work="$(mktemp -d)"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
public="$(port)" admin="$(port)"
cleanup() {
  [[ -n "${gw:-}" ]] && kill "$gw" 2>/dev/null && wait "$gw" 2>/dev/null || true
  rm -f "$trail"/console-bench-*.jsonl
  [[ -e "$trail/index.sqlite" ]] && mv "$trail/index.sqlite" "$index"
  rm -f "$trail/index.sqlite-wal" "$trail/index.sqlite-shm"
  rm -rf "$work"
}
trap cleanup EXIT
mv "$index" "$trail/index.sqlite"

cat > "$work/gateway.toml" <<TOML
[listen]
public = "127.0.0.1:$public"
admin = "127.0.0.1:$admin"

[dev_issuer]
enabled = true

[console]
enabled = true

[console.roles]
viewer = ["*"]

[audit]
directory = "$trail"
file_prefix = "console-bench"

[[servers]]
name = "bench"
url = "http://127.0.0.1:9/mcp"
TOML

"$bin" serve --config "$work/gateway.toml" --log warn 2>"$work/gateway.log" &
gw=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$admin/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
token="$("$bin" token mint --config "$work/gateway.toml" --sub bench --console)"
api="http://127.0.0.1:$admin/console/api"

# Best of three, in milliseconds; the answer's size as a check.
best() {
  local best="" t
  for _ in 1 2 3; do
    t="$(curl -fsS -o "$work/answer.json" -w '%{time_total}' -H "Authorization: Bearer $token" "$1")"
    t="$(python3 -c "print(round($t * 1000, 1))")"
    if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $t < $best else 1)"; then best="$t"; fi
  done
  echo "$best"
}
month="since=2026-10-01T00:00:00Z&until=2026-10-31T00:00:00Z"
search_ms="$(best "$api/audit?subject=user00421%40example.com&$month&limit=1000")"
found="$(python3 -c "import json; print(len(json.load(open('$work/answer.json'))['records']))")"
spend_ms="$(best "$api/spend?by=team&$month")"
teams="$(python3 -c "import json; print(len(json.load(open('$work/answer.json'))['rows']))")"
say "search $search_ms ms ($found records), spend by team $spend_ms ms ($teams teams)"
{
  echo
  echo "## The console's API on the same trail"
  echo
  echo "A release \`tollgate serve\` with the console on, asked over HTTP with a bearer token (curl's total time, best of 3):"
  echo
  echo "| Question | Answer | Target |"
  echo "|---|---|---|"
  echo "| \`GET /console/api/audit\`: one subject, one month, first 1,000 of them ($found records) | $search_ms ms | ≤ 1 s |"
  echo "| \`GET /console/api/spend\`: a month by team ($teams teams), with its daily series and the budgets | $spend_ms ms | ≤ 3 s |"
} >> "$out"
