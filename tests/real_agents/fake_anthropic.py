#!/usr/bin/env python3
"""A scripted fake of the Anthropic Messages API, for running the real Claude Code CLI offline.

    python3 fake_anthropic.py --port 0 --script turns.json --log requests.jsonl

Listens on 127.0.0.1 (--host), prints the bound port on stdout line 1 (flushed), then serves until
killed. Point Claude Code at it with ANTHROPIC_BASE_URL=http://127.0.0.1:PORT (and an
ANTHROPIC_API_KEY of any value). Python standard library only.

The script (JSON) says how the "main" requests -- those that offer tools, i.e. the agent's own
turns -- are answered, in order:

    {
      "model": "claude-...",      optional: the model the replies name (default: the request's)
      "side_reply": "text",       optional: the answer to side requests (default "Side reply")
      "side_error": {ERROR},      optional: side requests fail like this instead
      "all_main": false,          optional: treat requests without tools as main too
      "headers": {...},           optional: extra response headers on every success
      "turns": [TURN, ...]
    }

A TURN is an answer; its keys, all optional:

    "text": "...",                       a text block
    "thinking": "...",                   a thinking block (before the text)
    "tool_use": {"name": "Bash", "input": {"command": "...", "description": "..."}},
    "tool_uses": [{...}, ...],           several tool_use blocks ("id" optional)
    "usage": {"input_tokens": 100, "output_tokens": 20,
              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
    "stop_reason": "end_turn",           default: tool_use when there is one, else end_turn
    "model": "...",                      the model this reply names
    "headers": {...},                    extra response headers
    "error": {"status": 429, "type": "rate_limit_error", "message": "...",
              "headers": {"retry-after": "1"}, "body": {...}}
                                         an HTTP error instead (body replaces the usual one)
    "times": 1,                          how many requests this turn answers; -1 = all from now on
    "delay": 0.5,                        seconds to wait before answering
    "match_last_user_contains": "..."    skip this turn unless the last user message has this text

Once the turns are used up, main requests are answered "Done." (end_turn). Replies are streamed
(SSE) when the request asks for it, as Claude Code always does; else one JSON message.

Every request is appended to --log as one JSON line: t, method, path, headers (lower-case names),
body (the parsed JSON), kind (main, side, count_tokens, get, head, unknown), turn (the index of
the turn that answered a main request, null once the script is used up) and status.
Also served: POST /v1/messages/count_tokens, GET /v1/models, HEAD; anything else is a 404.
"""
import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"script": {}, "turn": 0, "uses": 0, "log": None}
DEFAULT_MODEL = "claude-sonnet-4-5-20250929"


def log_entry(entry):
    if not STATE["log"]:
        return
    with LOCK, open(STATE["log"], "a") as f:
        f.write(json.dumps(entry) + "\n")


def new_id(prefix):
    return prefix + uuid.uuid4().hex[:24]


