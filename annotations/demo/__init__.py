"""The demo samples `make run` loads: small Triton kernels with a HIP candidate, a wrapper and a test.

Each directory under `samples/` is one sample: `sample.json` (task id, kernel name,
entry point, languages, difficulty, tags) and one file per artifact. Reading them is
kept apart from writing them (annotations.services.demo) so a test can check the
files themselves, e.g. that every test passes on the cpu backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"

# File name -> (revision kind, language of the revision).
ARTIFACT_FILES: dict[str, tuple[str, str]] = {
    "instruction.md": ("instruction", "markdown"),
    "reference.py": ("reference", "triton"),
    "candidate.hip": ("candidate", "hip"),
    "wrapper.py": ("wrapper", "python"),
    "test.py": ("test", "python"),
}
REQUIRED_META = ("task_id", "kernel_name", "entry_point")


class DemoDataError(ValueError):
    """A shipped demo sample is malformed; the message names the file."""


@dataclass(frozen=True)
class DemoArtifact:
    kind: str
    language: str
    content: str


@dataclass(frozen=True)
class DemoSample:
    directory: str
    task_id: str
    kernel_name: str
    entry_point: str
    reference_language: str = "triton"
    target_language: str = "hip"
    difficulty: int | None = None
    tags: tuple[str, ...] = ()
    artifacts: tuple[DemoArtifact, ...] = field(default_factory=tuple)

    def artifact(self, kind: str) -> DemoArtifact:
        for art in self.artifacts:
            if art.kind == kind:
                return art
        raise KeyError(kind)


def read_demo_sample(directory: Path) -> DemoSample:
    meta_path = directory / "sample.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DemoDataError(f"{meta_path}: missing") from exc
    except ValueError as exc:
        raise DemoDataError(f"{meta_path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise DemoDataError(f"{meta_path}: expected a JSON object")
    for key in REQUIRED_META:
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise DemoDataError(f"{meta_path}: {key!r} must be a non-empty string")
    artifacts = []
    for file_name, (kind, language) in ARTIFACT_FILES.items():
        path = directory / file_name
        try:
            content = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise DemoDataError(f"{path}: missing") from exc
        if not content.strip():
            raise DemoDataError(f"{path}: empty")
        artifacts.append(DemoArtifact(kind=kind, language=language, content=content))
    difficulty = meta.get("difficulty")
    if difficulty is not None and not (isinstance(difficulty, int) and 1 <= difficulty <= 5):
        raise DemoDataError(f"{meta_path}: 'difficulty' must be an integer from 1 to 5")
    tags = meta.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise DemoDataError(f"{meta_path}: 'tags' must be a list of strings")
    return DemoSample(
        directory=directory.name,
        task_id=meta["task_id"].strip(),
        kernel_name=meta["kernel_name"].strip(),
        entry_point=meta["entry_point"].strip(),
        reference_language=meta.get("reference_language", "triton"),
        target_language=meta.get("target_language", "hip"),
        difficulty=difficulty,
        tags=tuple(tags),
        artifacts=tuple(artifacts),
    )


def read_demo_samples(root: Path = SAMPLES_DIR) -> list[DemoSample]:
    """Every demo sample under `root`, in directory-name order (stable across runs)."""
    if not root.is_dir():
        raise DemoDataError(f"{root}: the demo samples directory is missing")
    return [read_demo_sample(d) for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith((".", "_"))]
