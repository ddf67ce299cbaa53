from __future__ import annotations

from collections.abc import Iterator

import pytest

from annotations.models import Sample, User
from tests.browser_fixtures import browser, screenshot  # noqa: F401 - shared fixtures
from tests.factories import TRITON_ADD, make_sample
from tests.llm.conftest import endpoint, fake_llm, llm_settings, no_llm  # noqa: F401 - shared fixtures

CANDIDATE = """#include <hip/hip_runtime.h>
__global__ void add_kernel(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = x[i] + y[i];
}
"""


@pytest.fixture
def sample(annotator: User) -> Sample:
    return make_sample("demo/add", kinds={"reference": TRITON_ADD,
                                          "instruction": "Add two vectors of n floats.",
                                          "candidate": CANDIDATE})


@pytest.fixture
def asgi_server(transactional_db: None) -> Iterator[str]:
    """The ASGI app under uvicorn in a thread (shares the test database), so
    server-sent events really stream; pytest-django's live_server is WSGI,
    which would buffer a stream until its end."""
    import socket
    import threading
    import time

    import uvicorn

    from kernelstudio.asgi import application

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
