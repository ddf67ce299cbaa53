from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.llm import prompts


def test_every_template_in_the_repo_parses() -> None:
    found = prompts.available()
    for name in ("analysis", "wrapper_test", "hip_candidate", "instruction", "pre_eval",
                 "json_repair", "code_repair", "chat_system"):
        assert name in found, name
        t = prompts.load(name)
        assert t.sections and t.version == found[name][-1]


def test_render_fills_once() -> None:
    t = prompts.load("analysis")
    msgs = t.render({"language": "triton", "code": "x = {{context}}", "context": "C"})
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "x = {{context}}" in msgs[1]["content"]  # the code's braces are not expanded


def test_missing_variable() -> None:
    with pytest.raises(prompts.TemplateError, match="needs code"):
        prompts.load("analysis").render({"language": "triton", "context": ""})


def test_newest_version_and_explicit_version(tmp_path: Path) -> None:
    (tmp_path / "t.v1.md").write_text("## user\none {{a}}\n")
    (tmp_path / "t.v2.md").write_text("---\nname: t\nversion: 2\n---\n## user\ntwo {{a}}\n")
    assert prompts.load("t", root=tmp_path).version == 2
    assert prompts.load("t", 1, root=tmp_path).render({"a": "x"})[0]["content"] == "one x\n"
    with pytest.raises(prompts.TemplateError, match="no version 3"):
        prompts.load("t", 3, root=tmp_path)
    with pytest.raises(prompts.TemplateError, match="no prompt template"):
        prompts.load("nope", root=tmp_path)


def test_bad_template_files(tmp_path: Path) -> None:
    (tmp_path / "a.v1.md").write_text("---\nname: a\n")
    with pytest.raises(prompts.TemplateError, match="unterminated front matter"):
        prompts.load("a", root=tmp_path)
    (tmp_path / "b.v1.md").write_text("no sections\n")
    with pytest.raises(prompts.TemplateError, match="no '## system'"):
        prompts.load("b", root=tmp_path)


def test_provenance_has_version_and_hash() -> None:
    p = prompts.load("analysis").provenance()
    assert p["template"] == "analysis" and p["template_version"] == 1 and len(str(p["template_sha256"])) == 16
