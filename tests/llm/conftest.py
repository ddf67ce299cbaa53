from __future__ import annotations

from collections.abc import Iterator

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
