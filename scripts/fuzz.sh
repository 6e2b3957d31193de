#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that read untrusted input, with
# AFL++ through cargo-afl (stable toolchain, offline once installed).
#
#   scripts/fuzz.sh [TARGET...]      every target when none is named
#
# Env: FUZZ_SECONDS (default 600) per target; `make test` runs 10.
# Findings go to $CARGO_TARGET_DIR/afl/findings/<target>/. A crash or hang
# is copied to fuzz/regressions/<target>/ (where `cargo nextest run -p
# tollgate-fuzz` replays it until fixed) and the script exits non-zero.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AFL_VERSION=0.18.2
SECONDS_PER_TARGET="${FUZZ_SECONDS:-600}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tollgate-target}/afl"
TARGETS=(headers body_scan session_id jwt_header sse config)
[ "$#" -gt 0 ] && TARGETS=("$@")

log() { echo "fuzz: $*" >&2; }

if [ "$(cargo afl --version 2>/dev/null | awk '{print $2}')" != "$AFL_VERSION" ]; then
  log "installing cargo-afl $AFL_VERSION (builds AFL++ once)"
  cargo install cargo-afl --locked --version "$AFL_VERSION" >&2
fi
log "building the instrumented targets"
# The gateway's crates at the versions of the workspace lock; cargo adds
# the harness's own (afl, pinned in fuzz/afl/Cargo.toml) to the copy.
cp "$ROOT/Cargo.lock" "$ROOT/fuzz/afl/Cargo.lock"
(cd "$ROOT/fuzz/afl" && cargo afl build --release --quiet)

# Containers and CI machines lack the kernel tuning AFL++ asks for; none of
# it changes what is found, only how fast.
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
  AFL_NO_AFFINITY=1

mkdir -p "$CARGO_TARGET_DIR/findings"
failed=0
for target in "${TARGETS[@]}"; do
  out="$CARGO_TARGET_DIR/findings/$target"
  rm -rf "$out"
  log "$target: ${SECONDS_PER_TARGET}s"
  cargo afl fuzz -V "$SECONDS_PER_TARGET" -t 2000 -i "$ROOT/fuzz/corpus/$target" -o "$out" \
    "$CARGO_TARGET_DIR/release/$target" >"$out.log" 2>&1 ||
    { tail -20 "$out.log" >&2; log "$target: afl-fuzz failed (log: $out.log)"; failed=1; continue; }
  stats="$out/default/fuzzer_stats"
  log "$target: $(awk -F' *: *' '/^execs_done|^corpus_count|^edges_found/ {printf "%s=%s ", $1, $2}' "$stats")"
  for kind in crashes hangs; do
    for found in "$out/default/$kind"/id:*; do
      [ -e "$found" ] || continue
      mkdir -p "$ROOT/fuzz/regressions/$target"
      keep="$ROOT/fuzz/regressions/$target/$kind-$(sha256sum "$found" | cut -c1-16)"
      cp "$found" "$keep"
      log "$target: $kind input kept as ${keep#"$ROOT"/}"
      failed=1
    done
  done
done
[ "$failed" = 0 ] || { log "findings above: fix them; the kept inputs become regression tests"; exit 1; }
log "no findings"
