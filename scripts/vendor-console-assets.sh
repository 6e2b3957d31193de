#!/usr/bin/env bash
# Vendors uPlot, the chart library of the web console, into
# crates/tollgate-console/assets/vendor/ from its pinned npm package:
#   uplot.min.js     dist/uPlot.iife.min.js
#   uplot.min.css    dist/uPlot.min.css
#   uplot.LICENSE    LICENSE
#   VENDOR.md        package, version, tarball integrity and file sha256s
# The tarball is checked against the pinned integrity before anything is
# extracted. The console embeds these files in the binary, so they are
# committed; run this script only to change the pinned version.
#
#   scripts/vendor-console-assets.sh           fetch, check and write
#   scripts/vendor-console-assets.sh --check   offline: the committed files
#                                              still match VENDOR.md
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/crates/tollgate-console/assets/vendor"
PACKAGE=uplot
VERSION=1.6.32
INTEGRITY="sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="

die() { echo "vendor-console-assets: error: $*" >&2; exit 1; }
log() { echo "vendor-console-assets: $*" >&2; }
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Offline check: every file listed in VENDOR.md's table has its sha256.
if [ "${1:-}" = "--check" ]; then
  [ -f "$DEST/VENDOR.md" ] || die "$DEST/VENDOR.md is missing"
  status=0
  while IFS='|' read -r _ file sum _; do
    file="$(echo "$file" | tr -d ' `')"
    sum="$(echo "$sum" | tr -d ' `')"
    [ -f "$DEST/$file" ] || { log "missing: $file"; status=1; continue; }
    if [ "$(sha256_of "$DEST/$file")" != "$sum" ]; then
      log "sha256 mismatch: $file"
      status=1
    fi
  done < <(grep -E '^\| `[^`]+` \| `[0-9a-f]{64}` \|' "$DEST/VENDOR.md")
  [ "$status" = 0 ] && log "vendored files match VENDOR.md"
  exit "$status"
fi

command -v npm >/dev/null 2>&1 || die "npm is required (it comes with Node.js)"
command -v tar >/dev/null 2>&1 || die "tar is required"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

log "npm pack $PACKAGE@$VERSION"
(cd "$WORK" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null) || die "npm pack failed"
TARBALL="$WORK/$PACKAGE-$VERSION.tgz"
[ -f "$TARBALL" ] || die "npm pack did not write $TARBALL"

actual="sha512-$(openssl dgst -sha512 -binary "$TARBALL" | base64 -w0)"
[ "$actual" = "$INTEGRITY" ] || die "tarball integrity mismatch: expected $INTEGRITY, got $actual"

tar -xzf "$TARBALL" -C "$WORK"
PKG="$WORK/package"
for f in dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE; do
  [ -f "$PKG/$f" ] || die "package lacks $f"
done

mkdir -p "$DEST"
cp "$PKG/dist/uPlot.iife.min.js" "$DEST/uplot.min.js"
cp "$PKG/dist/uPlot.min.css" "$DEST/uplot.min.css"
cp "$PKG/LICENSE" "$DEST/uplot.LICENSE"

cat > "$DEST/VENDOR.md" <<MD
# Vendored browser assets

Written by \`scripts/vendor-console-assets.sh\`; do not edit by hand.
\`scripts/vendor-console-assets.sh --check\` verifies the files below offline.

## uPlot

- package: \`$PACKAGE\` (npm)
- version: \`$VERSION\`
- tarball integrity: \`$INTEGRITY\`
- licence: MIT (\`uplot.LICENSE\`)

Why uPlot: the console draws a few time series (calls, errors, denials,
tokens). uPlot is small (about 50 KB minified), MIT-licensed, draws on a
canvas, has no dependencies and creates its DOM with CSSOM style properties
only, so it runs under the console's strict Content-Security-Policy
(\`script-src 'self'; style-src 'self'\`) with no inline styles or eval.

| file | sha256 | from the package |
| --- | --- | --- |
| \`uplot.min.js\` | \`$(sha256_of "$DEST/uplot.min.js")\` | \`dist/uPlot.iife.min.js\` |
| \`uplot.min.css\` | \`$(sha256_of "$DEST/uplot.min.css")\` | \`dist/uPlot.min.css\` |
| \`uplot.LICENSE\` | \`$(sha256_of "$DEST/uplot.LICENSE")\` | \`LICENSE\` |
MD

log "vendored $PACKAGE@$VERSION into ${DEST#"$ROOT"/}"
