"""Complete -> Instruct rules: golden examples and properties (pipeline only, no database)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.export.prompts import (
    INSTRUCT_CODE_LEAD,
    DocStruct,
    KernelSpec,
    PromptError,
    c_code_prompt,
    complete_prompt,
    instruct_from_doc,
    instruct_prompt,
    parse_docstring,
    python_code_prompt,
    spec_from_instruction,
    split_complete_prompt,
)
from tests.export.kernels import HIP_CANDIDATE, INSTRUCTION, TRITON_REFERENCE

GOLDEN_HIP_COMPLETE = """#include <hip/hip_runtime.h>
#include <torch/extension.h>

/**
 * Add two float32 tensors element-wise on the GPU and return the sum in a new tensor.
 *
 * Parameters:
 * x (torch.Tensor): float32, contiguous, on the GPU.
 * y (torch.Tensor): float32, same shape and device as x.
 *
 * Returns:
 * torch.Tensor: a new tensor with x + y, same shape and dtype as x.
 *
 * Constraints:
 * - No device checks such as TORCH_CHECK(x.is_cuda()).
 * - Expose the wrapper with PYBIND11_MODULE.
 *
 * Raises:
 * RuntimeError: if the kernel launch fails.
 *
 * Example:
 * >>> add_wrapper(torch.ones(4, device="cuda"), torch.ones(4, device="cuda"))
 * tensor([2., 2., 2., 2.], device='cuda:0')
 */
torch::Tensor add_wrapper(torch::Tensor x, torch::Tensor y) {
"""

GOLDEN_HIP_INSTRUCT = """Add two float32 tensors element-wise on the GPU and return the sum in a new tensor.
Note that: No device checks such as TORCH_CHECK(x.is_cuda()). Expose the wrapper with PYBIND11_MODULE.
The function should raise the exception for: RuntimeError: if the kernel launch fails.
The function should output with:
    torch.Tensor: a new tensor with x + y, same shape and dtype as x.
You should write self-contained code starting with:
```
#include <hip/hip_runtime.h>
#include <torch/extension.h>
torch::Tensor add_wrapper(torch::Tensor x, torch::Tensor y) {
```"""

GOLDEN_TRITON_CODE_PROMPT = """import torch
import triton
import triton.language as tl
def add_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
"""

# BigCodeBench/1 (Apache-2.0), copied so this golden test runs without ../shared.
BCB1_COMPLETE = '''import collections
import random
import string

def task_func(length=100):
    """
    Generate a random string of the specified length composed of uppercase and lowercase letters,<SP>
    and then count the occurrence of each character in this string.

    Parameters:
    length (int, optional): The number of characters in the generated string. Default is 100.

    Returns:
    dict: A dictionary where each key is a character from the generated string and the value<SP>
            is the count of how many times that character appears in the string.

    Requirements:
    - collections
    - random
    - string

    Raises:
    ValueError if the length is a negative number

    Example:
    >>> import random
    >>> random.seed(42)  # Ensures reproducibility for demonstration
    >>> task_func(10)
    {'h': 1, 'B': 2, 'O': 1, 'L': 1, 'm': 1, 'j': 1, 'u': 1, 'E': 1, 'V': 1}
    """
'''.replace("<SP>", " ")  # BigCodeBench's trailing spaces, kept out of the source file
BCB1_INSTRUCT = """Generate a random string of the specified length composed of uppercase and lowercase letters, and then count the occurrence of each character in this string.
The function should raise the exception for: ValueError if the length is a negative number
The function should output with:
    dict: A dictionary where each key is a character from the generated string and the value
    is the count of how many times that character appears in the string.
You should write self-contained code starting with:
```
import collections
import random
import string
def task_func(length=100):
```"""


class TestGolden:
    def test_bigcodebench_row_1(self) -> None:
        assert instruct_prompt(BCB1_COMPLETE, entry_point="task_func", language="python") == BCB1_INSTRUCT

    def test_hip_candidate_complete_and_instruct(self) -> None:
        code = c_code_prompt(HIP_CANDIDATE, entry_point="add_wrapper")
        spec = spec_from_instruction(INSTRUCTION)
        complete = complete_prompt(code_prompt=code, entry_point="add_wrapper", language="hip", spec=spec)
        assert complete == GOLDEN_HIP_COMPLETE
        assert instruct_prompt(complete, entry_point="add_wrapper", language="hip") == GOLDEN_HIP_INSTRUCT

    def test_triton_code_prompt_keeps_imports_and_signature_only(self) -> None:
        assert python_code_prompt(TRITON_REFERENCE, entry_point="add_wrapper") == GOLDEN_TRITON_CODE_PROMPT

    def test_triton_complete_prompt_is_a_docstring_under_the_def(self) -> None:
        spec = spec_from_instruction(INSTRUCTION)
        complete = complete_prompt(
            code_prompt=GOLDEN_TRITON_CODE_PROMPT, entry_point="add_wrapper", language="triton", spec=spec
        )
        assert (
            '\ndef add_wrapper(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:\n    """\n    Add two'
            in complete
        )
        split = split_complete_prompt(complete, entry_point="add_wrapper", language="triton")
        assert split.code_prompt == GOLDEN_TRITON_CODE_PROMPT
        # The Instruct body is the same whatever the language: only the code prompt differs.
        instruct = instruct_prompt(complete, entry_point="add_wrapper", language="triton")
        assert instruct.split(INSTRUCT_CODE_LEAD)[0] == GOLDEN_HIP_INSTRUCT.split(INSTRUCT_CODE_LEAD)[0]

    def test_plural_headers_stay_as_content_like_bigcodebench(self) -> None:
        doc = parse_docstring("Do it.\n\nNotes:\n- a\n\nExamples:\n>>> f()\n-1")
        assert doc.notes == ("Notes:", "a")
        assert doc.examples == ("Examples:", ">>> f()", "-1")

    def test_unheaded_paragraph_after_a_section_is_description(self) -> None:
        doc = parse_docstring("Do it.\n\nReturns:\nint: n\n\nAlso this.")
        assert doc.description == ("Do it.", "Also this.")
        assert doc.returns == ("int: n",)

    def test_doc_struct_json_has_bigcodebench_key_order(self) -> None:
        keys = list(json.loads(parse_docstring("x").to_json()))
        assert keys == ["description", "notes", "params", "returns", "reqs", "raises", "examples"]


