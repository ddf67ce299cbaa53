"""The verification worker for GPU (and CPU) hosts: `python -m pipeline.worker --queues gpu-cuda`."""
