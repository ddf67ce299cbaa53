from __future__ import annotations

from typing import Any

from annotations.models import AuditEvent, Sample, User


def audit_record(
    *,
    action: str,
    sample: Sample | None = None,
    actor: User | None = None,
    from_state: str = "",
    to_state: str = "",
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        sample=sample, actor=actor, action=action, from_state=from_state, to_state=to_state, data=data or {}
    )
