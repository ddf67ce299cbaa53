from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotations.models import User


def test_creates_a_user_with_a_role(db, capsys):  # type: ignore[no-untyped-def]
    call_command("create_user", "carol", "--role", "reviewer", "--password", "a-long-password")
    user = User.objects.get(username="carol")
    assert user.role == "reviewer" and user.check_password("a-long-password")
    assert "carol (reviewer)" in capsys.readouterr().out


def test_password_from_environment(db, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KS_PASSWORD", "from-the-env-123")
    call_command("create_user", "dan", "--role", "maintainer")
    assert User.objects.get(username="dan").is_staff


def test_existing_user_needs_update_flag(db):  # type: ignore[no-untyped-def]
    call_command("create_user", "carol", "--role", "annotator", "--password", "a-long-password")
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_user", "carol", "--role", "reviewer", "--password", "a-long-password")
    call_command("create_user", "carol", "--role", "reviewer", "--password", "a-long-password", "--update")
    assert User.objects.get(username="carol").role == "reviewer"


def test_bad_role_and_short_password(db):  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError):
        call_command("create_user", "x", "--role", "admin", "--password", "a-long-password")
    with pytest.raises(CommandError, match="too short"):
        call_command("create_user", "x", "--role", "annotator", "--password", "short")
