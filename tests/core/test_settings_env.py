"""Settings read the environment strictly: a bad value stops start-up with a clear message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from kernelstudio import env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("raw, expected", [("true", True), ("0", False), ("Yes", True), ("off", False), ("", False)])
def test_env_bool(monkeypatch, raw, expected):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("X_FLAG", raw)
    assert env.env_bool("X_FLAG", False) is expected


def test_env_bool_rejects_other_words(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG='maybe'"):
        env.env_bool("X_FLAG", False)


def test_env_int_bounds(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("X_N", "abc")
    with pytest.raises(ImproperlyConfigured, match="expected an integer"):
        env.env_int("X_N", 1)
    monkeypatch.setenv("X_N", "-1")
    with pytest.raises(ImproperlyConfigured, match="at least 0"):
        env.env_int("X_N", 1, minimum=0)


def test_secret_from_file(monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("X_KEY_FILE", str(secret))
    assert env.env_secret("X_KEY") == "s3cret"
    monkeypatch.setenv("X_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="cannot read"):
        env.env_secret("X_KEY")


def test_secret_key_file_is_generated_once(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("SECRET_KEY_FILE", raising=False)
    first = env.secret_key(tmp_path)
    assert len(first) >= 50 and env.secret_key(tmp_path) == first
    assert oct((tmp_path / "secret_key").stat().st_mode)[-3:] == "600"


@pytest.mark.parametrize(
    "url, engine",
    [("sqlite:///var/x.sqlite3", "sqlite3"), ("sqlite:////tmp/x.sqlite3", "sqlite3"),
     ("postgres://u:p@127.0.0.1:5432/ks", "postgresql"), ("postgresql://127.0.0.1/ks?sslmode=require", "postgresql")],
)
def test_database_urls(url, engine):  # type: ignore[no-untyped-def]
    assert env.database_from_url(url)["ENGINE"].endswith(engine)


def test_sqlite_absolute_path():  # type: ignore[no-untyped-def]
    assert env.database_from_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"


@pytest.mark.parametrize("url", ["mysql://x/y", "sqlite://", "postgres://host/"])
def test_bad_database_urls(url):  # type: ignore[no-untyped-def]
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        env.database_from_url(url)


@pytest.mark.parametrize("name, value, text", [("DEBUG", "perhaps", "DEBUG='perhaps'"),
                                               ("REDIS_URL", "http://x", "REDIS_URL"),
                                               ("SECRET_KEY", "short", "at least 32")])
def test_bad_value_stops_startup_with_a_clear_message(name, value, text, tmp_path):  # type: ignore[no-untyped-def]
    environ = {**os.environ, name: value, "KS_DATA_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=environ,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert text in result.stderr
