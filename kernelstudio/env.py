"""Strict readers for the environment.

A bad value stops start-up with a message that names the variable and what it
accepts, instead of a surprise later (healthchecks' `envbool` does the same).
Secrets may come from `NAME_FILE` (container secrets) instead of `NAME`.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: expected one of true/false, yes/no, on/off, 1/0")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value}: must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value}: must be at most {maximum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a number") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value}: must be at least {minimum}")
    return value


def env_list(name: str, default: list[str], *, sep: str = ",") -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [part.strip() for part in raw.split(sep) if part.strip()]


def env_secret(name: str, default: str = "") -> str:
    """Read NAME, or the contents of the file named by NAME_FILE."""
    file_var = f"{name}_FILE"
    path = os.environ.get(file_var)
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{file_var}={path!r}: cannot read the file ({exc.strerror})") from exc
    return os.environ.get(name, default)


def secret_key(data_dir: Path) -> str:
    """SECRET_KEY from the environment, else a key file generated on the first local run."""
    key = env_secret("SECRET_KEY")
    if key:
        if len(key) < 32:
            raise ImproperlyConfigured("SECRET_KEY: must be at least 32 characters long")
        return key
    key_file = data_dir / "secret_key"
    if key_file.exists():
        return key_file.read_text(encoding="utf-8").strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # Written with 0600 so other local users cannot read it.
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key)
    return key


def database_from_url(url: str) -> dict[str, object]:
    """Translate DATABASE_URL into Django's DATABASES entry.

    Accepts sqlite:///relative/path, sqlite:////absolute/path and
    postgres://user:pass@host:port/name (also postgresql://).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        path = unquote(parts.path)
        if path.startswith("/"):
            path = path[1:] if not path.startswith("//") else path[1:]
        if not path:
            raise ImproperlyConfigured("DATABASE_URL: a sqlite URL needs a file path, e.g. sqlite:///data/db.sqlite3")
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            # WAL lets the web server read while a worker writes; the timeout
            # rides out short write locks instead of failing with "database is locked".
            "OPTIONS": {
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
            },
        }
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL: a postgres URL needs a database name")
        options: dict[str, object] = {}
        query = parse_qs(parts.query)
        if "sslmode" in query:
            options["sslmode"] = query["sslmode"][0]
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 60,
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(f"DATABASE_URL: unsupported scheme {scheme!r} (use sqlite:/// or postgres://)")


def redis_url_checked(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss", "unix"}:
        raise ImproperlyConfigured(f"REDIS_URL: unsupported scheme {parts.scheme!r} (use redis://host:port/db)")
    return url


def env_dirs(name: str, *, sep: str = ":") -> list[Path]:
    """Colon-separated absolute paths of existing directories (PATH-style); empty when unset."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return []
    dirs: list[Path] = []
    for part in raw.split(sep):
        part = part.strip()
        if not part:
            continue
        path = Path(part)
        if not path.is_absolute():
            raise ImproperlyConfigured(f"{name}: {part!r} is not an absolute path")
        if not path.is_dir():
            raise ImproperlyConfigured(f"{name}: {part!r} is not an existing directory")
        dirs.append(path.resolve())
    return dirs
