"""TritonBench gold `.py` files: one file or a directory of them.

Each file is the reference code, then a line of exactly 146 `#` characters,
then the test (which builds inputs, calls the wrapper and assigns `result_gold`).
Task id `tritonbench-g/<file stem>`, the same task as the TritonBench-G JSON
entry of that file: the gold file adds its test (and its reference, if the code
differs from the JSON's `output`) to that sample. A file without the separator
is a per-file error; other files still import.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from pipeline.importers.common import triton_kernel_name
from pipeline.importers.reading import find_undecodable, undecodable_message
from pipeline.importers.records import ParsedRecord, RecordError, RevisionData, UnreadableInput

NAME = "tritonbench-gold"
LABEL = "TritonBench gold .py files (a file or a directory)"
SEPARATOR = "#" * 146
AUTHOR = "import:tritonbench-gold"
ACCEPTS_DIRECTORY = True
# Gold files are small; a huge .py is not one and is refused rather than read into memory.
MAX_FILE_BYTES = 16 * 1024 * 1024
_HASH_LINE = re.compile(r"^#{20,}$")


def detect(path: Path, head: bytes) -> bool:
    if path.is_dir():
        return any(path.glob("*.py"))
    return path.suffix == ".py"


def gold_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.glob("*.py") if p.is_file())
    return [path]


def input_size(path: Path) -> int:
    return sum(p.stat().st_size for p in gold_files(path))


def parse(path: Path) -> Iterator[ParsedRecord | RecordError]:
    files = gold_files(path)
    if path.is_dir() and not files:
        raise UnreadableInput(f"{path.name} holds no .py files")
    offset = 0
    for file in files:
        label = file.name
        try:
            size = file.stat().st_size
            if size > MAX_FILE_BYTES:
                offset += size
                yield RecordError(message=f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; not a gold file",
                                  file=label, byte_offset=offset)
                continue
            data = file.read_bytes()
        except OSError as exc:
            yield RecordError(message=f"cannot read: {exc.strerror or exc}", file=label, byte_offset=offset)
            continue
        offset += len(data)
        yield parse_gold(data.decode("utf-8", "surrogateescape").lstrip("\ufeff"), file_name=label, byte_offset=offset)


def parse_gold(text: str, *, file_name: str, byte_offset: int = 0) -> ParsedRecord | RecordError:
    if not text.strip():
        return RecordError(message="the file is empty", file=file_name, line=1, byte_offset=byte_offset)
    lines = text.splitlines(keepends=True)
    near_misses = []
    for number, line in enumerate(lines, start=1):
        bare = line.rstrip("\r\n")
        if bare == SEPARATOR:
            reference = "".join(lines[: number - 1])
            test = "".join(lines[number:])
            break
        if _HASH_LINE.match(bare.strip()):
            near_misses.append(f"line {number} has {len(bare.strip())}")
    else:
        hint = f" ({'; '.join(near_misses[:3])} '#' characters)" if near_misses else ""
        return RecordError(
            message=f"no separator line of exactly 146 '#' characters between the reference and the test{hint}",
            file=file_name, field="separator", byte_offset=byte_offset,
        )
    for field, content in (("reference", reference), ("test", test)):
        if find_undecodable(content):
            return RecordError(message=undecodable_message(f"the {field} part"), file=file_name, field=field,
                               byte_offset=byte_offset)
        if not content.strip():
            return RecordError(message=f"the {field} part (the side of the separator) is empty", file=file_name,
                               field=field, line=number, byte_offset=byte_offset)
    stem = Path(file_name).stem
    return ParsedRecord(
        task_id=f"tritonbench-g/{stem}",
        source="tritonbench-g",
        kernel_name=triton_kernel_name(reference),
        reference_language="triton",
        target_language="hip",
        tags=["tritonbench-g"],
        provenance={"format": NAME, "gold_file": file_name, "separator_line": number},
        revisions=[
            RevisionData(kind="reference", content=reference, author_label=AUTHOR, language="triton",
                         provenance={"field": "gold:reference", "file": file_name, "lines": [1, number - 1]}),
            RevisionData(kind="test", content=test, author_label=AUTHOR, language="python",
                         provenance={"field": "gold:test", "file": file_name, "lines": [number + 1, len(lines)]}),
        ],
        file=file_name,
        byte_offset=byte_offset,
    )
