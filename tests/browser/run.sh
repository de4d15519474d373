#!/usr/bin/env bash
# The dashboard's browser tests: `run.sh TX_BINARY [TEST_FILE...]` (ctest's dashboard_browser and
# dashboard_browser_tasks run it; dashboard.test.js when no file is named). Installs what is
# missing (setup.sh), then runs the node tests against that binary. TX_SCREENSHOTS=1 also
# rewrites docs/dashboard.png and docs/dashboard-phone.png.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export TX_BINARY="${1:-${TX_BINARY:-}}"
if [ -z "$TX_BINARY" ]; then
  echo "usage: run.sh path/to/tx" >&2
  exit 2
fi
bash "$HERE/setup.sh"
cd "$HERE"
shift || true
[ "$#" -gt 0 ] || set -- dashboard.test.js
exec node --test --test-concurrency=1 --test-reporter=spec "$@"
