#!/usr/bin/env bash
# `make run`: start the demo MCP servers (the demo, ops, and Notes, a SaaS
# where each user connects their own account) and Tollgate in front of them
# (the embedded demo configuration, examples/demo.toml, or the file named by
# TOLLGATE_CONFIG, which is then reloaded when it changes), print how to
# connect, and stop them all on Ctrl-C.
set -euo pipefail
BIN="${CARGO_TARGET_DIR:?}/debug"
DEMO_ADDR=127.0.0.1:3001
OPS_ADDR=127.0.0.1:3002
NOTES_ADDR=127.0.0.1:3003
GATEWAY=http://127.0.0.1:8080
ADMIN=http://127.0.0.1:9090

# The secrets examples/demo.toml reads, each made once, random, readable by
# this user only: the [admin] token, the [vault] key (32 bytes, base64) and
# Tollgate's client secret at Notes (which Notes is told too).
ADMIN_TOKEN_FILE=.tollgate/admin-token
VAULT_KEY_FILE=.tollgate/vault-key
NOTES_SECRET_FILE=.tollgate/notes-secret
mkdir -p .tollgate
random() { head -c 32 /dev/urandom | base64 | tr -d '\n'; }
[ -s "$ADMIN_TOKEN_FILE" ] || (umask 077 && random | tr -d '=' | tr '+/' '-_' >"$ADMIN_TOKEN_FILE")
[ -s "$VAULT_KEY_FILE" ] || (umask 077 && random >"$VAULT_KEY_FILE")
[ -s "$NOTES_SECRET_FILE" ] || (umask 077 && random | tr -d '=' | tr '+/' '-_' >"$NOTES_SECRET_FILE")
# Notes keeps its grants in memory only: once it stops, the grants the vault
# holds for it answer nothing. Each run starts with none, so that every user
# connects again.
rm -f .tollgate/vault.json

"$BIN/tollgate-demo" --listen "$DEMO_ADDR" &
demo=$!
"$BIN/tollgate-demo" --listen "$OPS_ADDR" &
ops=$!
# Notes knows Tollgate as its one client, answered at Tollgate's callback.
"$BIN/tollgate-demo" --notes --listen "$NOTES_ADDR" --client-id tollgate-demo \
  --client-secret-file "$NOTES_SECRET_FILE" --redirect-uri "$GATEWAY/oauth/upstream/callback" &
notes=$!
cleanup() { kill "$demo" "$ops" "$notes" "${gw:-}" 2>/dev/null || true; wait 2>/dev/null || true; }
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
    Notes       $GATEWAY/mcp/notes   (upstream: Notes on http://$NOTES_ADDR/mcp, a SaaS where each
                                      user connects their own account on first use)
    Admin       $ADMIN/healthz  $ADMIN/readyz  $ADMIN/metrics   (open)
    Console     $ADMIN/console/login   (signs in as alice, admin; as a viewer:
                                        $ADMIN/console/login?login_hint=victor)
    Catalog     $ADMIN/catalog   (enforce: only what examples/catalog.lock approves is served;
                                  review changes with:
                                  $BIN/tollgate catalog diff --config examples/demo.toml --server demo)
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

  Connect your own Notes account (docs/upstream-credentials.md): the first call
  answers with a link; open it, sign in as alice at Tollgate and at Notes, call again.
    curl -s $GATEWAY/mcp/notes -H "Authorization: Bearer \$TOKEN" -H 'content-type: application/json' \\
      -H 'accept: application/json, text/event-stream' \\
      -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: whoami' \\
      -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

  Ctrl-C stops everything.
MSG
wait "$gw"
