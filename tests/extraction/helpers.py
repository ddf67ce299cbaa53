"""Builders for extraction tests (archives of the corpus, uploads)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "mmcv_like"


def corpus_tar_bytes(root: Path = CORPUS, arcname: str = "mmcv_like") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(root, arcname=arcname)
    return buf.getvalue()


def corpus_upload(name: str = "mmcv_like.tar.gz") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, corpus_tar_bytes(), content_type="application/gzip")
