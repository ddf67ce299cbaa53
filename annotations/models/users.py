from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models


class Role(models.TextChoices):
    # A user with no role is an outsider: every page answers 404.
    NONE = "", "No role"
    ANNOTATOR = "annotator", "Annotator"
    REVIEWER = "reviewer", "Reviewer"
    MAINTAINER = "maintainer", "Maintainer"


class User(AbstractUser):
    role = models.CharField(max_length=16, choices=Role.choices, blank=True, default=Role.NONE)

    @property
    def is_outsider(self) -> bool:
        return not self.role

    def __str__(self) -> str:
        return self.username
