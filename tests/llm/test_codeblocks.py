from __future__ import annotations

from pipeline.llm.codeblocks import code_blocks, main_block, split_reply


def test_split_prose_and_blocks() -> None:
    text = "Fix:\n```cpp\nint x;\n```\nand the test\n~~~python\nassert 1\n~~~\n"
    segs = split_reply(text)
    assert [s.block.language if s.block else None for s in segs] == [None, "cpp", None, "python", None]
    blocks = code_blocks(text)
    assert blocks[0].code == "int x;\n" and blocks[1].code == "assert 1\n"
    assert all(b.closed for b in blocks)


def test_unterminated_block_is_marked() -> None:
    (b,) = code_blocks("```python\ndef f(:\n")
    assert not b.closed and b.code == "def f(:\n"
    assert main_block("```python\ndef f(:\n") is None


def test_main_block_prefers_language_then_length() -> None:
    text = "```python\nprint(1)\nprint(2)\n```\n```cpp\nint x;\n```"
    assert main_block(text, ("cpp",)).code == "int x;\n"  # type: ignore[union-attr]
    assert main_block(text).language == "python"  # type: ignore[union-attr]


def test_longer_fence_contains_shorter() -> None:
    (b,) = code_blocks("````markdown\n```py\nx\n```\n````\n")
    assert b.code == "```py\nx\n```\n"
