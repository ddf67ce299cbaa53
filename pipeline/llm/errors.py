"""Errors an LLM call can end with, phrased for the person who started it."""

from __future__ import annotations


class LLMError(Exception):
    """A failed LLM call. `str(err)` is a plain sentence safe to show and log.

    kind: not_configured | auth | bad_request | rate_limited | server | timeout
          | connection | stream_dropped | bad_reply
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None,
                 retryable: bool = False, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s


class StreamInterrupted(LLMError):
    """The stream broke after some text arrived: the text is kept, never used as final."""

    def __init__(self, message: str, *, partial_text: str, kind: str = "stream_dropped") -> None:
        super().__init__(message, kind=kind)
        self.partial_text = partial_text


class NotConfigured(LLMError):
    def __init__(self, missing: list[str]) -> None:
        names = " and ".join(missing)
        super().__init__(
            f"No LLM is configured: set {names} (environment, or the maintainer's LLM settings page).",
            kind="not_configured",
        )
        self.missing = missing


def scrub(text: str, *secrets: str) -> str:
    """Remove secrets from text a server echoed back (some proxies echo headers)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text
