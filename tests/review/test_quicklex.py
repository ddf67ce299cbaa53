"""pipeline.quicklex: the diff's fast highlighter keeps every character and colours the usual constructs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.quicklex import tokenize_lines


def classes(line: str, language: str) -> dict[str, str]:
    (pieces,) = tokenize_lines([line], language)
    return {text.strip(): cls for cls, text in pieces if text.strip()}


def test_python_constructs():
    got = classes('@triton.jit', "triton")
    assert got == {"@triton.jit": "nd"}
    got = classes("def add_kernel(x_ptr, n, BLOCK: tl.constexpr):  # the body", "triton")
    assert got["def"] == "k" and got["add_kernel"] == "nf" and got["# the body"] == "c1"
    got = classes("x = 1.5e-3 + 0x1F if ok else None", "python")
    assert got["1.5e-3"] == "m" and got["if"] == "k" and got["None"] == "kc"
    assert classes("s = f'{x}' + \"y\"", "python")["f'{x}'"] == "s2"


def test_python_docstring_across_lines():
    lines = ['def f():', '    """Adds two vectors.', '', '    Masked for n % BLOCK != 0.', '    """', '    return 1']
    out = tokenize_lines(lines, "python")
    assert out[1][-1] == ("sd", '"""Adds two vectors.')
    assert out[3] == [("sd", "    Masked for n % BLOCK != 0.")]
    assert out[4] == [("sd", '    """')]
    assert ("k", "return") in out[5]


def test_c_constructs():
    got = classes('#include <hip/hip_runtime.h>', "hip")
    assert got == {"#include <hip/hip_runtime.h>": "cp"}
    got = classes("__global__ void k(const float* __restrict__ x, int64_t n) { // loop", "cuda")
    assert got["__global__"] == "kr" and got["void"] == "kt" and got["const"] == "k"
    assert got["__restrict__"] == "kt" and got["int64_t"] == "kt" and got["// loop"] == "c1"
    got = classes('int i = blockIdx.x * blockDim.x + threadIdx.x; printf("%d", 1.0f);', "hip")
    assert got["blockIdx"] == "nb" and got['"%d"'] == "s" and got["1.0f"] == "m"
    # A '#' after code is not a preprocessor line.
    assert "cp" not in {cls for cls, _ in tokenize_lines(["x = y # z"], "cpp")[0]}


def test_c_block_comment_across_lines():
    out = tokenize_lines(["int a; /* starts", "still inside", "ends */ int b;"], "hip")
    assert out[0][-1] == ("cm", "/* starts")
    assert out[1] == [("cm", "still inside")]
    assert out[2][0] == ("cm", "ends */") and ("kt", "int") in out[2]


def test_other_languages_are_left_to_pygments():
    assert tokenize_lines(["{}"], "json") is None
    assert tokenize_lines(["# title"], "markdown") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=60), max_size=6),
       st.sampled_from(["python", "triton", "hip", "cuda", "cpp"]))
def test_no_character_is_lost_or_added(lines, language):
    out = tokenize_lines(lines, language)
    assert ["".join(text for _, text in pieces) for pieces in out] == lines
