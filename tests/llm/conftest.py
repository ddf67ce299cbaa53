from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.llm.config import Endpoint
from tests.llm.fake_openai import FakeOpenAI


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def endpoint(fake_llm: FakeOpenAI) -> Endpoint:
    # Tiny back-off so retry tests take milliseconds; a secret-looking key so
    # leak checks have something to look for.
    return Endpoint(name="default", base_url=fake_llm.url, model="gen-model",
                    api_key="sk-test-SECRET-4242", timeout_s=0.5, backoff_s=0.001,
                    max_backoff_s=2.0, max_retries=2)


@pytest.fixture
def llm_settings(settings: Any, fake_llm: FakeOpenAI) -> FakeOpenAI:
    """Point the app's default endpoint at the fake server (short timeouts, tiny back-off)."""
    settings.LLM_BASE_URL = fake_llm.url
    settings.LLM_MODEL = "gen-model"
    settings.LLM_API_KEY = "sk-test-SECRET-4242"
    settings.LLM_TIMEOUT = 2.0
    settings.LLM_MAX_RETRIES = 1
    settings.LLM_BACKOFF = 0.001
    settings.LLM_PREEVAL_MODEL = "small-model"
    return fake_llm


@pytest.fixture
def no_llm(settings: Any) -> None:
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""
    settings.LLM_API_KEY = ""
