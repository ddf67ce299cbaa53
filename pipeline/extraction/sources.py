"""Collect the source files to extract from paths and untrusted archives.

Archives (`.zip`, `.tar.gz`/`.tgz`) come from users, so unpacking is defensive:
no member may land outside the extraction directory (`../`, absolute paths,
drive letters), links and devices are never created or followed, the number
of files and the bytes written are bounded (checked while writing, not from
the headers an attacker controls), and members that are not CUDA/HIP/C++
sources are skipped without being written.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.extraction.model import ALL_SUFFIXES

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
DEFAULT_MAX_FILES = 5000
DEFAULT_MAX_BYTES = 200 * 1024 * 1024  # total bytes unpacked
DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024  # one source file
_CHUNK = 1 << 16


class ArchiveError(ValueError):
    """The archive is unreadable or breaks a limit; nothing from it is used."""


@dataclass
class ArchiveLimits:
    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


@dataclass
class UnpackReport:
    root: Path
    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (member, why)


def is_archive(path: str | os.PathLike[str]) -> bool:
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def is_source(name: str) -> bool:
    return name.lower().endswith(ALL_SUFFIXES)


def safe_member_path(name: str) -> str | None:
    """The member's path relative to the extraction root, or None if it would escape it."""
    if not name or "\x00" in name:
        return None
    name = name.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    norm = posixpath.normpath(name)
    if norm in (".", "") or norm.startswith("../") or norm == ".." or norm.startswith("/"):
        return None
    if any(part == ".." for part in norm.split("/")):
        return None
    return norm


def unpack(archive: Path, dest: Path, limits: ArchiveLimits | None = None) -> UnpackReport:
    """Unpack the source files of `archive` into `dest` (which must be empty or absent)."""
    limits = limits or ArchiveLimits()
    dest.mkdir(parents=True, exist_ok=True)
    report = UnpackReport(root=dest.resolve())
    name = archive.name.lower()
    try:
        if name.endswith(".zip"):
            _unpack_zip(archive, report, limits)
        elif name.endswith((".tar.gz", ".tgz")):
            _unpack_tar(archive, report, limits)
        else:
            raise ArchiveError(f"{archive.name}: not a .zip or .tar.gz archive")
    except ArchiveError:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise ArchiveError(f"{archive.name}: unreadable archive ({exc})") from exc
    return report


class _Budget:
    def __init__(self, limits: ArchiveLimits) -> None:
        self.limits = limits
        self.files = 0
        self.bytes = 0

    def open_file(self, member: str) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise ArchiveError(f"more than {self.limits.max_files} source files in the archive")

    def write(self, n: int, member: str, written: int) -> None:
        self.bytes += n
        if written > self.limits.max_file_bytes:
            raise ArchiveError(f"{member}: larger than {self.limits.max_file_bytes} bytes")
        if self.bytes > self.limits.max_bytes:
            raise ArchiveError(f"archive unpacks to more than {self.limits.max_bytes} bytes")


def _target(report: UnpackReport, member: str) -> Path | None:
    rel = safe_member_path(member)
    if rel is None:
        report.skipped.append((member, "path escapes the extraction directory"))
        return None
    target = (report.root / rel).resolve()
    # Belt and braces: resolve() would expose a symlink planted by an earlier member.
    if target != report.root and report.root not in target.parents:
        report.skipped.append((member, "path escapes the extraction directory"))
        return None
    return target


def _admit(report: UnpackReport, member: str) -> Path | None:
    """Where a regular archive member goes, or None (and why, in the report) when it is skipped."""
    if not is_source(member):
        report.skipped.append((member, "not a CUDA/HIP/C++ source"))
        return None
    target = _target(report, member)
    if target is None:
        return None
    if target.exists():
        report.skipped.append((member, "duplicate member"))
        return None
    return target


def _copy(src, target: Path, member: str, budget: _Budget) -> None:  # type: ignore[no-untyped-def]
    target.parent.mkdir(parents=True, exist_ok=True)
    budget.open_file(member)
    written = 0
    # O_EXCL + O_NOFOLLOW: never write through a link or over an earlier member.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            budget.write(len(chunk), member, written)
            out.write(chunk)


def _unpack_zip(archive: Path, report: UnpackReport, limits: ArchiveLimits) -> None:
    budget = _Budget(limits)
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            member = info.filename
            if info.is_dir():
                continue
            mode = (info.external_attr >> 16) & 0o170000
            if mode and not stat.S_ISREG(mode):
                report.skipped.append((member, "not a regular file (link or device)"))
                continue
            target = _admit(report, member)
            if target is None:
                continue
            with zf.open(info) as src:
                _copy(src, target, member, budget)
            report.files.append(target)


def _unpack_tar(archive: Path, report: UnpackReport, limits: ArchiveLimits) -> None:
    budget = _Budget(limits)
    with tarfile.open(archive, mode="r:gz") as tf:
        for info in tf:
            member = info.name
            if info.isdir():
                continue
            if not info.isreg():
                report.skipped.append((member, "not a regular file (link or device)"))
                continue
            target = _admit(report, member)
            if target is None:
                continue
            src = tf.extractfile(info)
            if src is None:
                report.skipped.append((member, "unreadable member"))
                continue
            with src:
                _copy(src, target, member, budget)
            report.files.append(target)


def collect_files(root: Path) -> tuple[list[Path], int]:
    """Source files under `root` (a file or a directory), never following links.

    Returns (files, number of ignored files).
    """
    if root.is_symlink():
        return [], 1
    if root.is_file():
        return ([root], 0) if is_source(root.name) else ([], 1)
    files: list[Path] = []
    ignored = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and not os.path.islink(os.path.join(dirpath, d))
        )
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            if p.is_symlink() or not p.is_file():
                ignored += 1
            elif is_source(fn):
                files.append(p)
            else:
                ignored += 1
    return files, ignored
