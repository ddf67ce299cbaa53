"""Cheap guards on README.md: the first two commands, and every setting it must document."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_starts_with_a_paragraph_then_make_run_and_make_test() -> None:
    text = _readme()
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    assert [b.strip() for b in blocks[:2]] == ["make run", "make test"]
    before = text[: text.index("```")]
    # One paragraph saying what Kernel Studio is comes before any command.
    assert "Kernel Studio is" in before
    assert "##" not in before.split("\n", 1)[1]


def test_each_command_has_its_one_line_explanation() -> None:
    text = _readme()
    after_run = text.split("```sh\nmake run\n```\n", 1)[1].splitlines()[0]
    after_test = text.split("```sh\nmake test\n```\n", 1)[1].splitlines()[0]
    assert "127.0.0.1:8000" in after_run
    assert "test" in after_test.lower()


def test_every_setting_read_by_settings_is_documented() -> None:
    settings_src = (ROOT / "kernelstudio" / "settings.py").read_text(encoding="utf-8")
    names = set(re.findall(r'env_(?:str|bool|int|float|list|secret|dirs)\(\s*"([A-Z_]+)"', settings_src))
    assert {"DATABASE_URL", "REDIS_URL", "KS_DATA_DIR"} <= names
    names.add("SECRET_KEY")  # read through env.secret_key()
    text = _readme()
    missing = sorted(n for n in names if f"`{n}`" not in text and f"`{n}` (*file*)" not in text)
    assert missing == [], f"README.md's Configuration does not document {missing}"


def test_readme_names_docs_that_exist() -> None:
    text = _readme()
    for name in re.findall(r"`(docs/[\w.-]+\.md)`", text):
        if name == "docs/verification.md":
            continue  # written by the verification area; checked once it lands
        assert (ROOT / name).is_file(), f"README.md points at {name}, which does not exist"
