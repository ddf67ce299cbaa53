"""Loading the shipped demo samples and the demo logins (`manage.py load_demo`, `make run`)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotations.demo import SAMPLES_DIR, DemoSample, read_demo_samples
from annotations.models import Revision, Role, Sample, User
from annotations.models.samples import RevisionOrigin
from annotations.services.revisions import revision_create
from annotations.services.samples import sample_create
from annotations.services.users import user_create

DEMO_SOURCE = "demo"
DEMO_AUTHOR = "import:demo"
DEMO_USERS = (
    ("demo-annotator", Role.ANNOTATOR),
    ("demo-reviewer", Role.REVIEWER),
    ("demo-maintainer", Role.MAINTAINER),
)


@dataclass
class DemoLoadReport:
    created: list[str] = field(default_factory=list)
    # Samples whose shipped files changed since they were loaded: a new revision per changed artifact.
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def demo_samples_load(*, root: Path = SAMPLES_DIR) -> DemoLoadReport:
    """Load the demo samples idempotently: a second call creates nothing.

    All files are read and checked before anything is written, and the writes are one
    transaction, so a malformed file leaves the database as it was.
    """
    samples = read_demo_samples(root)
    report = DemoLoadReport()
    with transaction.atomic():
        for demo in samples:
            existing = Sample.objects.filter(task_id=demo.task_id).first()
            if existing is None:
                _create(demo)
                report.created.append(demo.task_id)
            elif _refresh(existing, demo):
                report.updated.append(demo.task_id)
            else:
                report.unchanged.append(demo.task_id)
    return report


def _create(demo: DemoSample) -> None:
    sample = sample_create(
        task_id=demo.task_id,
        source=DEMO_SOURCE,
        kernel_name=demo.kernel_name,
        entry_point=demo.entry_point,
        reference_language=demo.reference_language,
        target_language=demo.target_language,
        provenance={"origin": "demo", "path": f"annotations/demo/samples/{demo.directory}"},
        tags=demo.tags,
        difficulty=demo.difficulty,
    )
    for art in demo.artifacts:
        revision_create(sample=sample, kind=art.kind, content=art.content, author_label=DEMO_AUTHOR,
                        origin=RevisionOrigin.INITIAL, language=art.language,
                        provenance={"demo_file": f"{demo.directory}/{art.kind}"})


def _refresh(sample: Sample, demo: DemoSample) -> bool:
    """Append a revision for each artifact whose shipped content differs from the current one."""
    changed = False
    for art in demo.artifacts:
        current = Revision.objects.filter(sample=sample, kind=art.kind).order_by("-seq").only("content").first()
        if current is not None and current.content == art.content:
            continue
        revision_create(sample=sample, kind=art.kind, content=art.content, author_label=DEMO_AUTHOR,
                        origin=RevisionOrigin.IMPORTED, language=art.language,
                        provenance={"demo_file": f"{demo.directory}/{art.kind}", "reason": "demo files changed"})
        changed = True
    return changed


@dataclass(frozen=True)
class DemoUser:
    username: str
    role: str
    created: bool


def demo_password(*, data_dir: Path) -> str:
    """The demo logins' password: $KS_DEMO_PASSWORD, else one generated once and kept in data_dir."""
    from_env = os.environ.get("KS_DEMO_PASSWORD", "").strip()
    if from_env:
        return from_env
    path = data_dir / "demo_password"
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    # 0600 and O_EXCL: readable only by this user, and two concurrent first runs cannot both write it.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(password)
    return password


def demo_users_ensure(*, password: str) -> list[DemoUser]:
    """Create the three demo logins if missing; existing ones (and their passwords) are left alone."""
    result = []
    for username, role in DEMO_USERS:
        if User.objects.filter(username=username).exists():
            result.append(DemoUser(username, role, created=False))
            continue
        user_create(username=username, role=role, password=password)
        result.append(DemoUser(username, role, created=True))
    return result
