from __future__ import annotations

import getpass
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.models import Role, User
from annotations.services.users import UserError, user_create


class Command(BaseCommand):
    help = "Create a user with a role. The password comes from --password, $KS_PASSWORD or a prompt."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--role", required=True, choices=[r for r in Role.values if r])
        parser.add_argument("--email", default="")
        parser.add_argument("--password", default=None, help="prefer $KS_PASSWORD: arguments show in `ps`")
        parser.add_argument("--update", action="store_true", help="change the role and password of an existing user")

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"] or os.environ.get("KS_PASSWORD")
        if not password:
            if not os.isatty(0):
                raise CommandError("no password: pass --password, set KS_PASSWORD, or run in a terminal")
            password = getpass.getpass("Password: ")
        try:
            user = user_create(
                username=options["name"], role=options["role"], password=password,
                email=options["email"], update=options["update"],
            )
        except UserError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"user {user.username} ({user.role}) ready")


__all__ = ["Command", "User"]
