from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.demo import SAMPLES_DIR, DemoDataError
from annotations.services.demo import demo_password, demo_samples_load, demo_users_ensure
from annotations.services.users import UserError


class Command(BaseCommand):
    help = "Load the demo samples the project ships (idempotent); --users also creates the demo logins."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--from-dir", type=Path, default=SAMPLES_DIR,
                            help="a directory of demo samples in the shipped layout (default: the shipped ones)")
        parser.add_argument(
            "--users", action="store_true",
            help="create demo-annotator, demo-reviewer and demo-maintainer (password: $KS_DEMO_PASSWORD, "
                 "else generated once and kept in KS_DATA_DIR/demo_password) and print the logins",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = demo_samples_load(root=options["from_dir"])
        except DemoDataError as exc:
            raise CommandError(f"demo samples not loaded: {exc}") from exc
        self.stdout.write(
            f"demo samples: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged"
        )
        for task_id in report.created + report.updated:
            self.stdout.write(f"  {task_id}")
        if not options["users"]:
            return
        password = demo_password(data_dir=settings.DATA_DIR)
        try:
            users = demo_users_ensure(password=password)
        except UserError as exc:
            raise CommandError(f"demo users not created: {exc}") from exc
        self.stdout.write("Demo logins (for trying Kernel Studio locally; not for a shared server):")
        for user in users:
            note = "" if user.created else "  (already existed: its password was left unchanged)"
            self.stdout.write(f"  {user.username:<16} {user.role:<11} password: {password}{note}")
