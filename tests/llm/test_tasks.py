"""Generation tasks end to end against the fake OpenAI server."""

from __future__ import annotations

import json

import pytest

from pipeline.llm import tasks
from pipeline.llm.config import Endpoint
from pipeline.llm.errors import LLMError
from tests.llm.fake_openai import FakeOpenAI

# Seed 004's real failure: described as a copy, the code copies *and transposes*.
KERNEL = '''import triton
import triton.language as tl

@triton.jit
def kernel(X, stride_xm, Z, stride_zn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_m = tl.arange(0, BLOCK_M)
    off_n = tl.arange(0, BLOCK_N)
    Xs = X + off_m[:, None] * stride_xm + off_n[None, :] * 1
    Zs = Z + off_m[:, None] * 1 + off_n[None, :] * stride_zn
    tl.store(Zs, tl.load(Xs))
'''
ANALYSIS = {
    "core_function": "copies X into Z transposed",
    "functional_contract": "Z == X.T",
    "memory_access_pattern": {"input_tensors": "X row-major", "output_tensors": "Z column-major"},
    "key_parameters": ["BLOCK_M", "BLOCK_N"],
}
WRAPPER = "def wrapper(x):\n    z = torch.empty_like(x.T)\n    return z\n"
TEST = "def test_kernel():\n    x = torch.randn(4, 4)\n    assert torch.equal(wrapper(x), x.T)\n"


def test_two_stage_wrapper_and_test(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("Here is my analysis:\n```json\n" + json.dumps({"analysis": ANALYSIS}) + "\n```",
                   usage=(100, 50))
    fake_llm.reply(json.dumps({"kernel_wrapper": WRAPPER, "unitest_code": TEST}), usage=(200, 80))
    out = tasks.wrapper_and_test(endpoint, code=KERNEL, language="triton", context="Copies X to Z.")
    kinds = [d.kind for d in out.drafts]
    assert kinds == ["analysis", "wrapper", "test"]
    assert json.loads(out.drafts[0].content)["functional_contract"] == "Z == X.T"
    assert out.drafts[1].content == WRAPPER and out.drafts[2].content == TEST
    assert out.usage.total_tokens == 430 and out.calls == 2
    prov = out.drafts[1].provenance
    assert prov["template"] == "wrapper_test" and prov["template_version"] == 1
    assert prov["model"] == "fake-model" and prov["contract"] == "Z == X.T"
    assert out.drafts[0].provenance["usage"]["total_tokens"] == 150
    # Stage 1 saw the code; stage 2 was given the contract to assert.
    stage1 = fake_llm.requests[0].body["messages"][1]["content"]
    assert "off_n[None, :] * stride_zn" in stage1 and "Copies X to Z." in stage1
    stage2 = fake_llm.requests[1].body["messages"][1]["content"]
    assert "Z == X.T" in stage2


def test_one_repair_round_fixes_bad_json(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    bad = dict(ANALYSIS, functional_contract="Z = X.T")  # an assignment, not an expression
    fake_llm.reply(json.dumps(bad))
    fake_llm.reply(json.dumps(ANALYSIS))
    draft, analysis, usage, calls = tasks.analyse_kernel(endpoint, code=KERNEL, language="triton")
    assert calls == 2 and analysis["functional_contract"] == "Z == X.T"
    repair = fake_llm.requests[1].body["messages"]
    assert repair[-2]["role"] == "assistant"
    assert "'functional_contract' must be a single Python expression" in repair[-1]["content"]
    assert draft.provenance["llm_calls"] == 2


def test_second_bad_reply_gives_up(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("I cannot do that.")
    fake_llm.reply("```json\n{\"core_function\": \n```")
    with pytest.raises(LLMError) as info:
        tasks.analyse_kernel(endpoint, code=KERNEL, language="triton")
    assert info.value.kind == "bad_reply"
    assert "after one repair round" in str(info.value)
    assert len(fake_llm.requests) == 2


def test_test_without_assertion_is_repaired(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply(json.dumps({"wrapper": WRAPPER, "test": "def test_k():\n    wrapper(1)\n"}))
    fake_llm.reply(json.dumps({"wrapper": WRAPPER, "test": TEST}))
    drafts, _, calls = tasks.write_wrapper_and_test(endpoint, code=KERNEL, language="triton", analysis=ANALYSIS)
    assert calls == 2 and drafts[1].content == TEST
    assert "must assert the functional contract Z == X.T" in fake_llm.requests[1].body["messages"][-1]["content"]


def test_hip_candidate_takes_the_cpp_block(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("Plan:\n```python\nprint('no')\n```\nCode:\n```cpp\n#include <hip/hip_runtime.h>\n__global__ void k() {}\n```")
    out = tasks.hip_candidate(endpoint, instruction="Implement sine_kernel in HIP.", reference="def f(): ...")
    (d,) = out.drafts
    assert d.kind == "candidate" and d.content.startswith("#include <hip/hip_runtime.h>")
    assert d.provenance["template"] == "hip_candidate"


def test_code_reply_without_block_is_repaired_once(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("I would write a kernel that...")
    fake_llm.reply("```cpp\nint main() {}\n```")
    out = tasks.hip_candidate(endpoint, instruction="i", reference="r")
    assert out.calls == 2 and out.drafts[0].content == "int main() {}\n"


def test_instruction_and_pre_eval(fake_llm: FakeOpenAI, endpoint: Endpoint) -> None:
    fake_llm.reply("Implement `kernel` that writes the transpose of X into Z.\n")
    out = tasks.instruction(endpoint, code=KERNEL, language="triton", target="triton", entry_point="kernel")
    assert out.drafts[0].kind == "instruction" and "transpose" in out.drafts[0].content
    fake_llm.reply("```python\ndef kernel():\n    pass\n```", model="small-model")
    pre = tasks.pre_eval(endpoint, instruction_text=out.drafts[0].content, target="triton")
    assert pre.drafts[0].provenance["purpose"] == "pre-eval"
    assert pre.drafts[0].provenance["model"] == "small-model"
    # The pre-evaluator sees the instruction only, never the reference code.
    assert "off_n" not in json.dumps(fake_llm.requests[1].body)
