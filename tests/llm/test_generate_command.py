"""`manage.py generate`: real RQ jobs against the fake OpenAI server."""

from __future__ import annotations

import importlib.util
import io
import json
import threading
import time
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.models import GenerationItem, PreEvalAttempt, Revision
from annotations.models.llm import ItemStatus
from tests.factories import make_sample
from tests.llm.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

ANALYSIS = {"core_function": "adds x and y", "functional_contract": "out == x + y",
            "memory_access_pattern": "contiguous 1-D", "key_parameters": ["BLOCK"]}
WRAPPER = "def add(x, y):\n    return x + y\n"
TEST = "def test_add():\n    assert add(1, 2) == 3\n"


def _script_wrapper_test(fake: FakeOpenAI) -> None:
    fake.reply("```json\n" + json.dumps(ANALYSIS) + "\n```", usage=(100, 20))
    fake.reply(json.dumps({"wrapper": WRAPPER, "test": TEST}), usage=(150, 40))


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("generate", *args, stdout=out)
    return out.getvalue()


def test_wrapper_test_saves_three_revisions_with_provenance(llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    sample = make_sample("demo/add")
    _script_wrapper_test(llm_settings)
    out = run("--what", "wrapper-test", "demo/add", "--concurrency", "1")
    assert "for 1 sample(s)" in out
    drain_queues("default")
    item = GenerationItem.objects.get(sample=sample)
    assert item.status == ItemStatus.DONE, item.error
    assert item.usage["total_tokens"] == 310
    revs = {r.kind: r for r in Revision.objects.filter(sample=sample, origin="generated")}
    assert set(revs) == {"analysis", "wrapper", "test"}
    assert json.loads(revs["analysis"].content)["functional_contract"] == "out == x + y"
    assert revs["test"].content == TEST and revs["wrapper"].author_label == "llm:fake-model"
    prov = revs["wrapper"].provenance
    assert prov["template"] == "wrapper_test" and prov["template_version"] == 1 and prov["model"] == "fake-model"
    assert prov["usage"]["total_tokens"] == 190 and prov["generation_item"] == item.pk
    assert revs["analysis"].provenance["template"] == "analysis"


def test_rerun_skips_finished_items_and_failures_are_recorded(llm_settings: FakeOpenAI,
                                                              drain_queues: Callable) -> None:
    make_sample("s/one", source="crawl")
    make_sample("s/two", source="crawl")
    _script_wrapper_test(llm_settings)
    llm_settings.error(400, message="prompt too long")  # s/two fails (no retry on 400)
    run("--what", "wrapper-test", "--source", "crawl", "--concurrency", "1")
    drain_queues("default")
    items = {i.sample.task_id: i for i in GenerationItem.objects.select_related("sample")}
    assert items["s/one"].status == ItemStatus.DONE
    assert items["s/two"].status == ItemStatus.FAILED and "prompt too long" in items["s/two"].error
    # Resume: only the failed one is redone.
    _script_wrapper_test(llm_settings)
    out = run("--what", "wrapper-test", "--source", "crawl")
    assert "1 already done (skipped)" in out
    drain_queues("default")
    latest = GenerationItem.objects.filter(sample__task_id="s/two").order_by("-id").first()
    assert latest is not None and latest.status == ItemStatus.DONE
    assert len(llm_settings.requests) == 5


def test_wait_shows_progress_and_token_totals(llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    make_sample("w/one", source="w")
    make_sample("w/two", source="w")
    _script_wrapper_test(llm_settings)
    _script_wrapper_test(llm_settings)
    out = io.StringIO()
    errors: list[BaseException] = []

    def command() -> None:
        try:
            call_command("generate", "--what", "wrapper-test", "--source", "w", "--wait", "--poll", "0.05",
                         stdout=out)
        except BaseException as exc:  # reported below
            errors.append(exc)

    t = threading.Thread(target=command)
    t.start()
    # The command (in its thread) queues the job; a real worker does it here.
    deadline = time.monotonic() + 60
    while t.is_alive() and time.monotonic() < deadline:
        drain_queues("default")
        time.sleep(0.05)
    t.join(10)
    assert not errors, errors
    text = out.getvalue()
    assert "[" + "#" * 30 + "] 2/2" in text
    assert "Tokens: 500 prompt + 120 completion = 620." in text


def test_hip_and_instruction(llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    sample = make_sample("demo/sin")
    llm_settings.reply("Implement `sin_kernel` ...")
    run("--what", "instruction", "demo/sin")
    drain_queues("default")
    llm_settings.reply("```cpp\n#include <hip/hip_runtime.h>\n__global__ void sin_kernel() {}\n```")
    run("--what", "hip", "demo/sin")
    drain_queues("default")
    instr = Revision.objects.filter(sample=sample, kind="instruction").order_by("-seq").first()
    cand = Revision.objects.get(sample=sample, kind="candidate")
    assert instr is not None and instr.content.startswith("Implement `sin_kernel`") and instr.seq == 2
    assert cand.content.startswith("#include <hip/hip_runtime.h>") and cand.provenance["template"] == "hip_candidate"
    # The HIP prompt carried the (new) instruction and the reference.
    hip_prompt = llm_settings.requests[1].body["messages"][1]["content"]
    assert "Implement `sin_kernel`" in hip_prompt and "add_kernel" in hip_prompt


def test_pre_eval_is_kept_out_of_the_candidates(llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    sample = make_sample("demo/pre")
    llm_settings.reply("```cpp\nint attempt;\n```", model="small-model")
    run("--what", "pre-eval", "demo/pre")
    drain_queues("default")
    attempt = PreEvalAttempt.objects.get(sample=sample)
    assert attempt.content == "int attempt;\n" and attempt.model == "small-model"
    assert attempt.provenance["purpose"] == "pre-eval"
    assert not Revision.objects.filter(sample=sample, kind="candidate").exists()
    assert llm_settings.requests[0].body["model"] == "small-model"  # the pre-eval endpoint's model
    # The sample has no test yet: the attempt cannot be verified, and says why.
    assert attempt.run is None and attempt.verify_error


def test_missing_reference_fails_the_item_with_a_sentence(llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    make_sample("demo/empty", kinds={"instruction": "x"})
    run("--what", "wrapper-test", "demo/empty")
    drain_queues("default")
    item = GenerationItem.objects.get()
    assert item.status == ItemStatus.FAILED and item.error == "The sample has no reference revision to work from."
    assert llm_settings.requests == []


@pytest.mark.parametrize(("args", "message"), [
    (["--what", "wrapper-test"], "Name task ids or a --source"),
    (["--what", "wrapper-test", "nope/none"], "No sample with task id nope/none"),
    (["--what", "wrapper-test", "--source", "nowhere"], "No samples from source 'nowhere'"),
    (["--what", "hip", "demo/add", "--concurrency", "0"], "concurrency must be between 1 and 16"),
])
def test_bad_arguments(llm_settings: FakeOpenAI, args: list[str], message: str) -> None:
    make_sample("demo/add")
    with pytest.raises(CommandError, match=message):
        run(*args)


def test_not_configured(no_llm: None) -> None:
    make_sample("demo/add")
    with pytest.raises(CommandError, match="set LLM_BASE_URL and LLM_MODEL"):
        run("--what", "hip", "demo/add")
    assert not GenerationItem.objects.exists()


def test_job_payloads_are_ids_only(llm_settings: FakeOpenAI, rq_settings: str) -> None:
    import django_rq

    make_sample("demo/ids")
    run("--what", "instruction", "demo/ids")
    queue = django_rq.get_queue("default")
    jobs = queue.get_jobs()
    assert jobs
    for job in jobs:
        assert all(isinstance(a, int) for a in job.args) and not job.kwargs
    conn = django_rq.get_connection("default")
    raw = b"".join(b"".join(conn.hgetall(k).values()) for k in conn.keys("rq:job:*"))
    assert b"sk-test-SECRET-4242" not in raw and llm_settings.url.encode() not in raw


def test_unreachable_queue_is_a_clear_error_and_resumable(llm_settings: FakeOpenAI, settings) -> None:
    settings.RQ_QUEUES = {name: {"URL": "redis://127.0.0.1:9/0", "DEFAULT_TIMEOUT": 60}
                          for name in ("default", "cpu", "gpu-rocm", "gpu-cuda")}
    make_sample("demo/q")
    with pytest.raises(CommandError, match="not reachable; rerun the same command"):
        run("--what", "instruction", "demo/q")
    assert GenerationItem.objects.get().status == ItemStatus.PENDING


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("annotations.services.runs") is None,
                    reason="the runs service (verification area) is not in this checkout")
def test_pre_eval_attempt_is_verified_on_the_cpu_backend(llm_settings: FakeOpenAI, drain_queues: Callable) -> None:
    from tests.execution.kernels import ADD_REFERENCE, ADD_TEST, ADD_WRONG

    sample = make_sample("demo/pre-run", target_language="triton",
                         kinds={"reference": ADD_REFERENCE, "test": ADD_TEST,
                                "instruction": "Write add_kernel and add_wrapper(x, y) returning x + y."})
    # The other model gets it subtly wrong: the instruction may be ambiguous, and the reviewer sees it.
    llm_settings.reply(f"```python\n{ADD_WRONG.strip()}\n```", model="small-model")
    run("--what", "pre-eval", "demo/pre-run")
    drain_queues("default")
    attempt = PreEvalAttempt.objects.get(sample=sample)
    assert attempt.run is not None and attempt.verify_error == ""
    drain_queues("cpu")
    drain_queues("default")
    attempt.run.refresh_from_db()
    assert attempt.run.purpose == "pre-eval"
    assert attempt.run.status == "failed" and attempt.run.exe_ok is False, attempt.run.message
    sample.refresh_from_db()
    assert sample.latest_run_outcome == ""  # a pre-eval run is not the sample's latest run
    assert not Revision.objects.filter(sample=sample, kind="candidate").exists()
