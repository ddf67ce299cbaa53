from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.llm.config import ConfigError, Endpoint, endpoint_from_env, endpoints_from_env


def test_defaults_are_unconfigured() -> None:
    ep = endpoint_from_env({})
    assert not ep.configured
    assert ep.missing() == ["LLM_BASE_URL", "LLM_MODEL"]


def test_reads_all_settings() -> None:
    ep = endpoint_from_env({
        "LLM_BASE_URL": "http://vllm:8000/v1", "LLM_MODEL": "qwen", "LLM_API_KEY": "k-123456",
        "LLM_TIMEOUT": "30", "LLM_MAX_TOKENS": "2048", "LLM_TEMPERATURE": "0.7", "LLM_MAX_RETRIES": "1",
    })
    assert (ep.base_url, ep.model, ep.api_key) == ("http://vllm:8000/v1", "qwen", "k-123456")
    assert (ep.timeout_s, ep.max_tokens, ep.temperature, ep.max_retries) == (30.0, 2048, 0.7, 1)
    assert "k-123456" not in repr(ep)
    assert ep.public()["api_key_set"] is True and "k-123456" not in str(ep.public())


def test_key_file(tmp_path: Path) -> None:
    f = tmp_path / "key"
    f.write_text("sk-from-file\n")
    assert endpoint_from_env({"LLM_API_KEY_FILE": str(f)}).api_key == "sk-from-file"


@pytest.mark.parametrize(("env", "message"), [
    ({"LLM_API_KEY": "a", "LLM_API_KEY_FILE": "/x"}, "not both"),
    ({"LLM_API_KEY_FILE": "/nonexistent/key"}, "cannot read /nonexistent/key"),
    ({"LLM_TIMEOUT": "soon"}, "LLM_TIMEOUT must be a number"),
    ({"LLM_TEMPERATURE": "5"}, "LLM_TEMPERATURE must be between 0 and 2"),
    ({"LLM_MAX_TOKENS": "1.5"}, "LLM_MAX_TOKENS must be an integer"),
    ({"LLM_BASE_URL": "vllm:8000"}, "must start with http"),
    ({"LLM_ENDPOINTS": "Bad Name"}, "bad endpoint name"),
])
def test_bad_values_raise_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        endpoints_from_env(env)


def test_empty_key_file(tmp_path: Path) -> None:
    f = tmp_path / "key"
    f.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        endpoint_from_env({"LLM_API_KEY_FILE": str(f)})


def test_named_endpoint_inherits_server_and_key() -> None:
    eps = endpoints_from_env({"LLM_BASE_URL": "http://a/v1", "LLM_MODEL": "big", "LLM_API_KEY": "kkkk1",
                              "LLM_ENDPOINTS": "preeval", "LLM_PREEVAL_MODEL": "small"})
    assert eps["preeval"].model == "small" and eps["preeval"].base_url == "http://a/v1"
    assert eps["preeval"].api_key == "kkkk1"


def test_named_endpoint_on_another_server_does_not_get_the_default_key() -> None:
    eps = endpoints_from_env({"LLM_BASE_URL": "http://a/v1", "LLM_MODEL": "big", "LLM_API_KEY": "kkkk1",
                              "LLM_ENDPOINTS": "preeval", "LLM_PREEVAL_BASE_URL": "http://b/v1"})
    assert eps["preeval"].api_key == ""


def test_overrides_keep_env_values_for_blanks() -> None:
    ep = Endpoint(name="default", base_url="http://a/v1", model="m", api_key="kkkk1")
    new = ep.with_overrides({"model": "other", "api_key": "", "temperature": 0.0, "bogus": 1})
    assert (new.model, new.api_key, new.temperature) == ("other", "kkkk1", 0.0)
