#!/usr/bin/env bash
# Tollgate benchmark (`make bench`): PERF.md §3 on this 2-core machine.
#
# Installs what it needs (nginx-light and wrk from apt, oha from crates.io:
# `cargo install oha --locked`, about 8 minutes on 2 cores, once), builds the
# release gateway, then runs bench/lib/harness.py pinned to the client core.
# Writes bench/results/<date>-<shortsha>.json and .md and prints the summary.
#
# Environment (all optional; see bench/README.md):
#   BENCH_QUICK=1        ~2.5 minutes: 2 rounds x 2 s (fixed rate 1.5 s), 1000 idle connections
#   BENCH_ROUNDS=N       rounds of interleaved arms (default 5; quick 2)
#   BENCH_SECONDS=S      seconds per measured run (default 5; quick 2)
#   BENCH_WARMUP=S       wrk warmup per arm and round (default 2; quick 1)
#   BENCH_RATE=R         fixed rate for the latency runs (default 1000)
#   BENCH_RATE_SECONDS=S seconds per fixed-rate run (default BENCH_SECONDS; quick 1.5)
#   BENCH_SMALL_BODY_BYTES=N  body of the small-call twins As, Bs, Cvs, Cfs (default 200; 0: none)
#   BENCH_IDLE_CONNS=N   idle keep-alive connections (default 2000; quick 1000)
#   BENCH_PORT_BASE=P    ports P..P+14 on 127.0.0.1 (default 28080)
#   BENCH_SKIP_BUILD=1   use the existing release binary
#   TOLLGATE_BIN=PATH    benchmark this binary (implies BENCH_SKIP_BUILD)
#   BENCH_BUILT_FROM=REV the commit TOLLGATE_BIN was built from (a clean export)
#   BENCH_KEEP=1         keep bench/.work/run-* (configs, process logs)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '[bench] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

[[ "$(uname -s)" == Linux ]] || die "Linux only (taskset, /proc)"
CPUS="$(nproc)"
if (( CPUS < 2 )); then
  say "warning: only $CPUS CPU; client and server share it, ratios are still comparable within the run"
  export BENCH_CLIENT_CPU="${BENCH_CLIENT_CPU:-0}" BENCH_SERVER_CPU="${BENCH_SERVER_CPU:-0}"
fi

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null && SUDO="sudo" || true
fi

# ---- tools -----------------------------------------------------------------
apt_install() {
  [[ -n "$SUDO" || "$(id -u)" == 0 ]] || die "need root (or sudo) to apt-get install $*"
  say "installing $* with apt-get"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

NGINX_BIN="$(command -v nginx || true)"
[[ -z "$NGINX_BIN" && -x /usr/sbin/nginx ]] && NGINX_BIN=/usr/sbin/nginx
WRK_BIN="$(command -v wrk || true)"
missing=()
[[ -n "$NGINX_BIN" ]] || missing+=(nginx-light)
[[ -n "$WRK_BIN" ]] || missing+=(wrk)
command -v taskset >/dev/null || missing+=(util-linux)
command -v python3 >/dev/null || missing+=(python3)
# Arm Cr's rate-limit store (the harness starts its own on a bench port).
command -v redis-server >/dev/null || missing+=(redis-server)
if (( ${#missing[@]} )); then
  apt_install "${missing[@]}"
  NGINX_BIN="$(command -v nginx || echo /usr/sbin/nginx)"
  WRK_BIN="$(command -v wrk)"
fi
# apt may start an nginx (or redis) service on install; the benchmark runs its own instances
# on its own ports and leaves any system nginx alone.

OHA_VERSION="1.16.0"
OHA_BIN="$(command -v oha || true)"
[[ -z "$OHA_BIN" && -x "$HOME/.cargo/bin/oha" ]] && OHA_BIN="$HOME/.cargo/bin/oha"
if [[ -z "$OHA_BIN" ]]; then
  command -v cargo >/dev/null || die "cargo is needed to install oha"
  say "installing oha $OHA_VERSION from crates.io: cargo install oha --locked (about 8 minutes on 2 cores, once)"
  # Its own target dir, so the build never holds the project's target-dir lock.
  cargo install oha --locked --version "$OHA_VERSION" \
    --target-dir "${XDG_CACHE_HOME:-$HOME/.cache}/tollgate-bench-oha" >&2
  OHA_BIN="$HOME/.cargo/bin/oha"
fi

# ---- the gateway -----------------------------------------------------------
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
if [[ -n "${TOLLGATE_BIN:-}" ]]; then
  BENCH_SKIP_BUILD=1
else
  TOLLGATE_BIN="$TARGET_DIR/release/tollgate"
fi
if [[ "${BENCH_SKIP_BUILD:-0}" == 0 ]]; then
  say "building the release gateway"
  cargo build --release --locked -p tollgate -p tollgate-demo >&2
fi
[[ -x "$TOLLGATE_BIN" ]] || die "no gateway binary at $TOLLGATE_BIN (build with: cargo build --release -p tollgate)"

# ---- run -------------------------------------------------------------------
# Room for the idle-connection test (client and both ends on this machine).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
(( $(ulimit -n) >= 4500 )) || ulimit -n 4500 2>/dev/null || say "warning: open-file limit $(ulimit -n); lower BENCH_IDLE_CONNS if the idle test fails"

WORK="$ROOT/bench/.work/run-$$"
mkdir -p "$WORK"
cleanup() {
  # The harness stops what it starts; this catches anything left if it died hard.
  if [[ -f "$WORK/pids" ]]; then
    while read -r pid; do
      kill "$pid" 2>/dev/null || true
    done < "$WORK/pids"
  fi
  [[ "${BENCH_KEEP:-0}" != 0 ]] && say "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

export TOLLGATE_BIN NGINX_BIN WRK_BIN OHA_BIN BENCH_WORK="$WORK"
say "gateway: $TOLLGATE_BIN"
# In the background so that Ctrl-C / TERM reach this script at once; the
# harness stops its processes on TERM.
taskset -c "${BENCH_CLIENT_CPU:-0}" python3 "$ROOT/bench/lib/harness.py" &
HARNESS=$!
trap 'kill -TERM "$HARNESS" 2>/dev/null || true; wait "$HARNESS" 2>/dev/null || true; exit 130' INT TERM
wait "$HARNESS"
