"""Untrusted archives: nothing escapes, no links, bounded size and count, other files ignored.

Each malicious archive is built here, in the test, rather than committed.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from pipeline.extraction import ArchiveError, ArchiveLimits, ExtractOptions, extract_source
from pipeline.extraction.sources import safe_member_path, unpack

KERNEL = b"__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n"


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None) -> Path:
    data = data or {}
    with tarfile.open(path, "w:gz") as tf:
        for info in members:
            payload = data.get(info.name)
            if payload is not None:
                info.size = len(payload)
                tf.addfile(info, io.BytesIO(payload))
            else:
                tf.addfile(info)
    return path


def reg(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.REGTYPE
    return info


@pytest.mark.parametrize(
    "name",
    [
        "../evil.cu",
        "a/../../evil.cu",
        "/etc/evil.cu",
        "C:/evil.cu",
        "..\\evil.cu",
        "a/b/../../../evil.cu",
        "",
    ],
)
def test_safe_member_path_refuses_escapes(name: str) -> None:
    assert safe_member_path(name) is None


def test_safe_member_path_keeps_normal_paths() -> None:
    assert safe_member_path("csrc/common/./k.cuh") == "csrc/common/k.cuh"
    assert safe_member_path("a/b/../k.cu") == "a/k.cu"


def test_zip_traversal_and_absolute_members_are_skipped(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "evil.zip",
        {"../escape.cu": KERNEL, "/abs/escape.cu": KERNEL, "ok/k.cu": KERNEL},
    )
    dest = tmp_path / "out"
    report = unpack(archive, dest)
    assert [p.relative_to(dest.resolve()).as_posix() for p in report.files] == ["ok/k.cu"]
    assert {m for m, _ in report.skipped} == {"../escape.cu", "/abs/escape.cu"}
    assert not (tmp_path / "escape.cu").exists()
    assert not Path("/abs/escape.cu").exists()


def test_tar_traversal_absolute_and_links_are_skipped(tmp_path: Path) -> None:
    link = tarfile.TarInfo("src/link.cu")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    hard = tarfile.TarInfo("src/hard.cu")
    hard.type = tarfile.LNKTYPE
    hard.linkname = "src/k.cu"
    dev = tarfile.TarInfo("src/dev.cu")
    dev.type = tarfile.CHRTYPE
    fifo = tarfile.TarInfo("src/fifo.cu")
    fifo.type = tarfile.FIFOTYPE
    archive = make_tar(
        tmp_path / "evil.tar.gz",
        [reg("src/k.cu"), reg("../../up.cu"), reg("/tmp/abs-ks-test.cu"), link, hard, dev, fifo],
        {"src/k.cu": KERNEL, "../../up.cu": KERNEL, "/tmp/abs-ks-test.cu": KERNEL},
    )
    dest = tmp_path / "out"
    report = unpack(archive, dest)
    assert [p.name for p in report.files] == ["k.cu"]
    skipped = dict(report.skipped)
    assert "escapes" in skipped["../../up.cu"]
    assert "escapes" in skipped["/tmp/abs-ks-test.cu"]
    for name in ("src/link.cu", "src/hard.cu", "src/dev.cu", "src/fifo.cu"):
        assert "not a regular file" in skipped[name]
    assert not (dest / "src" / "link.cu").exists()
    assert not (tmp_path.parent / "up.cu").exists()


def test_zip_symlink_member_is_not_created(tmp_path: Path) -> None:
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("src/link.cuh")
        info.external_attr = 0o120777 << 16  # a symlink, as `zip --symlinks` writes it
        zf.writestr(info, "/etc/passwd")
        zf.writestr("src/k.cu", KERNEL)
    report = unpack(archive, tmp_path / "out")
    assert [p.name for p in report.files] == ["k.cu"]
    assert "not a regular file" in dict(report.skipped)["src/link.cuh"]


def test_other_files_are_ignored_not_written(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "mixed.zip", {"k.cu": KERNEL, "setup.py": b"print(1)", "README.md": b"hi"})
    dest = tmp_path / "out"
    report = unpack(archive, dest)
    assert [p.name for p in report.files] == ["k.cu"]
    assert not (dest / "setup.py").exists()


def test_too_many_files(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "many.zip", {f"k{i}.cu": KERNEL for i in range(6)})
    with pytest.raises(ArchiveError, match="more than 5 source files"):
        unpack(archive, tmp_path / "out", ArchiveLimits(max_files=5))
    assert not (tmp_path / "out").exists()  # nothing half-unpacked is left behind


def test_size_bomb_is_stopped_while_writing(tmp_path: Path) -> None:
    # 4 MB of zeros compresses to a few KB; the header's sizes are not trusted.
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.cu", b"\0" * (4 * 1024 * 1024))
    assert archive.stat().st_size < 100_000
    with pytest.raises(ArchiveError, match="larger than"):
        unpack(archive, tmp_path / "out", ArchiveLimits(max_file_bytes=1024 * 1024))
    with pytest.raises(ArchiveError, match="unpacks to more than"):
        unpack(archive, tmp_path / "out2", ArchiveLimits(max_bytes=1024 * 1024))


def test_duplicate_member_does_not_overwrite(tmp_path: Path) -> None:
    archive = tmp_path / "dup.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("k.cu", KERNEL)
        with pytest.warns(UserWarning):
            zf.writestr("k.cu", b"__global__ void other() {}\n")
    dest = tmp_path / "out"
    report = unpack(archive, dest)
    assert (dest / "k.cu").read_bytes() == KERNEL
    assert dict(report.skipped)["k.cu"] == "duplicate member"


def test_corrupt_archive_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ArchiveError, match="unreadable archive"):
        extract_source(bad, ExtractOptions(compile=False))
    bad_tar = tmp_path / "bad.tar.gz"
    bad_tar.write_bytes(b"\x1f\x8b\x08 truncated")
    with pytest.raises(ArchiveError, match="unreadable archive"):
        extract_source(bad_tar, ExtractOptions(compile=False))


def test_archive_of_the_corpus_extracts_the_same_kernels(tmp_path: Path, corpus_dir: Path) -> None:
    archive = tmp_path / "mmcv_like.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(corpus_dir, arcname="mmcv_like")
    report = extract_source(archive, ExtractOptions(compile=False))
    assert report.source == "mmcv_like"
    names = sorted((k.name, k.file) for k in report.kernels)
    direct = extract_source(corpus_dir, ExtractOptions(compile=False, jobs=1))
    # The archive's single top directory is the root, as for a checkout.
    assert names == sorted((k.name, k.file) for k in direct.kernels)
    assert report.files_ignored == 1  # README.md
