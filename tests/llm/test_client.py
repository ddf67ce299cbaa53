"""The retrying client against a real HTTP server speaking the OpenAI API."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from pipeline.llm.client import chat, chat_stream
from pipeline.llm.config import Endpoint
from pipeline.llm.errors import LLMError, NotConfigured, StreamInterrupted
from tests.llm.fake_openai import FakeOpenAI

HI = [{"role": "user", "content": "hi"}]
KEY = "sk-test-SECRET-4242"


def test_plain_reply_with_usage(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("hello", usage=(12, 3), model="served-model")
    out = chat(endpoint, HI)
    assert out.text == "hello"
    assert out.model == "served-model"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.estimated) == (12, 3, False)
    req = fake_llm.requests[0]
    assert req.body["model"] == "gen-model"
    assert req.body["max_tokens"] == endpoint.max_tokens
    assert req.body["temperature"] == endpoint.temperature
    auth = {k.lower(): v for k, v in req.headers.items()}["authorization"]
    assert auth == f"Bearer {KEY}"


def test_missing_usage_is_estimated_and_marked(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("a reply of some length", usage=None)
    out = chat(endpoint, HI)
    assert out.usage.estimated and out.usage.completion_tokens > 0


def test_429_honours_retry_after(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.error(429, headers={"Retry-After": "0.3"})
    fake_llm.reply("ok")
    out = chat(endpoint, HI)
    assert out.text == "ok" and out.attempts == 2
    # A lower bound, not a speed claim: the client must not ask again early.
    gap = fake_llm.requests[1].at - fake_llm.requests[0].at
    assert gap >= 0.28


def test_5xx_is_retried(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.error(500)
    fake_llm.error(502)
    fake_llm.reply("ok")
    assert chat(endpoint, HI).attempts == 3


def test_retries_stop(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    for _ in range(5):
        fake_llm.error(503, message="overloaded")
    with pytest.raises(LLMError) as info:
        chat(endpoint, HI)
    assert info.value.kind == "server"
    assert len(fake_llm.requests) == endpoint.max_retries + 1
    assert "HTTP 503" in str(info.value) and "overloaded" in str(info.value)


def test_other_4xx_is_not_retried(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.error(400, message="maximum context length is 8192 tokens")
    fake_llm.reply("never")
    with pytest.raises(LLMError) as info:
        chat(endpoint, HI)
    assert info.value.kind == "bad_request"
    assert "maximum context length" in str(info.value)
    assert len(fake_llm.requests) == 1


def test_auth_error_is_a_plain_sentence_without_the_key(fake_llm: FakeOpenAI, endpoint: Endpoint,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    # Some proxies echo the header back; the key must still not reach the user.
    fake_llm.error(401, message=f"invalid key Bearer {KEY}")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMError) as info:
        chat(endpoint, HI)
    assert info.value.kind == "auth"
    assert "refused the API key" in str(info.value)
    assert KEY not in str(info.value)
    assert KEY not in caplog.text
    assert KEY not in repr(endpoint)


def test_echoed_key_in_5xx_is_scrubbed_from_errors_and_logs(fake_llm: FakeOpenAI, endpoint: Endpoint,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    for _ in range(3):
        fake_llm.error(500, message=f"upstream said {KEY}")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMError) as info:
        chat(endpoint, HI)
    assert KEY not in str(info.value) and "[redacted]" in str(info.value)
    assert "retrying" in caplog.text
    assert KEY not in caplog.text


def test_timeout_is_retried_then_reported(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    ep = dataclasses.replace(endpoint, max_retries=1, timeout_s=0.2)
    fake_llm.slow(0.6)
    fake_llm.slow(0.6)
    with pytest.raises(LLMError) as info:
        chat(ep, HI)
    assert info.value.kind == "timeout"
    assert "did not answer within 0.2 s" in str(info.value)
    assert len(fake_llm.requests) == 2


def test_timeout_then_success(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.slow(0.8)
    fake_llm.reply("fine")
    assert chat(endpoint, HI).text == "fine"


def test_malformed_json_body(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    for _ in range(3):
        fake_llm.malformed()
    with pytest.raises(LLMError) as info:
        chat(endpoint, HI)
    assert info.value.kind == "bad_reply"
    assert "not valid JSON" in str(info.value)


def test_connection_refused(endpoint: Endpoint) -> None:
    ep = dataclasses.replace(endpoint, base_url="http://127.0.0.1:9/v1", max_retries=1)
    with pytest.raises(LLMError) as info:
        chat(ep, HI)
    assert info.value.kind == "connection"
    assert str(info.value) == "Could not connect to the LLM server at 127.0.0.1:9."


def test_not_configured_names_the_settings() -> None:
    with pytest.raises(NotConfigured) as info:
        chat(Endpoint(name="default"), HI)
    assert info.value.missing == ["LLM_BASE_URL", "LLM_MODEL"]
    with pytest.raises(NotConfigured) as info:
        chat(Endpoint(name="preeval", base_url="http://x/v1"), HI)
    assert info.value.missing == ["LLM_PREEVAL_MODEL"]


def test_stream_delivers_deltas_in_order(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.stream(["Hel", "lo ", "wor", "ld"], usage=(20, 4))
    got: list[str] = []
    out = chat_stream(endpoint, HI, on_delta=got.append)
    assert got == ["Hel", "lo ", "wor", "ld"]
    assert out.text == "Hello world" and out.complete and out.finish_reason == "stop"
    assert out.usage.completion_tokens == 4 and not out.usage.estimated
    assert fake_llm.requests[0].body["stream_options"] == {"include_usage": True}


def test_stream_retries_before_any_token(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.error(429, headers={"Retry-After": "0"})
    fake_llm.stream(["ok"])
    got: list[str] = []
    out = chat_stream(endpoint, HI, on_delta=got.append)
    assert out.text == "ok" and out.attempts == 2 and got == ["ok"]


def test_dropped_stream_keeps_partial_and_does_not_retry(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.drop(["def f", "(x):", " return", " x"], after=2)
    fake_llm.stream(["a second, different reply"])
    got: list[str] = []
    with pytest.raises(StreamInterrupted) as info:
        chat_stream(endpoint, HI, on_delta=got.append)
    assert info.value.partial_text == "def f(x):"
    assert "broke off after 9 characters" in str(info.value)
    assert len(fake_llm.requests) == 1  # the user saw tokens: no silent second reply


def test_stop_ends_the_stream_as_incomplete(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.stream(["one ", "two ", "three"], chunk_delay_s=0.05)
    got: list[str] = []
    out = chat_stream(endpoint, HI, on_delta=got.append, should_stop=lambda: len(got) >= 1)
    assert not out.complete and out.finish_reason == "stopped"
    assert out.text == "one "


def test_server_rejecting_stream_options_is_asked_again_without(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.error(400, message="Unrecognized request argument supplied: stream_options")
    fake_llm.stream(["ok"], usage=None)
    out = chat_stream(endpoint, HI, on_delta=lambda _: None)
    assert out.text == "ok" and out.usage.estimated
    assert "stream_options" in fake_llm.requests[0].body and "stream_options" not in fake_llm.requests[1].body


def test_other_400_on_a_stream_is_not_retried(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.error(400, message="messages: too long")
    with pytest.raises(LLMError, match="too long"):
        chat_stream(endpoint, HI, on_delta=lambda _: None)
    assert len(fake_llm.requests) == 1
