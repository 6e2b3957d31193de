# Tollgate: `make run` starts the demo, `make test` installs what the tests
# need and runs every check CI runs.

export CARGO_TARGET_DIR ?= $(HOME)/.cache/tollgate-target
CARGO ?= cargo

.PHONY: run build test test-deps fmt fmt-check lint unused-deps policy-check nextest doctest fuzz-smoke fuzz bench callgrind soak schema clean

run: build
	scripts/run-demo.sh

build:
	$(CARGO) build --locked -p tollgate -p tollgate-demo

test: test-deps fmt-check lint unused-deps policy-check doctest nextest fuzz-smoke

test-deps:
	scripts/install-test-deps.sh

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

# Clippy, and the server crate's module layering (no import cycle, no
# import of a higher layer: scripts/layers.py).
lint:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	python3 scripts/layers.py

nextest:
	@$(CARGO) nextest --version >/dev/null 2>&1 || $(CARGO) install cargo-nextest --locked
	$(CARGO) nextest run --locked --workspace --no-fail-fast

# Every dependency a crate declares is used (cargo-machete reads the sources;
# an exception goes in the crate's [package.metadata.cargo-machete]).
unused-deps:
	@$(CARGO) machete --version >/dev/null 2>&1 || $(CARGO) install cargo-machete --locked
	$(CARGO) machete

policy-check:
	$(CARGO) run --quiet --locked -p tollgate -- policy validate --policies policies
	$(CARGO) run --quiet --locked -p tollgate -- policy test --policies policies

doctest:
	$(CARGO) test --locked --workspace --doc

# Coverage-guided fuzzing with AFL++ (cargo-afl): `fuzz-smoke` runs every
# target for ten seconds, `make fuzz` for FUZZ_SECONDS (default 600) each.
# A crash is kept in fuzz/regressions/, replayed by the tollgate-fuzz tests.
fuzz-smoke:
	FUZZ_SECONDS=$${FUZZ_SMOKE_SECONDS:-10} scripts/fuzz.sh

fuzz:
	scripts/fuzz.sh

bench:
	bench/run.sh
	bench/index.sh

# Instructions per request under callgrind, per arm, against
# bench/callgrind-baseline.json; fails on a rise above 3 %. Builds the
# `callgrind` profile (release + line tables); BENCH_SKIP_BUILD=1 or
# TOLLGATE_BIN=path use an existing binary. CALLGRIND_UPDATE_BASELINE=1
# rewrites the baseline. See bench/README.md.
callgrind:
	@if [ -z "$$TOLLGATE_BIN" ] && [ "$${BENCH_SKIP_BUILD:-0}" = 0 ]; then \
	  echo "[callgrind] building the callgrind profile" >&2; \
	  $(CARGO) build --profile callgrind --locked -p tollgate; fi
	TOLLGATE_BIN="$${TOLLGATE_BIN:-$(CARGO_TARGET_DIR)/callgrind/tollgate}" python3 bench/callgrind.py

# Ten minutes of mixed traffic at a fixed rate against the full pipeline
# (release build): no unexpected answer, memory and descriptors flat, the
# audit trail verifies. SOAK_SECONDS and SOAK_RATE override 600 and 200.
# Results in bench/results/soak-*.
soak: test-deps
	$(CARGO) build --release --locked -p tollgate
	$(CARGO) nextest run --release --locked -p tollgate-e2e --test soak --run-ignored only --no-capture

schema:
	@$(CARGO) run --quiet --locked -p tollgate -- schema

clean:
	$(CARGO) clean
