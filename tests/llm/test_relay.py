"""The reply relay on a real Redis: order, coalescing, the end entry, the stop flag."""

from __future__ import annotations

import pytest
import redis

from pipeline.llm import relay


@pytest.fixture
def r(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url)


def test_publisher_keeps_order_and_text(r: redis.Redis) -> None:
    pub = relay.Publisher(r, 7, pause_s=0.01)
    pieces = [f"t{i} " for i in range(500)]
    for p in pieces:
        pub.add(p)
    pub.close()
    relay.publish_end(r, 7, status="complete")
    entries = relay.read(r, 7, "0", block_ms=1, count=10_000)
    deltas = [f["d"] for _, f in entries if f["t"] == "delta"]
    assert "".join(deltas) == "".join(pieces)
    assert len(deltas) == pub.entries < len(pieces)  # coalesced, not one write per piece
    assert entries[-1][1] == {"t": "end", "status": "complete", "error": ""}
    assert r.ttl(relay.stream_key(7)) > 0  # finished streams expire


def test_a_lone_token_is_written_at_once(r: redis.Redis) -> None:
    pub = relay.Publisher(r, 8, pause_s=5.0)  # a long pause must not delay the first write
    pub.add("hello")
    got = relay.read(r, 8, "0", block_ms=3000)
    assert [f["d"] for _, f in got] == ["hello"]
    pub.close()


def test_read_resumes_after_an_entry(r: redis.Redis) -> None:
    first = relay.publish_delta(r, 9, "a")
    relay.publish_delta(r, 9, "b")
    assert [f["d"] for _, f in relay.read(r, 9, first, block_ms=1)] == ["b"]


def test_stop_flag(r: redis.Redis) -> None:
    assert not relay.stop_requested(r, 10)
    relay.request_stop(r, 10)
    assert relay.stop_requested(r, 10)


def test_publisher_reports_a_redis_failure(redis_url: str) -> None:
    dead = redis.Redis.from_url("redis://127.0.0.1:9/0", socket_connect_timeout=0.2)
    pub = relay.Publisher(dead, 11)
    pub.add("x")
    with pytest.raises(redis.ConnectionError):
        pub.close()
