#!/usr/bin/env bash
# tx mcp driven by the official MCP TypeScript SDK client: `run.sh TX_BINARY` (ctest's mcp_sdk
# runs it). Installs the SDK from package-lock.json when it is missing (npm ci, again when the
# lock file changes), then runs the node tests against that binary.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export TX_BINARY="${1:-${TX_BINARY:-}}"
if [ -z "$TX_BINARY" ]; then
  echo "usage: run.sh path/to/tx" >&2
  exit 2
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null ||
   ! command -v npm >/dev/null; then
  echo "tests/mcp_sdk needs Node.js >= 20 and npm on PATH (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
exec 9>"${TMPDIR:-/tmp}/tx-mcp-sdk-setup.lock"
flock 9
stamp="$HERE/node_modules/.tx-lock-sha256"
want="$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "== npm ci (tests/mcp_sdk)"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi
flock -u 9
cd "$HERE"
exec node --test --test-concurrency=1 --test-reporter=spec mcp_sdk.test.js
