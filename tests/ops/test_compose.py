"""compose.yaml: the multi-host shape, and that verification workers get Redis and nothing else."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
VERIFY_WORKERS = ("worker-cpu", "worker-rocm", "worker-cuda")
ENV = {"POSTGRES_PASSWORD": "compose-test-password", "SECRET_KEY": "x" * 50}


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _env_keys(service: dict[str, Any]) -> set[str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return {item.split("=", 1)[0] for item in env}
    return set(env)


def _command(service: dict[str, Any]) -> str:
    cmd = service.get("command", "")
    return " ".join(cmd) if isinstance(cmd, list) else str(cmd)


def _check(services: dict[str, Any]) -> None:
    for name in ("postgres", "redis", "web", "worker", *VERIFY_WORKERS):
        assert name in services, f"compose.yaml has no {name} service"
    # Untrusted code runs on these: Redis only - no database URL, secret key or LLM key.
    for name in VERIFY_WORKERS:
        assert _env_keys(services[name]) == {"REDIS_URL"}, name
        assert "env_file" not in services[name], name
        assert "volumes" not in services[name] or not any("app-data" in str(v) for v in services[name]["volumes"])
    assert "DATABASE_URL" in _env_keys(services["web"]) and "DATABASE_URL" in _env_keys(services["worker"])
    assert "rqworker default" in _command(services["worker"])
    assert "pipeline.worker --queues cpu" in _command(services["worker-cpu"])

    rocm = services["worker-rocm"]
    assert "--queues gpu-rocm" in _command(rocm)
    devices = [str(d) for d in rocm["devices"]]
    assert any(d.startswith("/dev/kfd") for d in devices) and any(d.startswith("/dev/dri") for d in devices)
    assert "video" in rocm["group_add"]

    cuda = services["worker-cuda"]
    assert "--queues gpu-cuda" in _command(cuda)
    reservations = cuda["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) for d in reservations)


def test_compose_file_structure() -> None:
    data = _compose()
    _check(data["services"])
    # The GPU workers only start where asked for: their profile.
    assert data["services"]["worker-rocm"]["profiles"] == ["rocm"]
    assert data["services"]["worker-cuda"]["profiles"] == ["cuda"]


def test_dockerfiles_exist_and_gpu_images_carry_no_web_app() -> None:
    data = _compose()
    for name, service in data["services"].items():
        build = service.get("build")
        if build:
            dockerfile = ROOT / build.get("dockerfile", "Dockerfile")
            assert dockerfile.is_file(), f"{name}: {dockerfile.name} is missing"
    rocm = (ROOT / "Dockerfile.worker-rocm").read_text()
    assert "rocm/pytorch" in rocm
    for path in ("Dockerfile.worker-rocm", "Dockerfile.worker-cuda"):
        text = (ROOT / path).read_text()
        assert "COPY pipeline" in text and "annotations" not in text and "manage.py" not in text
        assert "USER " in text  # unprivileged worker


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy and subprocess.run([legacy, "version"], capture_output=True).returncode == 0:
        return [legacy]
    return None


def _config(cli: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("POSTGRES_PASSWORD", "SECRET_KEY")} | env
    return subprocess.run([*cli, "-f", str(ROOT / "compose.yaml"), "--profile", "rocm", "--profile", "cuda", "config"],
                          cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=120)


def test_docker_compose_config_accepts_it() -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed; the structure test above still ran")
    out = _config(cli, ENV)
    assert out.returncode == 0, out.stderr
    rendered = yaml.safe_load(out.stdout)
    _check(rendered["services"])
    assert ENV["POSTGRES_PASSWORD"] not in str(rendered["services"]["worker-cuda"])


def test_docker_compose_config_requires_the_secrets() -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    out = _config(cli, {"SECRET_KEY": "x" * 50})
    assert out.returncode != 0
    assert "POSTGRES_PASSWORD" in out.stderr
