from __future__ import annotations

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from annotations.models import Role, User


class UserError(ValueError):
    pass


def user_create(*, username: str, role: str, password: str, email: str = "", update: bool = False) -> User:
    if role not in Role.values or not role:
        raise UserError(f"unknown role {role!r}: use annotator, reviewer or maintainer")
    username = username.strip()
    if not username or len(username) > 150:
        raise UserError("the user name must be 1 to 150 characters")
    try:
        validate_password(password)
    except ValidationError as exc:
        raise UserError(" ".join(exc.messages)) from exc
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        if user is not None and not update:
            raise UserError(f"user {username!r} already exists (use --update to change it)")
        if user is None:
            user = User(username=username, email=email)
        user.role = role
        user.is_staff = role == Role.MAINTAINER
        user.set_password(password)
        user.save()
    return user
