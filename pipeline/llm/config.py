"""Endpoint configuration for OpenAI-compatible LLM servers.

Plain data only: Django settings build these from the environment and the
maintainer's overrides; jobs rebuild them from settings by *name*, so a key
never travels in a job payload.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

DEFAULT_ENDPOINT = "default"
_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


class ConfigError(ValueError):
    """A malformed LLM setting; the message names the variable."""


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One named OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama...)."""

    name: str
    base_url: str = ""
    model: str = ""
    # repr=False: an Endpoint printed in a log or a traceback must not show the key.
    api_key: str = dataclasses.field(default="", repr=False)
    timeout_s: float = 120.0
    max_tokens: int = 4096
    temperature: float = 0.2
    max_retries: int = 4
    # Upper bound on one back-off sleep, also on an honoured Retry-After: a
    # server asking for ten minutes should fail the item, not hang a worker.
    max_backoff_s: float = 60.0
    # First back-off step; exponential with jitter from here (tests shrink it).
    backoff_s: float = 1.0
    # Ask for usage in streamed replies (OpenAI, vLLM and Ollama support it);
    # a server that rejects `stream_options` can switch it off per endpoint.
    stream_usage: bool = True

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    def missing(self) -> list[str]:
        """Setting names a maintainer has to set before this endpoint works."""
        prefix = env_prefix(self.name)
        out = []
        if not self.base_url:
            out.append(f"{prefix}BASE_URL")
        if not self.model:
            out.append(f"{prefix}MODEL")
        return out

    def with_overrides(self, overrides: Mapping[str, object]) -> Endpoint:
        """Apply a maintainer's overrides; empty values keep the environment's."""
        fields = {f.name for f in dataclasses.fields(self)} - {"name"}
        changes = {k: v for k, v in overrides.items() if k in fields and v not in (None, "")}
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def public(self) -> dict[str, object]:
        """What a page may show: everything but the key, which is only 'set' or not."""
        return {
            "name": self.name,
            "base_url": self.base_url,
            "model": self.model,
            "api_key_set": bool(self.api_key),
            "timeout_s": self.timeout_s,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "max_retries": self.max_retries,
            "configured": self.configured,
        }


def env_prefix(name: str) -> str:
    """`default` reads LLM_*, any other endpoint `x` reads LLM_X_*."""
    return "LLM_" if name == DEFAULT_ENDPOINT else f"LLM_{name.upper().replace('-', '_')}_"


def _float(env: Mapping[str, str], key: str, default: float, lo: float, hi: float) -> float:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{key} must be a number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{key} must be between {lo:g} and {hi:g}, got {raw}")
    return value


def _int(env: Mapping[str, str], key: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{key} must be between {lo} and {hi}, got {raw}")
    return value


def read_key(env: Mapping[str, str], prefix: str) -> str:
    """The key from <prefix>API_KEY or the file named by <prefix>API_KEY_FILE."""
    key = env.get(f"{prefix}API_KEY", "").strip()
    key_file = env.get(f"{prefix}API_KEY_FILE", "").strip()
    if key and key_file:
        raise ConfigError(f"set either {prefix}API_KEY or {prefix}API_KEY_FILE, not both")
    if key_file:
        try:
            key = Path(key_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            # The path is not a secret; the file's content is.
            raise ConfigError(f"{prefix}API_KEY_FILE: cannot read {key_file} ({exc.strerror})") from None
        if not key:
            raise ConfigError(f"{prefix}API_KEY_FILE: {key_file} is empty")
    return key


def endpoint_from_env(env: Mapping[str, str], name: str = DEFAULT_ENDPOINT) -> Endpoint:
    prefix = env_prefix(name)
    base_url = env.get(f"{prefix}BASE_URL", "").strip()
    if base_url and not re.match(r"^https?://", base_url):
        raise ConfigError(f"{prefix}BASE_URL must start with http:// or https://, got {base_url!r}")
    return Endpoint(
        name=name,
        base_url=base_url,
        model=env.get(f"{prefix}MODEL", "").strip(),
        api_key=read_key(env, prefix),
        timeout_s=_float(env, f"{prefix}TIMEOUT", 120.0, 1.0, 3600.0),
        max_tokens=_int(env, f"{prefix}MAX_TOKENS", 4096, 1, 1_000_000),
        temperature=_float(env, f"{prefix}TEMPERATURE", 0.2, 0.0, 2.0),
        max_retries=_int(env, f"{prefix}MAX_RETRIES", 4, 0, 20),
    )


def endpoints_from_env(env: Mapping[str, str]) -> dict[str, Endpoint]:
    """`default` always; more from LLM_ENDPOINTS=name,name (e.g. `preeval`).

    A named endpoint with no base URL or model of its own inherits the default's
    server and key, so `LLM_PREEVAL_MODEL=small-model` alone is enough.
    """
    out = {DEFAULT_ENDPOINT: endpoint_from_env(env)}
    names = [n.strip() for n in env.get("LLM_ENDPOINTS", "").split(",") if n.strip()]
    for name in names:
        if not _NAME_RE.match(name):
            raise ConfigError(f"LLM_ENDPOINTS: bad endpoint name {name!r} (lower-case letters, digits, - or _)")
        if name == DEFAULT_ENDPOINT:
            continue
        own = endpoint_from_env(env, name)
        base = out[DEFAULT_ENDPOINT]
        prefix = env_prefix(name)
        out[name] = dataclasses.replace(
            own,
            base_url=own.base_url or base.base_url,
            model=own.model or base.model,
            api_key=own.api_key or (base.api_key if not own.base_url else ""),
            timeout_s=own.timeout_s if f"{prefix}TIMEOUT" in env else base.timeout_s,
            max_retries=own.max_retries if f"{prefix}MAX_RETRIES" in env else base.max_retries,
        )
    return out
