#!/usr/bin/env python3
"""A scripted fake of the OpenAI Responses API, for running the real Codex CLI (`codex exec`)
offline.

    python3 fake_openai.py --port 0 --script turns.json --log requests.jsonl

Listens on 127.0.0.1 (--host), prints the bound port on stdout line 1 (flushed), then serves until
killed. Point Codex at it with a model provider in $CODEX_HOME/config.toml:

    model = "gpt-5.5"
    model_provider = "mock"
    [model_providers.mock]
    name = "mock"
    base_url = "http://127.0.0.1:PORT/v1"     # Codex POSTs to {base_url}/responses
    wire_api = "responses"
    env_key = "OPENAI_MOCK_KEY"               # its bearer token, from this variable
    request_max_retries = 0
    stream_max_retries = 0

Python standard library only.

The script (JSON) is {"turns": [TURN, ...]}. Each POST .../responses takes the next TURN, in order
(shared by every process talking to this server); once they are used up the last one answers
again. A TURN is one of:

    {"kind": "shell", "command": "tx task done \\"$TX_TASK_ID\\"", "workdir": null}
        a function_call of the shell tool the request offers (exec_command, whose arguments are
        {"cmd": ...}; or shell_command / shell), its arguments fitted to that tool
    {"kind": "function_call", "name": "exec_command", "arguments": {...}}
        a function_call as given
    {"kind": "apply_patch", "patch": "*** Begin Patch\\n..."}
    {"kind": "custom_tool_call", "name": "...", "input": "..."}
        a freeform tool call (apply_patch is one)
    {"kind": "message", "text": "Done."}
        the assistant's final message
    {"kind": "reasoning", "summary": "...", "then": TURN}
        a reasoning item, then TURN's items in the same response
    {"kind": "http_error", "status": 429, "body": {...}, "headers": {...}}
        an HTTP error with that JSON body, e.g. a usage limit:
        {"error": {"type": "usage_limit_reached", "plan_type": "plus", "resets_at": 1767225600}}
    {"kind": "sse_failed", "error": {"code": "...", "message": "..."}}
        200, then response.created and response.failed
    {"kind": "sse_drop"}
        200, then the stream closes before response.completed

Optional on any turn: "repeat": N (answer N requests; -1 = all from now on), "usage": {...} (the
response.completed usage: input_tokens, input_tokens_details.cached_tokens, output_tokens,
output_tokens_details.reasoning_tokens, total_tokens), "delay": seconds before answering,
"headers": extra response headers.

Every request is appended to --log as one JSON line: ts, method, path, headers (lower-case
names), body (the parsed JSON) and, for a Responses request, response_no (1, 2, ...) and answer
(the TURN given). A CONNECT or an absolute-URL GET (Codex sent here as its HTTPS_PROXY) is logged
with a "note" and refused.
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"turns": [], "idx": 0, "used": 0, "responses": 0, "log": None}

SHELL_TOOLS = ["exec_command", "shell_command", "shell", "local_shell", "container.exec"]


def default_usage():
    return {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 200},
            "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 1050}


def log_entry(entry):
    if not STATE["log"]:
        return
    with LOCK, open(STATE["log"], "a") as f:
        f.write(json.dumps(entry) + "\n")


def next_turn():
    """The (turn, response number) answering a Responses request; uses it up."""
    with LOCK:
        STATE["responses"] += 1
        turns = STATE["turns"]
        if not turns:
            return {"kind": "message", "text": "Done."}, STATE["responses"]
        i = min(STATE["idx"], len(turns) - 1)
        t = turns[i]
        repeat = t.get("repeat", 1)
        STATE["used"] += 1
        if repeat != -1 and STATE["used"] >= repeat and STATE["idx"] < len(turns):
            STATE["idx"] += 1
            STATE["used"] = 0
        return t, STATE["responses"]


def shell_call(turn, body, n):
    offered = [t.get("name") or t.get("type") for t in (body or {}).get("tools") or []]
    name = turn.get("tool") or next((c for c in SHELL_TOOLS if c in offered), "shell")
    cmd = turn["command"]
    if name == "exec_command":
        args = {"cmd": cmd}
        if turn.get("sandbox_permissions"):
            args["sandbox_permissions"] = turn["sandbox_permissions"]
    elif name == "shell_command":
        args = {"command": cmd}
    else:  # the older "shell": an argv
        args = {"command": ["bash", "-lc", cmd]}
    if turn.get("workdir"):
        args["workdir"] = turn["workdir"]
    args.update(turn.get("extra_args") or {})
    return {"type": "function_call", "id": "fc_%d" % n,
            "call_id": turn.get("call_id") or "call_%d" % n,
            "name": name, "arguments": json.dumps(args), "status": "completed"}


def output_items(turn, body, n):
    kind = turn.get("kind")
    if kind == "shell":
        return [shell_call(turn, body, n)]
    if kind == "function_call":
        a = turn.get("arguments", {})
        return [{"type": "function_call", "id": "fc_%d" % n,
                 "call_id": turn.get("call_id") or "call_%d" % n, "name": turn["name"],
                 "arguments": a if isinstance(a, str) else json.dumps(a),
                 "status": "completed"}]
    if kind in ("custom_tool_call", "apply_patch"):
        return [{"type": "custom_tool_call", "id": "ctc_%d" % n,
                 "call_id": turn.get("call_id") or "call_%d" % n,
                 "name": turn.get("name", "apply_patch"),
                 "input": turn.get("input") or turn.get("patch"), "status": "completed"}]
    if kind == "message":
        return [{"type": "message", "id": "msg_%d" % n, "role": "assistant",
                 "status": "completed",
                 "content": [{"type": "output_text", "text": turn.get("text", "Done."),
                              "annotations": []}]}]
    if kind == "reasoning":
        items = [{"type": "reasoning", "id": "rs_%d" % n,
                  "summary": [{"type": "summary_text", "text": turn.get("summary", "Thinking.")}],
                  "content": None, "encrypted_content": None}]
        if turn.get("then"):
            items += output_items(turn["then"], body, n)
        return items
    raise ValueError("unknown turn kind %r" % kind)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1"

    def log_message(self, fmt, *args):  # no access log on stderr
        pass

    def _raw_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return raw
                raw += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _log(self, raw, **extra):
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = {"_raw_len": len(raw), "_raw_head": raw[:200].decode("latin-1")}
        entry = {"ts": time.time(), "method": self.command, "path": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        entry.update(extra)
        log_entry(entry)
        return body

    def _json(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def do_CONNECT(self):
        # Only when Codex is given this server as its HTTPS_PROXY: shows what it would reach.
        self._log(b"", note="proxy CONNECT")
        self._json(403, {"error": "offline"})
        self.close_connection = True

    def do_GET(self):
        if self.path.startswith("http://"):
            self._log(b"", note="proxy GET")
            return self._json(403, {"error": "offline"})
        self._log(b"")
        if self.path.split("?")[0].endswith("/models"):
            return self._json(200, {"models": [], "data": [], "object": "list"})
        self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        raw = self._raw_body()
        path = self.path.split("?")[0]
        if not path.endswith("/responses"):
            self._log(raw)
            return self._json(404, {"error": {"message": "not found: " + path,
                                              "type": "invalid_request_error"}})
        turn, n = next_turn()
        body = self._log(raw, response_no=n, answer=turn)
        if turn.get("delay"):
            time.sleep(turn["delay"])
        kind = turn.get("kind")
        if kind == "http_error":
            return self._json(turn.get("status", 500), turn.get("body", {}), turn.get("headers"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for k, v in (turn.get("headers") or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.close_connection = True

        def event(obj):
            self.wfile.write(("event: %s\ndata: %s\n\n" % (obj["type"], json.dumps(obj))).encode())
            self.wfile.flush()

        base = {"id": "resp_%d" % n, "object": "response", "created_at": int(time.time()),
                "model": (body or {}).get("model", "mock-model"), "status": "in_progress",
                "output": []}
        event({"type": "response.created", "response": base})
        if kind == "sse_failed":
            event({"type": "response.failed", "response": dict(
                base, status="failed",
                error=turn.get("error", {"code": "server_error", "message": "scripted failure"}))})
            return
        if kind == "sse_drop":
            return
        items = output_items(turn, body, n)
        for oi, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                part = {"output_index": oi, "item_id": item["id"], "content_index": 0}
                event({"type": "response.output_item.added", "output_index": oi,
                       "item": dict(item, status="in_progress", content=[])})
                event(dict(part, type="response.content_part.added",
                           part={"type": "output_text", "text": "", "annotations": []}))
                event(dict(part, type="response.output_text.delta", delta=text))
                event(dict(part, type="response.output_text.done", text=text))
            else:
                event({"type": "response.output_item.added", "output_index": oi, "item": item})
            event({"type": "response.output_item.done", "output_index": oi, "item": item})
        event({"type": "response.completed", "response": dict(
            base, status="completed", output=items, usage=turn.get("usage") or default_usage())})


def main():
    ap = argparse.ArgumentParser(description="Scripted fake OpenAI Responses API")
    ap.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--script", default=None, help="the JSON script of answers")
    ap.add_argument("--log", default=None, help="append every request here (JSON lines)")
    a = ap.parse_args()
    if a.script:
        with open(a.script) as f:
            STATE["turns"] = json.load(f).get("turns", [])
    STATE["log"] = a.log
    if a.log:
        open(a.log, "w").close()
    srv = ThreadingHTTPServer((a.host, a.port), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
