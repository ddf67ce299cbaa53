# syntax=docker/dockerfile:1
# Kernel Studio web, `default` worker and `cpu` worker image (compose.yaml).
# CPU-only PyTorch and Triton: the cpu backend runs Triton kernels in the interpreter.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# g++ builds host C++ and PyTorch extensions for compile checks on the cpu backend.
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies first, so a code change does not reinstall them. Pinned CPU wheel of PyTorch
# (the same pin as the Makefile): an open range would pull the CUDA build.
COPY pyproject.toml ./
RUN pip install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
 && pip install "triton>=3.0" numpy \
 && python - <<'PY'
import subprocess, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
subprocess.check_call([sys.executable, "-m", "pip", "install", *deps])
PY

COPY . .
RUN pip install --no-deps -e . \
 && useradd --create-home --uid 1000 kernelstudio \
 && mkdir -p /data && chown kernelstudio /data
USER kernelstudio
ENV KS_DATA_DIR=/data
EXPOSE 8000
CMD ["uvicorn", "kernelstudio.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--lifespan", "off"]
