#!/bin/bash
# hang_silent.sh [SECONDS]
# Test agent: prints nothing and sleeps SECONDS (default 3600), as one process (exec): the
# agent's pid is the sleeper's, and nothing is left behind when it is killed. SIGTERM ends it.
exec sleep "${1:-3600}"
