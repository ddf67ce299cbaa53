"""A real HTTP server on loopback that speaks the OpenAI chat-completions API.

Tests script its replies one request at a time; the real `openai` client talks
to it over TCP. It can answer plainly or as an SSE stream (`data:` chunks and
`[DONE]`), and inject 429 with Retry-After, 5xx, slow answers (timeouts), a
stream dropped mid-way and malformed JSON. Every request is recorded (headers
and body) so tests can check what was sent. Used by tests/llm, tests/chat and
bench/chat_latency.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclasses.dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


@dataclasses.dataclass
class Script:
    kind: str  # reply | error | slow | malformed | drop
    text: str = ""
    chunks: list[str] | None = None
    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: Any = None
    delay_s: float = 0.0  # before answering
    chunk_delay_s: float = 0.0  # between streamed chunks
    drop_after: int | None = None  # chunks sent before the connection is cut
    usage: tuple[int, int] | None = (11, 7)
    model: str = "fake-model"
    finish: str = "stop"
    # Set by the server: wall-clock times (time.time()) each chunk was flushed.
    sent_at: list[float] = dataclasses.field(default_factory=list)
    release: threading.Event | None = None  # a stream waits on it after the first chunk


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.scripts: deque[Script] = deque()
        self.played: list[Script] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with fake._lock:
                    fake.requests.append(Recorded(self.path, dict(self.headers.items()), body, time.time()))
                    script = fake.scripts.popleft() if fake.scripts else None
                    if script is not None:
                        fake.played.append(script)
                if script is None:
                    self._json(500, {"error": {"message": "fake server: no scripted reply left"}})
                    return
                if not self.path.endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                # The client may give up mid-answer (timeout tests): nothing to do.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    fake._answer(self, script, body)

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients hanging up mid-answer is what several tests do

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    # --- scripting -------------------------------------------------------
    def add(self, script: Script) -> Script:
        with self._lock:
            self.scripts.append(script)
        return script

    def reply(self, text: str, **kw: Any) -> Script:
        """A successful answer; streamed in ~4-character chunks if the request streams."""
        return self.add(Script(kind="reply", text=text, **kw))

    def stream(self, chunks: list[str], **kw: Any) -> Script:
        return self.add(Script(kind="reply", text="".join(chunks), chunks=chunks, **kw))

    def error(self, status: int, *, headers: dict[str, str] | None = None, message: str = "injected") -> Script:
        return self.add(Script(kind="error", status=status, headers=headers or {},
                               body={"error": {"message": message, "type": "injected"}}))

    def slow(self, seconds: float, text: str = "late") -> Script:
        return self.add(Script(kind="reply", text=text, delay_s=seconds))

    def malformed(self) -> Script:
        return self.add(Script(kind="malformed"))

    def drop(self, chunks: list[str], after: int) -> Script:
        return self.add(Script(kind="reply", text="".join(chunks), chunks=chunks, drop_after=after))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- answering -------------------------------------------------------
    def _answer(self, h: BaseHTTPRequestHandler, s: Script, body: dict[str, Any]) -> None:
        if s.delay_s:
            time.sleep(s.delay_s)
        if s.kind == "error":
            h._json(s.status, s.body, s.headers)  # type: ignore[attr-defined]
            return
        if s.kind == "malformed":
            data = b'{"id": "x", "choices": [ {"message": '  # cut JSON
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        usage = None
        if s.usage is not None:
            usage = {"prompt_tokens": s.usage[0], "completion_tokens": s.usage[1],
                     "total_tokens": s.usage[0] + s.usage[1]}
        if not body.get("stream"):
            h._json(200, {  # type: ignore[attr-defined]
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": s.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": s.text},
                             "finish_reason": s.finish}],
                "usage": usage,
            })
            return
        chunks = s.chunks if s.chunks is not None else [s.text[i:i + 4] for i in range(0, len(s.text), 4)]
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def send(obj: Any) -> None:
            data = f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode()
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": s.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        send(chunk({"role": "assistant", "content": ""}))
        for i, piece in enumerate(chunks):
            if s.drop_after is not None and i >= s.drop_after:
                # Cut the connection mid-body: no terminating chunk, no [DONE].
                h.wfile.flush()
                h.connection.shutdown(2)
                h.close_connection = True
                return
            if i and s.chunk_delay_s:
                time.sleep(s.chunk_delay_s)
            if i == 1 and s.release is not None:
                s.release.wait(10)
            send(chunk({"content": piece}))
            s.sent_at.append(time.time())
        send(chunk({}, s.finish))
        if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            send({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                  "model": s.model, "choices": [], "usage": usage})
        send("[DONE]")
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()
