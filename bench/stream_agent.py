#!/usr/bin/env python3
"""A stand-in agent for bench/agent_stream_bench.py: prints Claude Code's stream-json at a given
rate for a given time, then its result line, and exits 0.

  stream_agent.py --mb-per-s 10 --seconds 20

The lines are the shapes Claude Code 2.1.332 prints (tests/agents/fixtures/claude_*.jsonl) in a
coding session's mix: assistant text, a Bash tool call, its result (a file's worth of output:
8 to 64 KiB), and the usage on every assistant line. They are built once and written in ~64 KiB
writes paced to the rate, so that the agent itself costs little of the machine.
"""
import argparse
import json
import os
import sys
import time
import uuid


def lines(session):
    out = []
    for i in range(32):
        mid = "msg_" + uuid.uuid4().hex[:24]
        usage = {"input_tokens": 1200 + i, "output_tokens": 1, "cache_creation_input_tokens": 50,
                 "cache_read_input_tokens": 300 + 10 * i}
        text = ("Looking at the failing test in src/parser.cc, the loop runs one past the end "
                "of the buffer when the input ends without a newline. " * (1 + i % 8))
        tool = "toolu_" + uuid.uuid4().hex[:24]
        for block in ({"type": "text", "text": text},
                      {"type": "tool_use", "id": tool, "name": "Bash",
                       "input": {"command": "make -C build test ARGS=-R parser_%d" % i,
                                 "description": "Run the parser tests"}}):
            out.append({"type": "assistant", "message": {"id": mid, "type": "message",
                        "role": "assistant", "model": "claude-sonnet-4-6", "content": [block],
                        "stop_reason": None, "stop_sequence": None, "usage": usage},
                        "parent_tool_use_id": None, "session_id": session,
                        "uuid": str(uuid.uuid4())})
        result = ("[ RUN      ] ParserTest.Case%d\n[       OK ] ParserTest.Case%d (0 ms)\n"
                  % (i, i)) * (120 * (1 + i % 8))
        out.append({"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tool, "type": "tool_result", "content": result, "is_error": False}]},
            "parent_tool_use_id": None, "session_id": session, "uuid": str(uuid.uuid4()),
            "tool_use_result": {"stdout": result, "stderr": "", "interrupted": False,
                                "isImage": False}})
    return b"".join(json.dumps(o, separators=(",", ":")).encode() + b"\n" for o in out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mb-per-s", type=float, default=10)
    p.add_argument("--seconds", type=float, default=20)
    a = p.parse_args()
    session = str(uuid.uuid4())
    out = sys.stdout.buffer
    out.write(json.dumps({"type": "system", "subtype": "init", "cwd": os.getcwd(),
                          "session_id": session, "model": "claude-sonnet-4-6",
                          "permissionMode": "acceptEdits", "claude_code_version": "2.1.332"})
              .encode() + b"\n")
    block = lines(session)
    rate = a.mb_per_s * 1e6
    start = time.monotonic()
    written = 0
    view = memoryview(block)
    pos = 0
    while time.monotonic() - start < a.seconds:
        chunk = view[pos:pos + 65536]
        out.write(chunk)
        written += len(chunk)
        pos = (pos + len(chunk)) % len(block)
        ahead = written / rate - (time.monotonic() - start)
        if ahead > 0:
            out.flush()
            time.sleep(ahead)
    out.write(b"\n")  # end a line cut by the loop
    out.write(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "num_turns": 2, "result": "Done.", "session_id": session,
                          "total_cost_usd": 1.5, "usage": {"input_tokens": 1200,
                          "output_tokens": 300, "cache_read_input_tokens": 0,
                          "cache_creation_input_tokens": 0}, "permission_denials": []})
              .encode() + b"\n")
    out.flush()
    sys.stderr.write("stream_agent: wrote %.1f MB in %.1f s\n"
                     % (written / 1e6, time.monotonic() - start))


if __name__ == "__main__":
    main()
