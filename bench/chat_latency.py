"""How long a streamed token takes from the LLM server to the chat panel.

The whole path is real: a fake OpenAI server (tests/llm/fake_openai.py)
streams chunks at a steady pace and records when it flushed each one; an RQ
worker (`manage.py rqworker default`) streams the reply into Redis; uvicorn
serves the ASGI app whose SSE view relays the Redis stream; Debian's chromium
(Playwright) shows the page, and chat.js records when each delta arrived
(`window.ksChatProbe`). Latency of chunk i = browser receive time - server
flush time (same machine, same clock).

    .venv/bin/python bench/chat_latency.py [--turns 3] [--chunks 60] [--interval-ms 25]

Prints the figures; never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)  # noqa: S310 - loopback
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100 * (len(s) - 1))))
    return s[k]


def arrival_times(chunks: list[str], received: list[tuple[int, str]]) -> list[float]:
    """For each chunk, when (s) the received pieces (ms, text) first covered its end."""
    out = []
    covered = 0
    j = 0
    end = 0
    for chunk in chunks:
        end += len(chunk)
        while covered < end:
            covered += len(received[j][1])
            j += 1
        out.append(received[j - 1][0] / 1000.0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--chunks", type=int, default=60)
    ap.add_argument("--interval-ms", type=float, default=25.0)
    args = ap.parse_args()

    from pipeline.redis_server import start_redis
    from tests.llm.fake_openai import FakeOpenAI

    tmp = Path(tempfile.mkdtemp(prefix="ks-bench-chat-"))
    redis = start_redis()
    fake = FakeOpenAI()
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kernelstudio.settings",
        "KS_DATA_DIR": str(tmp),
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "REDIS_URL": redis.url,
        "LLM_BASE_URL": fake.url,
        "LLM_MODEL": "bench-model",
        "LLM_API_KEY": "sk-bench-not-a-secret",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    # Playwright's sync API keeps an event loop on this thread; the ORM calls here are plain sync code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        import django

        django.setup()
        from django.conf import settings
        from django.test import Client

        from annotations.models import Role, User
        from tests.factories import make_sample

        user = User.objects.create_user(username="bench", password="bench-password-1", role=Role.ANNOTATOR)
        sample = make_sample("bench/add")
        # A thread exists, so every turn goes through fetch + SSE (the first
        # message of a sample is a plain form post that reloads the page).
        from annotations.services.chat import thread_create

        thread_create(sample=sample, user=user, title="bench")
        client = Client()
        client.force_login(user)
        session = client.cookies[settings.SESSION_COOKIE_NAME].value

        procs.append(subprocess.Popen([sys.executable, "manage.py", "rqworker", "default"], cwd=ROOT, env=env))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "kernelstudio.asgi:application", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning"], cwd=ROOT, env=env))
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/login/")

        import redis as redis_lib
        from playwright.sync_api import sync_playwright

        from annotations.models import ChatMessage
        from pipeline.llm import relay

        rconn = redis_lib.Redis.from_url(redis.url)
        latencies: list[float] = []
        per_turn = []
        worker_lag: list[float] = []
        relay_lag: list[float] = []
        entries_per_turn: list[int] = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                         args=["--headless=new", "--no-sandbox", "--disable-gpu"])
            ctx = browser.new_context()
            ctx.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": base}])
            ctx.add_init_script("window.__ks = []; window.ksChatProbe = (t) => window.__ks.push([Date.now(), t]);")
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/samples/{sample.pk}/")
            page.wait_for_selector(".chat-thread[data-thread-id]")
            for turn in range(args.turns):
                chunks = [f"tok{i:03d} " for i in range(args.chunks)]
                script = fake.stream(chunks, chunk_delay_s=args.interval_ms / 1000.0)
                page.evaluate("window.__ks = []")
                page.fill(".chat-form textarea[name=content]", f"turn {turn}: explain the kernel")
                page.click(".chat-form button.primary")
                total = len("".join(chunks))
                page.wait_for_function(f"window.__ks.reduce((n, e) => n + e[1].length, 0) >= {total}",
                                       timeout=120_000)
                got = page.evaluate("window.__ks")
                if "".join(t for _, t in got) != "".join(chunks):
                    raise RuntimeError(f"turn {turn}: the page did not receive the text that was sent")
                # Deltas may arrive coalesced: chunk i has arrived when the text
                # received so far covers its last character.
                page_times = arrival_times(chunks, got)
                lat = [t - sent for t, sent in zip(page_times, script.sent_at, strict=True)]
                latencies += lat
                per_turn.append(lat)
                page.wait_for_selector(".chat-msg.role-assistant.state-complete >> nth=" + str(turn))
                # Where the time goes: a stream entry's id is the ms Redis stored it.
                reply = ChatMessage.objects.filter(role="assistant").order_by("-id").first()
                assert reply is not None
                entries = [e for e in relay.read(rconn, reply.pk, "0", block_ms=1) if e[1]["t"] == "delta"]
                stored = arrival_times(chunks, [(int(eid.split("-")[0]), f["d"]) for eid, f in entries])
                worker_lag += [(st - sent) * 1000 for st, sent in zip(stored, script.sent_at, strict=True)]
                relay_lag += [(t - st) * 1000 for t, st in zip(page_times, stored, strict=True)]
                entries_per_turn.append(len(entries))
            browser.close()

        print("chat token latency: LLM server flush -> chat panel (chromium), real worker + Redis + uvicorn SSE")
        print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
              f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        print(f"turns {args.turns}, {args.chunks} chunks each, one every {args.interval_ms:g} ms")
        for i, lat in enumerate(per_turn):
            ms = [x * 1000 for x in lat]
            print(f"  turn {i}: median {statistics.median(ms):6.1f} ms   p95 {pct(ms, 95):6.1f} ms   "
                  f"max {max(ms):6.1f} ms   first token {ms[0]:6.1f} ms")
        ms = [x * 1000 for x in latencies]
        print(f"all {len(ms)} chunks: median {statistics.median(ms):.1f} ms, p95 {pct(ms, 95):.1f} ms, "
              f"max {max(ms):.1f} ms (target: <= 300 ms)")
        print(f"  of which LLM server -> Redis (worker): median {statistics.median(worker_lag):.1f} ms, "
              f"p95 {pct(worker_lag, 95):.1f} ms; Redis -> page (SSE relay, browser): median "
              f"{statistics.median(relay_lag):.1f} ms, p95 {pct(relay_lag, 95):.1f} ms (1 ms clock resolution)")
        print(f"  Redis stream entries per turn (deltas coalesced by the worker): {entries_per_turn}")
        return 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        fake.close()
        redis.stop()


if __name__ == "__main__":
    raise SystemExit(main())
