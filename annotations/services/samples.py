from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from annotations.models import Sample, Tag, User
from annotations.services.audit import audit_record


class SampleError(ValueError):
    pass


def sample_create(
    *,
    task_id: str,
    source: str,
    kernel_name: str = "",
    entry_point: str = "",
    reference_language: str = "triton",
    target_language: str = "hip",
    provenance: dict[str, Any] | None = None,
    tags: Iterable[str] = (),
    difficulty: int | None = None,
    actor: User | None = None,
) -> Sample:
    task_id = task_id.strip()
    if not task_id or len(task_id) > 255:
        raise SampleError("task_id must be 1 to 255 characters")
    with transaction.atomic():
        if Sample.objects.filter(task_id=task_id).exists():
            raise SampleError(f"a sample with task id {task_id!r} already exists")
        sample = Sample.objects.create(
            task_id=task_id,
            source=source,
            kernel_name=kernel_name,
            entry_point=entry_point,
            reference_language=reference_language,
            target_language=target_language,
            provenance=provenance or {},
            difficulty=difficulty,
        )
        sample_set_tags(sample=sample, tags=tags)
        audit_record(action="sample_created", sample=sample, actor=actor, to_state=sample.status,
                     data={"source": source})
    return sample


def sample_set_tags(*, sample: Sample, tags: Iterable[str]) -> None:
    names = sorted({t.strip().lower()[:64] for t in tags if t and t.strip()})
    tag_objs = []
    for name in names:
        tag, _ = Tag.objects.get_or_create(name=name)
        tag_objs.append(tag)
    sample.tags.set(tag_objs)


def sample_assign(*, sample: Sample, assignee: User | None, actor: User) -> Sample:
    previous = sample.assignee.username if sample.assignee else ""
    sample.assignee = assignee
    sample.save(update_fields=["assignee", "updated_at"])
    audit_record(action="assignee_changed", sample=sample, actor=actor,
                 data={"from": previous, "to": assignee.username if assignee else ""})
    return sample
