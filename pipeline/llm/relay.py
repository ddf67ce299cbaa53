"""Per-message Redis streams that carry a reply from the LLM job to the page.

The job appends each delta as it arrives (XADD), then one `end` entry; the web
process relays entries to the browser as server-sent events, starting from any
entry id, so a reload resumes where the page was. A stop flag lets the user end
a reply: the job checks it between chunks. Nothing secret goes in: text only.
"""

from __future__ import annotations

import threading
import time
from typing import Any

TTL_S = 6 * 3600


def stream_key(message_id: int) -> str:
    return f"kstudio:chat:msg:{message_id}:stream"


def stop_key(message_id: int) -> str:
    return f"kstudio:chat:msg:{message_id}:stop"


def publish_delta(r: Any, message_id: int, text: str) -> str:
    key = stream_key(message_id)
    entry_id = r.xadd(key, {"t": "delta", "d": text})
    return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)


def publish_end(r: Any, message_id: int, *, status: str, error: str = "") -> None:
    key = stream_key(message_id)
    pipe = r.pipeline()
    pipe.xadd(key, {"t": "end", "status": status, "error": error})
    pipe.expire(key, TTL_S)
    pipe.execute()


def request_stop(r: Any, message_id: int) -> None:
    r.set(stop_key(message_id), "1", ex=TTL_S)


def stop_requested(r: Any, message_id: int) -> bool:
    return bool(r.exists(stop_key(message_id)))


def read(r: Any, message_id: int, after: str = "0", block_ms: int = 15000,
         count: int = 500) -> list[tuple[str, dict[str, str]]]:
    """Entries after `after` (an entry id), waiting up to block_ms for one."""
    res = r.xread({stream_key(message_id): after}, count=count, block=block_ms)
    out: list[tuple[str, dict[str, str]]] = []
    for _key, entries in res or []:
        for entry_id, fields in entries:
            eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
            out.append((eid, {(k.decode() if isinstance(k, bytes) else k):
                              (v.decode() if isinstance(v, bytes) else v) for k, v in fields.items()}))
    return out


class Publisher:
    """Appends deltas to a message's stream from a background thread.

    The LLM loop only appends to a buffer; the thread writes whatever has
    accumulated as one entry, then pauses `pause_s` so that a fast stream
    (hundreds of chunks a second) costs tens of Redis writes a second, not
    hundreds. A lone token is written at once: the pause comes after a write,
    never before one. close() writes what is left, then returns.
    """

    def __init__(self, r: Any, message_id: int, *, pause_s: float = 0.005) -> None:
        self._r = r
        self._id = message_id
        self._pause = pause_s
        self._buf: list[str] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self.error: BaseException | None = None
        self.entries = 0
        self._thread = threading.Thread(target=self._run, name=f"relay-{message_id}", daemon=True)
        self._thread.start()

    def add(self, text: str) -> None:
        with self._lock:
            self._buf.append(text)
        self._wake.set()

    def _take(self) -> str:
        with self._lock:
            text = "".join(self._buf)
            self._buf.clear()
        return text

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            text = self._take()
            if text:
                try:
                    publish_delta(self._r, self._id, text)
                    self.entries += 1
                except Exception as exc:  # noqa: BLE001 - reported by close()
                    self.error = exc
                    return
                time.sleep(self._pause)
            if self._closed and not self._buf:
                return

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._thread.join()
        if self.error is None:
            # Anything added after the thread's last look (a race with close).
            text = self._take()
            if text:
                publish_delta(self._r, self._id, text)
                self.entries += 1
        if self.error is not None:
            raise self.error
