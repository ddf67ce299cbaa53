"""Fixtures every test area shares: standing users, a real Redis, RQ wiring, shared data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client

from annotations.models import Role, User
from pipeline.redis_server import RedisServer, start_redis

PASSWORD = "correct-horse-battery"
SHARED_DIR = Path(__file__).resolve().parent.parent.parent / "shared"


def make_user(username: str, role: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, role=role)
    return user


@pytest.fixture
def annotator(db: None) -> User:
    return make_user("alice", Role.ANNOTATOR)


@pytest.fixture
def annotator2(db: None) -> User:
    return make_user("anna", Role.ANNOTATOR)


@pytest.fixture
def reviewer(db: None) -> User:
    return make_user("bob", Role.REVIEWER)


@pytest.fixture
def reviewer2(db: None) -> User:
    return make_user("bea", Role.REVIEWER)


@pytest.fixture
def maintainer(db: None) -> User:
    return make_user("mia", Role.MAINTAINER)


@pytest.fixture
def outsider(db: None) -> User:
    """Logged in, but no role: every page must answer 404."""
    return make_user("eve", Role.NONE)


def _client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def annotator_client(annotator: User) -> Client:
    return _client_for(annotator)


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    return _client_for(reviewer)


@pytest.fixture
def maintainer_client(maintainer: User) -> Client:
    return _client_for(maintainer)


@pytest.fixture
def outsider_client(outsider: User) -> Client:
    return _client_for(outsider)


@pytest.fixture
def client_for() -> Callable[[User], Client]:
    return _client_for


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a free port, for the whole session."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    import redis

    conn = redis.Redis.from_url(redis_server.url)
    conn.flushall()
    yield redis_server.url
    conn.flushall()
    conn.close()


@pytest.fixture
def rq_settings(settings: object, redis_url: str) -> str:
    """Point django-rq (and REDIS_URL) at the test Redis."""
    settings.REDIS_URL = redis_url  # type: ignore[attr-defined]
    settings.RQ_QUEUES = {  # type: ignore[attr-defined]
        name: {"URL": redis_url, "DEFAULT_TIMEOUT": 600} for name in ("default", "cpu", "gpu-rocm", "gpu-cuda")
    }
    return redis_url


@pytest.fixture
def drain_queues(rq_settings: str) -> Callable[..., int]:
    """Run a real RQ worker in burst mode, in this process (it shares the test's database connection)."""
    import django_rq
    from rq import SimpleWorker

    def drain(*names: str) -> int:
        queues = [django_rq.get_queue(name) for name in (names or ("default",))]
        worker = SimpleWorker(queues, connection=queues[0].connection)
        worker.work(burst=True)
        return sum(q.count for q in queues)

    return drain


@pytest.fixture
def shared_dir() -> Path:
    """../shared beside the checkout; tests that need it skip cleanly without it."""
    if not SHARED_DIR.is_dir():
        pytest.skip("../shared is not present (it is only beside a developer's checkout and in CI)")
    return SHARED_DIR
