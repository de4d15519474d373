#!/usr/bin/env python3
"""alloc.py MB [HOLD_SECONDS]

Test agent: allocates MB MiB in 8 MiB blocks and touches every page (so the memory is really
used, not just reserved), printing "allocated N MiB" after each block; then prints "done",
holds the memory for HOLD_SECONDS (default 0) and exits 0. Under a memory limit it is killed
(cgroup: SIGKILL by the OOM killer) or fails with MemoryError (RLIMIT_AS: exit 1).
"""
import sys
import time

BLOCK = 8 << 20


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    hold = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    blocks = []
    allocated = 0
    while allocated < mb << 20:
        blocks.append(b"\x01" * BLOCK)  # bytes filled with 1s: every page is written
        allocated += BLOCK
        print(f"allocated {allocated >> 20} MiB", flush=True)
    print("done", flush=True)
    time.sleep(hold)


if __name__ == "__main__":
    main()
