"""How many of BigCodeBench's rows do our Complete->Instruct rules reproduce exactly?

For each row: split its `complete_prompt`, parse the docstring, render the
Instruct prompt, compare with its `instruct_prompt` (and the parsed sections with
its `doc_struct`, the code prompt with its `code_prompt`). Prints the counts and
the first differing rows. Usage:

    .venv/bin/python bench/prompt_rules_bigcodebench.py [../shared/data/bigcodebench/hf_data_BigCodeBench.jsonl.gz]
"""

from __future__ import annotations

import difflib
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.export.prompts import (  # noqa: E402
    DocStruct,
    instruct_from_doc,
    parse_docstring,
    split_complete_prompt,
)

DEFAULT = (
    Path(__file__).resolve().parent.parent.parent / "shared/data/bigcodebench/hf_data_BigCodeBench.jsonl.gz"
)


def compare(path: Path, show: int = 3) -> dict[str, int]:
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    shown = 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            counts["rows"] += 1
            split = split_complete_prompt(
                row["complete_prompt"], entry_point=row["entry_point"], language="python"
            )
            doc = parse_docstring(split.docstring)
            ours = instruct_from_doc(doc, code_prompt=split.code_prompt)
            theirs_doc = DocStruct.from_mapping(json.loads(row["doc_struct"]))
            counts["code_prompt_match"] += split.code_prompt == row["code_prompt"]
            counts["doc_struct_match"] += doc == theirs_doc
            counts["instruct_from_their_doc_struct"] += (
                instruct_from_doc(theirs_doc, code_prompt=row["code_prompt"]) == row["instruct_prompt"]
            )
            if ours == row["instruct_prompt"]:
                counts["instruct_match"] += 1
                continue
            if split.code_prompt != row["code_prompt"]:
                reasons["code prompt differs"] += 1
            else:
                for key in ("description", "notes", "raises", "returns"):
                    if getattr(doc, key) != getattr(theirs_doc, key):
                        reasons[f"{key} section parsed differently"] += 1
                        break
                else:
                    reasons["other"] += 1
            if shown < show:
                shown += 1
                print(f"--- {row['task_id']}")
                sys.stdout.writelines(
                    difflib.unified_diff(
                        row["instruct_prompt"].splitlines(True), ours.splitlines(True), "theirs", "ours", n=1
                    )
                )
    for key, value in counts.items():
        print(f"{key}: {value}")
    for key, value in reasons.most_common():
        print(f"mismatch: {key}: {value}")
    return dict(counts)


if __name__ == "__main__":
    compare(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
