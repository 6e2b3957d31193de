#!/usr/bin/env bash
# `make run`: start the demo MCP server and Tollgate in front of it (the
# embedded demo configuration, examples/demo.toml, or the file named by
# TOLLGATE_CONFIG, which is then reloaded when it changes), print how to
# connect, and stop both on Ctrl-C.
set -euo pipefail
BIN="${CARGO_TARGET_DIR:?}/debug"
DEMO_ADDR=127.0.0.1:3001
OPS_ADDR=127.0.0.1:3002
GATEWAY=http://127.0.0.1:8080
ADMIN=http://127.0.0.1:9090
# The demo's [admin] token (examples/demo.toml reads it from this file):
# made once, random, readable by this user only.
ADMIN_TOKEN_FILE=.tollgate/admin-token
if [ ! -s "$ADMIN_TOKEN_FILE" ]; then
  mkdir -p "$(dirname "$ADMIN_TOKEN_FILE")"
  (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '\n=' | tr '+/' '-_' >"$ADMIN_TOKEN_FILE")
fi

"$BIN/tollgate-demo" --listen "$DEMO_ADDR" &
demo=$!
"$BIN/tollgate-demo" --listen "$OPS_ADDR" &
ops=$!
cleanup() { kill "$demo" "$ops" "${gw:-}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$BIN/tollgate" serve ${TOLLGATE_CONFIG:+--config "$TOLLGATE_CONFIG"} &
gw=$!
for _ in $(seq 1 100); do
  curl -fsS "$ADMIN/readyz" >/dev/null 2>&1 && break
  kill -0 "$gw" 2>/dev/null || { echo "tollgate failed to start (is port 8080 or 9090 in use?)" >&2; exit 1; }
  sleep 0.1
done

TOKEN=$("$BIN/tollgate" token mint --sub alice --team payments --scope "mcp:tools" --ttl 8h)

cat <<MSG

  Tollgate is running.
    MCP route   $GATEWAY/mcp/demo   (upstream: the demo server on http://$DEMO_ADDR/mcp)
    Virtual     $GATEWAY/mcp/workspace   (demo's tools as demo_*, plus ops' weather and ops_countdown)
    Admin       $ADMIN/healthz  $ADMIN/readyz  $ADMIN/metrics   (open)
    Console     $ADMIN/console/login   (signs in as alice, admin; as a viewer:
                                        $ADMIN/console/login?login_hint=victor)
    Catalog     $ADMIN/catalog   (enforce: only what examples/catalog.lock approves is served;
                                  review changes with: $BIN/tollgate catalog diff)
    Metadata    $GATEWAY/.well-known/oauth-protected-resource/mcp/demo
    Sign-in     $GATEWAY/.well-known/oauth-authorization-server   (Tollgate is the routes'
                authorization server: MCP clients register and sign in by themselves)

  /catalog and /readyz?detail want the admin token, kept in $ADMIN_TOKEN_FILE:
    curl -s $ADMIN/catalog -H "Authorization: Bearer \$(cat $ADMIN_TOKEN_FILE)"

  The routes need a token for them with the mcp:tools scope. A development
  token for alice (team payments), valid 8 hours:

    export TOKEN=$TOKEN

  Mint others with: $BIN/tollgate token mint --sub bob --scope "mcp:tools"

  Call a tool the 2026-07-28 way (standard headers, checked against the body):
    curl -s $GATEWAY/mcp/demo -H "Authorization: Bearer \$TOKEN" -H 'content-type: application/json' \\
      -H 'accept: application/json, text/event-stream' \\
      -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \\
      -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

  Or point any MCP client at $GATEWAY/mcp/demo: it signs in through Tollgate
  (docs/authorization-server.md; the demo users, no password), e.g. the MCP
  Inspector:
    npx @modelcontextprotocol/inspector   (transport: Streamable HTTP, URL above,
                                           then its OAuth flow; or Authentication:
                                           Bearer token with \$TOKEN)

  One URL for both upstreams (docs/virtual-servers.md): list its tools with
    curl -s $GATEWAY/mcp/workspace -H "Authorization: Bearer \$TOKEN" -H 'content-type: application/json' \\
      -H 'accept: application/json, text/event-stream' \\
      -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \\
      -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

  Ctrl-C stops everything.
MSG
wait "$gw"