class TestErrors:
    def test_python_prompt_without_entry_point(self) -> None:
        with pytest.raises(PromptError, match="'kernel' is not defined"):
            split_complete_prompt("def other():\n    '''x'''\n", entry_point="kernel", language="python")

    def test_python_prompt_without_docstring(self) -> None:
        with pytest.raises(PromptError, match="has no docstring"):
            split_complete_prompt("def kernel():\n    pass\n", entry_point="kernel", language="triton")

    def test_python_prompt_with_syntax_error_names_the_line(self) -> None:
        with pytest.raises(PromptError, match="line 2"):
            split_complete_prompt("import x\ndef kernel(:\n", entry_point="kernel", language="python")

    def test_c_prompt_without_doc_comment(self) -> None:
        with pytest.raises(PromptError, match="no /\\*\\* ... \\*/ doc comment"):
            split_complete_prompt("void kernel(int n) {\n", entry_point="kernel", language="hip")

    def test_unknown_language(self) -> None:
        with pytest.raises(PromptError, match="no Complete prompt rules for language 'rust'"):
            split_complete_prompt("fn x() {}", entry_point="x", language="rust")

    def test_empty_description_is_refused(self) -> None:
        with pytest.raises(PromptError, match="description is empty"):
            complete_prompt(
                code_prompt="void k(int n) {\n", entry_point="k", language="cuda", spec=KernelSpec([])
            )

    def test_comment_terminator_in_doc_is_refused(self) -> None:
        spec = KernelSpec(["Computes a */ b."])
        with pytest.raises(PromptError, match="contains \\*/"):
            complete_prompt(code_prompt="void k(int n) {\n", entry_point="k", language="cuda", spec=spec)

    def test_triple_quote_in_doc_is_refused(self) -> None:
        spec = KernelSpec(['Returns """.'])
        with pytest.raises(PromptError, match='contains """'):
            complete_prompt(code_prompt="def k(x):\n", entry_point="k", language="triton", spec=spec)

    def test_solution_without_entry_point_definition(self) -> None:
        with pytest.raises(PromptError, match="no definition"):
            c_code_prompt("#include <x.h>\nvoid other() {}\n", entry_point="add_wrapper")
        with pytest.raises(PromptError, match="not a top-level function"):
            python_code_prompt("import torch\n", entry_point="add_wrapper")

    def test_empty_code_prompt_is_refused(self) -> None:
        with pytest.raises(PromptError, match="code prompt is empty"):
            instruct_from_doc(DocStruct(description=("x",)), code_prompt="  \n")


