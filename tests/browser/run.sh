#!/usr/bin/env bash
# The dashboard's browser tests: `run.sh TX_BINARY` (ctest's dashboard_browser runs it). Installs
# what is missing (setup.sh), then runs the node tests against that binary. TX_SCREENSHOTS=1
# also rewrites docs/dashboard.png and docs/dashboard-phone.png.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export TX_BINARY="${1:-${TX_BINARY:-}}"
if [ -z "$TX_BINARY" ]; then
  echo "usage: run.sh path/to/tx" >&2
  exit 2
fi
bash "$HERE/setup.sh"
cd "$HERE"
exec node --test --test-concurrency=1 --test-reporter=spec dashboard.test.js
