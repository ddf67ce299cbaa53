"""services.runs: request, collect (idempotent), cancel, lost runs and their one retry. Real Redis, real DB."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from annotations.models import Run, RunRevision, Sample
from annotations.models.runs import RunStatus
from annotations.models.samples import RunOutcome
from annotations.services import runs as service
from pipeline.execution.spec import StageResult, VerifyResult
from pipeline.worker import keys
from tests.factories import add_revision


def _result(status: str = "passed", **kw: Any) -> dict[str, Any]:
    r = VerifyResult(task_id="runs/add", backend="cpu", status=status, host="h1", device="CPU", duration_s=2.5,
                     toolchain={"torch": "2.x"}, log="line 1\nline 2", **kw)
    r.stages["call"] = StageResult(ok=True, message="ran")
    r.stages["exe"] = StageResult(ok=status == "passed", message="3 outputs match" if status == "passed" else "bad")
    return r.to_dict()


@pytest.mark.django_db(transaction=True)
def test_run_request_snapshots_revisions_and_enqueues_after_commit(rq_settings: str, add_sample: Sample,
                                                                   annotator: Any) -> None:
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    assert run.status == RunStatus.QUEUED
    kinds = set(RunRevision.objects.filter(run=run).values_list("kind", flat=True))
    assert kinds == {"reference", "candidate", "test"}
    conn = redis.Redis.from_url(rq_settings)
    spec = json.loads(conn.get(keys.spec(run.pk)))
    assert spec["backend"] == "cpu" and spec["entry_point"] == "add_wrapper"
    assert spec["candidate"]["language"] == "triton"
    run.refresh_from_db()
    assert run.rq_job_id == f"ks-run-{run.pk}-1"
    assert conn.llen("rq:queue:cpu") == 1
    add_sample.refresh_from_db()
    assert add_sample.latest_run_outcome == RunOutcome.PENDING
    # A new revision after the request does not change what the run verifies.
    add_revision(add_sample, "candidate", "changed")
    assert json.loads(conn.get(keys.spec(run.pk)))["candidate"]["code"] != "changed"


def test_run_request_refuses_a_sample_without_a_test(rq_settings: str, untested_sample: Sample, annotator: Any) -> None:
    with pytest.raises(service.RunError, match="no test revision"):
        service.run_request(sample=untested_sample, backend="cpu", user=annotator)
    assert not Run.objects.exists()


def test_run_request_refuses_an_unknown_backend(rq_settings: str, add_sample: Sample, annotator: Any) -> None:
    with pytest.raises(service.RunError, match="Unknown backend"):
        service.run_request(sample=add_sample, backend="tpu", user=annotator)


def test_redis_down_marks_the_run_error_instead_of_leaving_it_queued(settings: Any, add_sample: Sample,
                                                                     annotator: Any, django_capture_on_commit_callbacks: Any) -> None:
    dead = "redis://127.0.0.1:1/0"
    settings.RQ_QUEUES = {n: {"URL": dead, "DEFAULT_TIMEOUT": 60} for n in ("default", "cpu", "gpu-rocm", "gpu-cuda")}
    with django_capture_on_commit_callbacks(execute=True):
        run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    run.refresh_from_db()
    assert run.status == RunStatus.ERROR
    assert "Redis is unreachable" in run.message
    assert dead not in run.message


def test_run_collect_is_idempotent_and_updates_the_sample(rq_settings: str, add_sample: Sample, annotator: Any) -> None:
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    assert service.run_collect(run_id=run.pk, result=_result("passed")) is True
    assert service.run_collect(run_id=run.pk, result=_result("failed")) is False
    run.refresh_from_db()
    assert run.status == RunStatus.PASSED and run.call_ok and run.exe_ok and run.perf_ok is None
    assert run.host == "h1" and run.toolchain == {"torch": "2.x"} and "line 2" in run.log
    assert run.started_at is not None and run.finished_at is not None
    add_sample.refresh_from_db()
    assert add_sample.latest_run_outcome == RunOutcome.PASSED


def test_run_collect_of_garbage_records_an_error(rq_settings: str, add_sample: Sample, annotator: Any) -> None:
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    assert service.run_collect(run_id=run.pk, result={"nonsense": 1}) is True
    run.refresh_from_db()
    assert run.status == RunStatus.ERROR and "unreadable result" in run.message


def test_cancel_before_start_and_who_may_cancel(rq_settings: str, add_sample: Sample, annotator: Any,
                                               annotator2: Any, maintainer: Any) -> None:
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        service.run_cancel(run=run, user=annotator2)
    run = service.run_cancel(run=run, user=maintainer)
    assert run.status == RunStatus.CANCELLED and "before it started" in run.message
    assert redis.Redis.from_url(rq_settings).exists(keys.cancel(run.pk))
    with pytest.raises(service.RunError, match="already finished"):
        service.run_cancel(run=run, user=annotator)


def test_a_running_run_whose_heartbeat_lapsed_is_marked_lost_and_retried_once(rq_settings: str, add_sample: Sample,
                                                                              annotator: Any) -> None:
    conn = redis.Redis.from_url(rq_settings)
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    # What a worker leaves behind when it is killed: state "running", no heartbeat, no result.
    conn.hset(keys.state(run.pk), mapping={"status": "running", "attempt": 1, "host": "gpu7", "started_at": 1.0})
    run = service.run_refresh(run=run)
    assert run.status == RunStatus.LOST
    retry = Run.objects.get(retry_of=run)
    assert retry.attempt == 2 and retry.status == RunStatus.QUEUED
    assert sorted(RunRevision.objects.filter(run=retry).values_list("revision_id", flat=True)) == sorted(
        RunRevision.objects.filter(run=run).values_list("revision_id", flat=True))
    # The retry is lost too: no third attempt.
    conn.hset(keys.state(retry.pk), mapping={"status": "running", "attempt": 2, "host": "gpu7", "started_at": 1.0})
    retry = service.run_refresh(run=retry)
    assert retry.status == RunStatus.LOST
    assert "not retrying again" in retry.message
    assert Run.objects.filter(sample=add_sample).count() == 2


def test_a_running_run_with_a_heartbeat_is_left_running(rq_settings: str, add_sample: Sample, annotator: Any) -> None:
    conn = redis.Redis.from_url(rq_settings)
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    conn.hset(keys.state(run.pk), mapping={"status": "running", "attempt": 1, "host": "gpu7", "started_at": 1.0})
    conn.set(keys.heartbeat(run.pk, 1), "1", ex=30)
    run = service.run_refresh(run=run)
    assert run.status == RunStatus.RUNNING and run.host == "gpu7"


def test_batch_create_skips_unrunnable_samples_with_reasons(rq_settings: str, add_sample: Sample,
                                                            untested_sample: Sample, maintainer: Any) -> None:
    samples = service.samples_for_selection(task_ids=["runs/add", "runs/no-test"])
    batch, skipped = service.batch_create(user=maintainer, backend="cpu", samples=samples, selection={})
    assert batch.total == 1
    assert len(skipped) == 1 and "runs/no-test has no test revision" in skipped[0]
    with pytest.raises(service.RunError, match="Unknown task ids: nope"):
        service.samples_for_selection(task_ids=["runs/add", "nope"])


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_of_a_chat_thread_is_posted_into_the_thread(rq_settings: str, add_sample: Sample,
                                                                   annotator: Any) -> None:
    from annotations.models import ChatMessage, ChatThread

    thread = ChatThread.objects.create(sample=add_sample, title="fix it", created_by=annotator)
    run = service.run_request(sample=add_sample, backend="cpu", user=annotator, thread=thread)
    assert service.run_collect(run_id=run.pk, result=_result("passed"))
    assert service.run_collect(run_id=run.pk, result=_result("passed")) is False
    posted = ChatMessage.objects.filter(thread=thread, run=run)
    assert posted.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_pre_eval_attempt_is_verified_without_becoming_a_revision(rq_settings: str, add_sample: Sample) -> None:
    from annotations.models import PreEvalAttempt, Revision

    attempt = PreEvalAttempt.objects.create(sample=add_sample, content="# another model's kernel\n",
                                            language="triton", model="m2")
    before = Revision.objects.filter(sample=add_sample).count()
    run = service.run_request_pre_eval(attempt=attempt)
    assert run.purpose == "pre-eval"
    spec = json.loads(redis.Redis.from_url(rq_settings).get(keys.spec(run.pk)))
    assert spec["candidate"] == {"language": "triton", "code": "# another model's kernel\n"}
    assert Revision.objects.filter(sample=add_sample).count() == before
    # A pre-eval run never becomes the sample's "latest run" outcome.
    service.run_collect(run_id=run.pk, result=_result("failed"))
    add_sample.refresh_from_db()
    assert add_sample.latest_run_outcome == ""


def test_runs_sweep_command_marks_a_silent_run_lost(rq_settings: str, add_sample: Sample, annotator: Any,
                                                    capsys: Any) -> None:
    from django.core.management import call_command

    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    redis.Redis.from_url(rq_settings).hset(keys.state(run.pk), mapping={"status": "running", "attempt": 1})
    call_command("runs_sweep", "--quiet")
    assert "checked=1 finished=0 lost=1" in capsys.readouterr().out
    run.refresh_from_db()
    assert run.status == RunStatus.LOST
    call_command("runs_sweep", "--quiet")  # nothing new: the sweeper's log stays quiet
    assert capsys.readouterr().out == ""


@pytest.mark.django_db(transaction=True)
def test_a_job_the_queue_failed_before_it_started_is_an_error_not_queued_forever(rq_settings: str,
                                                                                 add_sample: Sample,
                                                                                 annotator: Any) -> None:
    from rq.job import Job, JobStatus

    run = service.run_request(sample=add_sample, backend="cpu", user=annotator)
    run.refresh_from_db()
    job = Job.fetch(run.rq_job_id, connection=redis.Redis.from_url(rq_settings))
    job.set_status(JobStatus.FAILED)
    run = service.run_refresh(run=run)
    assert run.status == RunStatus.ERROR and "RQ status failed" in run.message
