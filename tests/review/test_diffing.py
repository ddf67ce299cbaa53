"""pipeline.diffing: rows that rebuild both sides, character marks, folding, unified diffs that `patch` applies."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import diffing

KERNEL = "\n".join(f"    acc += x[{i}] * w[{i}];" for i in range(40)) + "\n"


def rebuild(diff: diffing.SideBySide) -> tuple[list[str], list[str]]:
    left = [r.left.text for r in diff.rows() if r.left is not None]
    right = [r.right.text for r in diff.rows() if r.right is not None]
    return left, right


def test_identical_texts_are_one_fold():
    diff = diffing.side_by_side(KERNEL, KERNEL)
    assert diff.identical
    assert [b.folded for b in diff.blocks] == [True]
    assert diffing.unified(KERNEL, KERNEL) == ""


def test_changed_characters_are_marked_inside_the_line():
    diff = diffing.side_by_side("y = x * 128\n", "y = x * 256\n")
    (row,) = list(diff.rows())
    assert row.tag == "replace"
    assert [row.left.text[s:e] for s, e in row.left.marks] == ["128"]
    assert [row.right.text[s:e] for s, e in row.right.marks] == ["256"]


def test_replaced_identifier_is_narrowed_to_the_differing_characters():
    diff = diffing.side_by_side("off = pid * stride_xm\n", "off = pid * stride_xn\n")
    (row,) = list(diff.rows())
    assert [row.left.text[s:e] for s, e in row.left.marks] == ["m"]
    assert [row.right.text[s:e] for s, e in row.right.marks] == ["n"]


def test_unrelated_lines_are_wholly_changed_and_long_lines_skip_intraline_work():
    diff = diffing.side_by_side("abc def\n", "#include <hip/hip_runtime.h>\n")
    (row,) = list(diff.rows())
    assert row.left.marks == ((0, 7),)
    long_left, long_right = "a" * 3000, "a" * 2999 + "b"
    assert diffing.intraline_marks(long_left, long_right) is None


def test_unchanged_stretches_fold_beyond_the_context():
    lines = KERNEL.splitlines()
    changed = lines.copy()
    changed[20] = "    acc += x[20] * w[21];  // fixed"
    diff = diffing.side_by_side(KERNEL, "\n".join(changed) + "\n", context=3)
    assert [b.folded for b in diff.blocks] == [True, False, True]
    shown = diff.blocks[1].rows
    assert [r.left.number for r in shown] == [18, 19, 20, 21, 22, 23, 24]
    assert diff.blocks[0].size == 17 and diff.blocks[2].size == 16
    # Nothing is lost by folding.
    assert rebuild(diff) == (lines, changed)


def test_short_unchanged_stretches_are_not_folded():
    a = "a\nb\nc\nd\ne\n"
    b = "A\nb\nc\nd\nE\n"
    diff = diffing.side_by_side(a, b, context=1)
    assert not any(block.folded for block in diff.blocks)


def test_blank_and_brace_lines_do_not_pull_the_alignment():
    a = "void f() {\n  x();\n}\n\nvoid g() {\n  y();\n}\n"
    b = "void f() {\n  x();\n}\n\nvoid h() {\n  z();\n}\n\nvoid g() {\n  y();\n}\n"
    diff = diffing.side_by_side(a, b, context=100)
    assert diff.removed == 0 and diff.changed == 0
    assert diff.added == 4


def test_too_long_inputs_are_cut_and_say_so():
    a = "x\n" * 30
    diff = diffing.side_by_side(a, a + "y\n", max_lines=10)
    assert diff.truncated
    assert any("only the first 10" in note for note in diff.notes)


def test_missing_final_newline_is_reported():
    diff = diffing.side_by_side("a\nb\n", "a\nb")
    assert any("no newline" in note for note in diff.notes)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (KERNEL, KERNEL.replace("x[7]", "x[8]").replace("w[30]", "w[31]")),
        ("", "new file\n"),
        ("old file\n", ""),
        ("a\nb", "a\nb\n"),
        ("a\nb\n", "a\nc"),
        ("one\ntwo\n", "zero\none\ntwo\nthree"),
        (KERNEL, "\n".join(KERNEL.splitlines()[5:35]) + "\n"),
    ],
)
def test_unified_diff_applies_with_patch(tmp_path: Path, left: str, right: str):
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed")
    target = tmp_path / "file.txt"
    target.write_text(left)
    patch_text = diffing.unified(left, right, from_name="a/file.txt", to_name="b/file.txt")
    (tmp_path / "change.diff").write_text(patch_text)
    result = subprocess.run(["patch", "-s", "-p1", "-i", "change.diff"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert target.read_text() == right


def test_unified_header_and_hunk_ranges():
    text = diffing.unified("a\nb\nc\n", "a\nB\nc\n", from_name="x#1", to_name="x#2", context=1)
    assert text == "--- x#1\n+++ x#2\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


lines = st.lists(st.sampled_from(["", "}", "x = 1", "y = x * 2", "for i in range(n):", "    acc += i", "return"]),
                 max_size=30)


@settings(max_examples=150, deadline=None)
@given(lines, lines, st.integers(min_value=0, max_value=4))
def test_rows_rebuild_both_sides_and_marks_stay_in_bounds(a: list[str], b: list[str], context: int):
    left, right = "\n".join(a) + ("\n" if a else ""), "\n".join(b) + ("\n" if b else "")
    diff = diffing.side_by_side(left, right, context=context)
    assert rebuild(diff) == (a, b)
    for row in diff.rows():
        for line in (row.left, row.right):
            if line is not None:
                assert all(0 <= s < e <= len(line.text) for s, e in line.marks)
        if row.tag == "equal":
            assert row.left.text == row.right.text
    assert diff.identical == (a == b)
