#!/usr/bin/env bash
# Installs what the dashboard's browser tests need, when it is missing: Debian's chromium (the
# tests never download a browser) and playwright-core from package-lock.json (npm ci, again when
# the lock file changes). Safe to run from two builds' test runs at once (a lock serialises it).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CHROMIUM="${TX_CHROMIUM:-/usr/bin/chromium}"

exec 9>"${TMPDIR:-/tmp}/tx-browser-setup.lock"
flock 9

if [ ! -x "$CHROMIUM" ]; then
  echo "== installing chromium"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

# playwright-core needs Node.js 20 or newer, which the machine brings (Debian 12's own is 18).
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null ||
   ! command -v npm >/dev/null; then
  echo "tests/browser needs Node.js >= 20 and npm on PATH (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

stamp="$HERE/node_modules/.tx-lock-sha256"
want="$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "== npm ci (tests/browser)"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi
