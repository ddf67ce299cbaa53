"""Chat completions against an OpenAI-compatible endpoint, with our own retries.

The `openai` client's built-in retries are switched off (max_retries=0) so that
one policy, tested against a real HTTP server, decides: retry 429 (honouring
Retry-After), 5xx, connection errors and timeouts with exponential back-off and
jitter; never retry other 4xx. Errors surface as `LLMError` with a plain
sentence that never contains the key.
"""

from __future__ import annotations

import dataclasses
import email.utils
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from .config import Endpoint
from .errors import LLMError, NotConfigured, StreamInterrupted, scrub

log = logging.getLogger(__name__)

Message = dict[str, str]


@dataclasses.dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # True when the server sent no usage and we counted ~4 characters a token.
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, object]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "estimated": self.estimated,
        }

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )


@dataclasses.dataclass(frozen=True)
class Completion:
    text: str
    model: str
    usage: Usage
    finish_reason: str
    attempts: int = 1
    # False when the user pressed Stop: the text is what arrived before that.
    complete: bool = True


def estimate_tokens(text: str) -> int:
    """Rough count (about 4 characters a token for code and English)."""
    return max(1, (len(text) + 3) // 4) if text else 0


def _host(endpoint: Endpoint) -> str:
    return urlsplit(endpoint.base_url).netloc or endpoint.base_url


def _retry_after(response: Any) -> float | None:
    if response is None:
        return None
    headers = response.headers
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    msg = ""
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = str(err.get("message", "")) if isinstance(err, dict) else str(err)
    elif isinstance(body, str):
        msg = body
    msg = " ".join(msg.split())[:300]
    return f": {msg}" if msg else ""


def translate(exc: BaseException, endpoint: Endpoint) -> LLMError:
    """Turn an `openai` exception into an LLMError with a plain sentence."""
    host = _host(endpoint)
    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return LLMError(
            f"The LLM server at {host} did not answer within {endpoint.timeout_s:g} s.",
            kind="timeout", retryable=True,
        )
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(f"Could not connect to the LLM server at {host}.", kind="connection", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = scrub(_server_detail(exc), endpoint.api_key)
        if status == 429:
            return LLMError(
                f"The LLM server at {host} is rate limiting requests (HTTP 429){detail}.",
                kind="rate_limited", status=status, retryable=True,
                retry_after_s=_retry_after(exc.response),
            )
        if status >= 500:
            return LLMError(
                f"The LLM server at {host} failed (HTTP {status}){detail}.",
                kind="server", status=status, retryable=True,
                retry_after_s=_retry_after(exc.response),
            )
        if status in (401, 403):
            return LLMError(
                f"The LLM server at {host} refused the API key (HTTP {status}); check the key in the LLM settings.",
                kind="auth", status=status,
            )
        if status == 404:
            return LLMError(
                f"The LLM server at {host} has no model {endpoint.model!r} or no chat-completions API (HTTP 404){detail}.",
                kind="bad_request", status=status,
            )
        return LLMError(
            f"The LLM server at {host} rejected the request (HTTP {status}){detail}.",
            kind="bad_request", status=status,
        )
    if isinstance(exc, openai.OpenAIError):
        return LLMError(
            scrub(f"The LLM call to {host} failed: {exc}", endpoint.api_key), kind="bad_reply"
        )
    raise exc


def _retrying(endpoint: Endpoint) -> Retrying:
    jitter = wait_exponential_jitter(multiplier=endpoint.backoff_s, max=endpoint.max_backoff_s,
                                     jitter=endpoint.backoff_s)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, LLMError) and exc.retry_after_s is not None:
            # The server said when; asking earlier only earns another 429.
            return min(exc.retry_after_s, endpoint.max_backoff_s)
        return float(jitter(state))

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning("LLM call to %s failed (attempt %d): %s; retrying in %.2f s",
                    _host(endpoint), state.attempt_number, exc,
                    state.next_action.sleep if state.next_action else 0.0)

    return Retrying(
        retry=retry_if_exception(lambda e: isinstance(e, LLMError) and e.retryable),
        stop=stop_after_attempt(endpoint.max_retries + 1),
        wait=wait,
        before_sleep=before_sleep,
        reraise=True,
    )


def _client(endpoint: Endpoint) -> openai.OpenAI:
    if not endpoint.configured:
        raise NotConfigured(endpoint.missing())
    return openai.OpenAI(
        base_url=endpoint.base_url,
        # Local servers (Ollama, vLLM without --api-key) need none, but the
        # client insists on one; they ignore the header.
        api_key=endpoint.api_key or "no-key",
        timeout=endpoint.timeout_s,
        max_retries=0,
    )


def chat(endpoint: Endpoint, messages: Sequence[Message], *, json_mode: bool = False) -> Completion:
    """One non-streamed completion, retried per the policy above."""
    client = _client(endpoint)
    attempts = 0

    def call() -> Completion:
        nonlocal attempts
        attempts += 1
        kwargs: dict[str, Any] = {}
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            resp = client.chat.completions.create(
                model=endpoint.model,
                messages=list(messages),  # type: ignore[arg-type]
                max_tokens=endpoint.max_tokens,
                temperature=endpoint.temperature,
                **kwargs,
            )
        except openai.OpenAIError as exc:
            raise translate(exc, endpoint) from None
        except ValueError:
            # A body that is not JSON (a proxy's error page, a cut reply).
            raise LLMError(f"The LLM server at {_host(endpoint)} sent a reply that is not valid JSON.",
                           kind="bad_reply", retryable=True) from None
        if not getattr(resp, "choices", None):
            raise LLMError(f"The LLM server at {_host(endpoint)} sent a reply with no choices.",
                           kind="bad_reply", retryable=True)
        choice = resp.choices[0]
        text = choice.message.content or ""
        u = resp.usage
        prompt_text = "".join(m.get("content", "") for m in messages)
        usage = (
            Usage(u.prompt_tokens or 0, u.completion_tokens or 0)
            if u is not None
            else Usage(estimate_tokens(prompt_text), estimate_tokens(text), estimated=True)
        )
        return Completion(text=text, model=resp.model or endpoint.model, usage=usage,
                          finish_reason=choice.finish_reason or "", attempts=attempts)

    with client:
        return _retrying(endpoint)(call)


def chat_stream(
    endpoint: Endpoint,
    messages: Sequence[Message],
    *,
    on_delta: Callable[[str], None],
    should_stop: Callable[[], bool] | None = None,
) -> Completion:
    """Stream a completion, calling on_delta(text) for each piece as it arrives.

    Retries happen only while nothing has been delivered: once the user has
    seen tokens, a retry would show them a second, different reply. A stream
    that breaks after that raises StreamInterrupted carrying the partial text.
    should_stop() is checked between chunks; when it returns True the stream is
    closed and the partial reply returned with complete=False.
    """
    client = _client(endpoint)
    attempts = 0
    delivered: list[str] = []

    def call() -> Completion:
        nonlocal attempts
        attempts += 1
        kwargs: dict[str, Any] = {}
        if ask_usage:
            kwargs["stream_options"] = {"include_usage": True}
        usage: Usage | None = None
        model = endpoint.model
        finish = ""
        try:
            # Any: the **kwargs defeat the SDK's stream=True overload.
            stream: Any = client.chat.completions.create(
                model=endpoint.model,
                messages=list(messages),  # type: ignore[arg-type]
                max_tokens=endpoint.max_tokens,
                temperature=endpoint.temperature,
                stream=True,
                **kwargs,
            )
            with stream:
                for chunk in stream:
                    if chunk.model:
                        model = chunk.model
                    if chunk.usage is not None:
                        usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                    for choice in chunk.choices or []:
                        piece = choice.delta.content if choice.delta else None
                        if piece:
                            delivered.append(piece)
                            on_delta(piece)
                        if choice.finish_reason:
                            finish = choice.finish_reason
                    if should_stop is not None and should_stop():
                        return _finish(model, usage, "stopped", complete=False)
        except openai.OpenAIError as exc:
            err = translate(exc, endpoint)
            if delivered:
                why = "the connection was cut" if err.kind == "connection" else err.message
                raise StreamInterrupted(
                    f"The reply from {_host(endpoint)} broke off after {len(''.join(delivered))} characters ({why}).",
                    partial_text="".join(delivered),
                ) from None
            raise err from None
        except ValueError:
            raise LLMError(f"The LLM server at {_host(endpoint)} sent a stream chunk that is not valid JSON.",
                           kind="bad_reply", retryable=not delivered) from None
        if not finish:
            # The server closed the connection without a finish_reason or
            # [DONE]: the reply may be cut anywhere, so it is not final.
            if delivered:
                raise StreamInterrupted(
                    f"The reply from {_host(endpoint)} ended without finishing "
                    f"after {len(''.join(delivered))} characters.",
                    partial_text="".join(delivered),
                )
            raise LLMError(f"The LLM server at {_host(endpoint)} closed the stream without a reply.",
                           kind="stream_dropped", retryable=True)
        return _finish(model, usage, finish, complete=True)

    def _finish(model: str, usage: Usage | None, finish: str, *, complete: bool) -> Completion:
        text = "".join(delivered)
        if usage is None:
            prompt_text = "".join(m.get("content", "") for m in messages)
            usage = Usage(estimate_tokens(prompt_text), estimate_tokens(text), estimated=True)
        return Completion(text=text, model=model, usage=usage, finish_reason=finish,
                          attempts=attempts, complete=complete)

    ask_usage = endpoint.stream_usage
    with client:
        try:
            return _retrying(endpoint)(call)
        except LLMError as exc:
            # Older vLLM/Ollama builds reject `stream_options`; ask once more
            # without it (usage is then estimated and marked so).
            if not (ask_usage and exc.status == 400 and "stream_options" in exc.message and not delivered):
                raise
            log.warning("LLM server at %s rejects stream_options; streaming without usage", _host(endpoint))
            ask_usage = False
            return _retrying(endpoint)(call)
