#!/usr/bin/env python3
"""A scripted model server on loopback for the agent tests.

Speaks the two streaming APIs the real agent CLIs use: Anthropic Messages
(`POST /v1/messages`, Claude Code) and OpenAI Responses (`POST
/v1/responses`, Codex). Each request that offers the agent's tools takes
the next turn of the script; every request body is appended to the log, so
a test reads what the agent sent back (tool results, exit codes) there.

Usage: fake_model.py SCRIPT.json LOG.jsonl PORT_FILE

SCRIPT.json is a list of turns; a turn is a list of calls:
  {"tool": "Bash", "input": {...}}            Claude Code tool_use
  {"tool": "exec_command", "input": {...}}    Codex function call
  {"tool": "apply_patch", "patch": "..."}     Codex freeform tool call
  {"text": "..."}                             plain text
Once the script is used up, every request gets the text "done".
The server binds 127.0.0.1 only, writes its port to PORT_FILE and exits by
itself after 10 minutes.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIFETIME = 600


class State:
    def __init__(self, script, log):
        self.script = script
        self.log = log
        self.lock = threading.Lock()
        self.n = 0

    def next_turn(self):
        with self.lock:
            if self.n < len(self.script):
                turn = self.script[self.n]
            else:
                turn = [{"text": "done"}]
            self.n += 1
            return self.n, turn

    def record(self, path, body):
        with self.lock:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": path, "body": body}) + "\n")


def sse(event, data):
    return ("event: %s\ndata: %s\n\n" % (event, json.dumps(data))).encode()


def anthropic_events(n, turn, model):
    yield sse("message_start", {
        "type": "message_start",
        "message": {"id": "msg_%d" % n, "type": "message", "role": "assistant",
                    "model": model, "content": [], "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1}}})
    stop = "end_turn"
    for i, call in enumerate(turn):
        if "text" in call:
            yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": call["text"]}})
        else:
            stop = "tool_use"
            yield sse("content_block_start", {
                "type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": "toolu_%d_%d" % (n, i),
                                  "name": call["tool"], "input": {}}})
            yield sse("content_block_delta", {
                "type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(call["input"])}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
    yield sse("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 5}})
    yield sse("message_stop", {"type": "message_stop"})


def responses_events(n, turn):
    rid = "resp_%d" % n
    yield sse("response.created", {"type": "response.created",
                                   "response": {"id": rid, "object": "response",
                                                "status": "in_progress", "output": []}})
    items = []
    for i, call in enumerate(turn):
        if "text" in call:
            item = {"type": "message", "id": "msg_%d_%d" % (n, i), "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": call["text"], "annotations": []}]}
        elif call["tool"] == "apply_patch":
            item = {"type": "custom_tool_call", "id": "ctc_%d_%d" % (n, i), "status": "completed",
                    "call_id": "call_%d_%d" % (n, i), "name": "apply_patch",
                    "input": call["patch"]}
        else:
            item = {"type": "function_call", "id": "fc_%d_%d" % (n, i), "status": "completed",
                    "call_id": "call_%d_%d" % (n, i), "name": call["tool"],
                    "arguments": json.dumps(call["input"])}
        items.append(item)
        yield sse("response.output_item.added", {"type": "response.output_item.added",
                                                 "output_index": i, "item": item})
        yield sse("response.output_item.done", {"type": "response.output_item.done",
                                                "output_index": i, "item": item})
    yield sse("response.completed", {
        "type": "response.completed",
        "response": {"id": rid, "object": "response", "status": "completed", "output": items,
                     "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                               "total_tokens": 15}}})


def offers_tools(body):
    names = set()
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            names.add(t.get("name") or (t.get("function") or {}).get("name"))
    return bool(names & {"Bash", "exec_command", "shell", "apply_patch"})


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            state.record(self.path, None)
            data = json.dumps({"object": "list", "data": [], "models": []}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            state.record(self.path, body)
            if offers_tools(body):
                n, turn = state.next_turn()
            else:
                n, turn = 0, [{"text": "ok"}]
            if self.path.startswith("/v1/messages"):
                events = anthropic_events(n, turn, body.get("model", "claude"))
            elif self.path.startswith("/v1/responses"):
                events = responses_events(n, turn)
            else:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for chunk in events:
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True

    return Handler


def main():
    script_file, log, port_file = sys.argv[1:4]
    with open(script_file, encoding="utf-8") as f:
        script = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(script, log)))
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    threading.Thread(target=lambda: (time.sleep(LIFETIME), server.shutdown()), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