def last_user_text(body):
    """The text of the last user message: its text blocks and tool results."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        out = []
        for b in c or []:
            if b.get("type") == "text":
                out.append(b.get("text", ""))
            elif b.get("type") == "tool_result":
                cc = b.get("content")
                if isinstance(cc, str):
                    out.append(cc)
                elif isinstance(cc, list):
                    out.extend(x.get("text", "") for x in cc if isinstance(x, dict))
        return "\n".join(out)
    return ""


def pick_turn(body):
    """The (index, turn) answering a main request; uses it up."""
    with LOCK:
        turns = STATE["script"].get("turns", [])
        text = last_user_text(body)
        i = STATE["turn"]
        while i < len(turns):
            m = turns[i].get("match_last_user_contains")
            if m is None or m in text:
                break
            i += 1
        if i >= len(turns):
            return None, {"text": "Done.", "stop_reason": "end_turn"}
        if i != STATE["turn"]:
            STATE["turn"], STATE["uses"] = i, 0
        t = turns[i]
        times = t.get("times", 1)
        STATE["uses"] += 1
        if times != -1 and STATE["uses"] >= times:
            STATE["turn"], STATE["uses"] = i + 1, 0
        return i, t


def content_blocks(turn):
    blocks = []
    if turn.get("thinking"):
        blocks.append({"type": "thinking", "thinking": turn["thinking"], "signature": "sig"})
    if turn.get("text"):
        blocks.append({"type": "text", "text": turn["text"]})
    uses = turn.get("tool_uses") or ([turn["tool_use"]] if turn.get("tool_use") else [])
    for tu in uses:
        blocks.append({"type": "tool_use", "id": tu.get("id") or new_id("toolu_"),
                       "name": tu["name"], "input": tu.get("input", {})})
    return blocks or [{"type": "text", "text": ""}]


def usage_of(turn):
    u = {"input_tokens": 100, "output_tokens": 20,
         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    u.update(turn.get("usage") or {})
    return u


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-anthropic/1"

    def log_message(self, fmt, *args):  # no access log on stderr
        pass

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _entry(self, kind, body=None):
        return {"t": time.time(), "method": self.command, "path": self.path, "kind": kind,
                "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}

    def _send_json(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", new_id("req_"))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return status

    def _not_found(self, what):
        return self._send_json(404, {"type": "error",
                                     "error": {"type": "not_found_error", "message": what}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
        e = self._entry("head")
        e["status"] = 200
        log_entry(e)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.startswith("/v1/models"):
            kind, m = "get", STATE["script"].get("model") or DEFAULT_MODEL
            status = self._send_json(200, {"data": [{"type": "model", "id": m, "display_name": m,
                                                     "created_at": "2025-09-29T00:00:00Z"}],
                                           "has_more": False, "first_id": m, "last_id": m})
        else:
            kind, status = "unknown", self._not_found("Not found: " + path)
        e = self._entry(kind)
        e["status"] = status
        log_entry(e)

    def do_POST(self):
        body = self._body()
        path = self.path.split("?")[0]
        script = STATE["script"]
        e = self._entry("unknown", body)
        try:
            if path.endswith("/v1/messages/count_tokens"):
                e["kind"] = "count_tokens"
                e["status"] = self._send_json(200, {"input_tokens": 1234})
            elif path.endswith("/v1/messages"):
                req = body if isinstance(body, dict) else {}
                if req.get("tools") or script.get("all_main"):
                    e["kind"] = "main"
                    e["turn"], turn = pick_turn(req)
                elif script.get("side_error"):
                    e["kind"], turn = "side", {"error": script["side_error"]}
                else:
                    e["kind"] = "side"
                    turn = {"text": script.get("side_reply", "Side reply"),
                            "usage": {"input_tokens": 10, "output_tokens": 5}}
                if turn.get("delay"):
                    time.sleep(turn["delay"])
                e["status"] = self._answer(req, turn)
            else:
                e["status"] = self._not_found("Not found: " + path)
        except (BrokenPipeError, ConnectionResetError) as ex:
            e["client_gone"] = repr(ex)
        log_entry(e)

    def _answer(self, req, turn):
        if turn.get("error"):
            err = turn["error"]
            obj = err.get("body") or {"type": "error",
                                      "error": {"type": err.get("type", "api_error"),
                                                "message": err.get("message", "error")},
                                      "request_id": new_id("req_")}
            return self._send_json(err.get("status", 500), obj, err.get("headers"))
        model = (turn.get("model") or STATE["script"].get("model") or req.get("model")
                 or DEFAULT_MODEL)
        blocks = content_blocks(turn)
        usage = usage_of(turn)
        stop = turn.get("stop_reason") or (
            "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
        msg_id = new_id("msg_")
        headers = turn.get("headers") or STATE["script"].get("headers") or {}
        if not req.get("stream"):
            return self._send_json(200, {"id": msg_id, "type": "message", "role": "assistant",
                                         "model": model, "content": blocks, "stop_reason": stop,
                                         "stop_sequence": None, "usage": usage}, headers)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", new_id("req_"))
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def event(name, obj):
            data = ("event: %s\ndata: %s\n\n" % (name, json.dumps(obj))).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        # As the real API does: message_start carries the input side of the usage (and 1 output
        # token), message_delta the final counts.
        event("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})
        event("ping", {"type": "ping"})
        for i, b in enumerate(blocks):
            delta = lambda d: event("content_block_delta",  # noqa: E731
                                    {"type": "content_block_delta", "index": i, "delta": d})
            if b["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
                t = b["text"]
                for j in range(0, len(t), 20) or [0]:
                    delta({"type": "text_delta", "text": t[j:j + 20]})
            elif b["type"] == "thinking":
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "thinking",
                                                                "thinking": "", "signature": ""}})
                delta({"type": "thinking_delta", "thinking": b["thinking"]})
                delta({"type": "signature_delta", "signature": b["signature"]})
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "tool_use", "id": b["id"],
                                                                "name": b["name"], "input": {}}})
                js = json.dumps(b["input"])
                delta({"type": "input_json_delta", "partial_json": ""})
                for j in range(0, len(js), 15):
                    delta({"type": "input_json_delta", "partial_json": js[j:j + 15]})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": usage})
        event("message_stop", {"type": "message_stop"})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return 200


def main():
    ap = argparse.ArgumentParser(description="Scripted fake Anthropic Messages API")
    ap.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--script", required=True, help="the JSON script of answers")
    ap.add_argument("--log", default=None, help="append every request here (JSON lines)")
    a = ap.parse_args()
    with open(a.script) as f:
        STATE["script"] = json.load(f)
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