# --- properties -------------------------------------------------------------

# Printable text without the characters that cannot sit in a doc comment, and
# without leading header words (a line that starts with "Returns:" *is* a header).
_word = (
    st.text(
        alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters=" .,()=+*<>_"),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(lambda s: s and not s.startswith(("-", "Note", "Example")))
)
_lines = st.lists(_word, min_size=0, max_size=4)
_name = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)


@st.composite
def specs(draw: st.DrawFn) -> KernelSpec:
    return KernelSpec(
        description=draw(st.lists(_word, min_size=1, max_size=4)),
        # Markers that appear nowhere else, so "dropped" can be checked by substring.
        params=[f"zzparam {line}" for line in draw(_lines)],
        returns=draw(_lines),
        constraints=draw(_lines),
        raises=draw(_lines),
        requirements=[f"zzreq {line}" for line in draw(_lines)],
        example=[f">>> {line}" for line in draw(_lines)],
    )


def _code_prompt(language: str, name: str) -> str:
    if language == "triton":
        return f"import torch\nimport triton\ndef {name}(x, y):\n"
    return f"#include <hip/hip_runtime.h>\ntorch::Tensor {name}(torch::Tensor x) {{\n"


@settings(max_examples=150, deadline=None)
@given(spec=specs(), name=_name, language=st.sampled_from(["triton", "hip", "cuda"]))
def test_instruct_rules_properties(spec: KernelSpec, name: str, language: str) -> None:
    code = _code_prompt(language, name)
    complete = complete_prompt(code_prompt=code, entry_point=name, language=language, spec=spec)
    first = instruct_prompt(complete, entry_point=name, language=language)
    # Deterministic.
    assert first == instruct_prompt(complete, entry_point=name, language=language)
    # Never empty; keeps the description, the entry point and the code prompt, verbatim, at the end.
    assert first.strip()
    assert first.startswith(" ".join(spec.description))
    assert first.endswith(f"{INSTRUCT_CODE_LEAD}\n```\n{code}```")
    assert name in first
    body = first.split(INSTRUCT_CODE_LEAD)[0]
    # Drops the parameter list, requirements and examples...
    for dropped in ("Parameters:", "Requirements:", "Example:", ">>>", "zzparam", "zzreq"):
        assert dropped not in body
    # ...and keeps notes/constraints, raised errors and outputs.
    for line in [*spec.constraints, *spec.raises, *spec.returns]:
        assert line in body
    # The sections written are the sections read back.
    doc = parse_docstring(split_complete_prompt(complete, entry_point=name, language=language).docstring)
    assert doc.params == tuple(spec.params)
    assert doc.returns == tuple(spec.returns)
    assert doc.notes == tuple(spec.constraints)
    assert doc.reqs == tuple(spec.requirements)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=400))
def test_parse_docstring_never_raises_and_loses_no_text(text: str) -> None:
    doc = parse_docstring(text)
    lines = [
        line
        for key in ("description", "notes", "params", "returns", "reqs", "raises", "examples")
        for line in getattr(doc, key)
    ]
    assert all(line and line == line.strip() for line in lines)
