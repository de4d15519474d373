#!/bin/bash
# print_limits.sh
# Test agent: prints its resource limits, one per line, as ulimit reports them ("unlimited" or
# a number): nofile= (ulimit -n), as_kb= (ulimit -v, KiB), cpu_s= (ulimit -t), nproc= (ulimit -u).
echo "nofile=$(ulimit -n)"
echo "as_kb=$(ulimit -v)"
echo "cpu_s=$(ulimit -t)"
echo "nproc=$(ulimit -u)"
